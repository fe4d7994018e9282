import Foundation

/// What a resumable upload keeps from its creation request for its completion, which may come
/// in another request: how to read the body, and the `Idempotency-Key` it was sent with.
/// Stored as the upload's opaque metadata (small JSON); never logged.
struct ResumableMetadata: Codable, Sendable, Equatable {
  /// The creation's `Content-Type` (a multipart body is cut into its file parts by it).
  var contentType: String?
  /// The creation's `Idempotency-Key`, qualified by the token user as `admit` does.
  var idempotencyKey: String?

  enum CodingKeys: String, CodingKey {
    case contentType = "type"
    case idempotencyKey = "key"
  }

  /// The bytes stored with the upload.
  var encoded: [UInt8] {
    (try? JSONEncoder().encode(self)).map { [UInt8]($0) } ?? []
  }

  /// The metadata of `bytes` (empty metadata for bytes of another protocol or none).
  init(decoding bytes: [UInt8]) {
    self = (try? JSONDecoder().decode(Self.self, from: Data(bytes))) ?? Self()
  }

  init(contentType: String? = nil, idempotencyKey: String? = nil) {
    self.contentType = contentType
    self.idempotencyKey = idempotencyKey
  }
}
