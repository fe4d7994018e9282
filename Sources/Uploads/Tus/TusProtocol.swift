import Crypto
import HTTP

/// tus 1.0 on the wire: what this server speaks, and strict readers of the request headers.
///
/// Every reader refuses rather than guesses: a header sent twice, a sign, a space inside a
/// number or a value past `Int` is a 400, never a silently different upload.
public enum TusProtocol {
  /// The one version spoken (`Tus-Resumable`, `Tus-Version`).
  public static let version = "1.0.0"
  /// `Tus-Extension`. Concatenation is left out on purpose: it exists for parallel uploads of
  /// large files, and one image (at most `uploads.maxBytes`) gains nothing from it.
  static let extensions = [
    "creation", "creation-with-upload", "creation-defer-length", "termination", "expiration", "checksum",
    "checksum-trailer",
  ]
  /// `Tus-Checksum-Algorithm`, in the order advertised.
  static let checksumAlgorithms: [MessageDigest.Algorithm] = [.sha1, .sha256, .md5]
  /// The only body type a PATCH (or a creation with upload) may carry.
  static let contentType = "application/offset+octet-stream"
  /// `UploadState.protocolName` of uploads made here; other protocols' uploads are not found.
  static let protocolName = "tus"
  /// Where tus lives in the URL space: creation here, uploads at `path/{id}`.
  public static let path = "/v1/tus"

  /// The headers every tus response carries, also errors (`Tus-Resumable`).
  public static let responseHeaders: HTTPHeaders = ["Tus-Resumable": version]

  /// The method a tus request means: `X-HTTP-Method-Override` when present (the actual method
  /// is then ignored, as the specification says), else the request's own. A value that is not
  /// a method token becomes one no route has (405).
  public static func method(of head: HTTPRequestHead) -> String {
    let overrides = head.headers["X-HTTP-Method-Override"]
    guard let value = overrides.first else { return head.method }
    guard overrides.count == 1, !value.isEmpty, value.utf8.count <= 16,
      value.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") })
    else { return "INVALID" }
    return value
  }

  /// Whether the request speaks tus 1.0 (OPTIONS need not, and its header is ignored).
  public static func checkVersion(_ head: HTTPRequestHead, method: String) -> TusError? {
    guard method != "OPTIONS" else { return nil }
    let values = head.headers["Tus-Resumable"]
    return values.count == 1 && values[0] == version ? nil : .versionUnsupported
  }

  /// The one value of header `name`, nil when absent; `error` when sent more than once.
  static func single(_ head: HTTPRequestHead, _ name: String, or error: TusError) throws(TusError) -> String?
  {
    let values = head.headers[name]
    guard values.count <= 1 else { throw error }
    return values.first
  }

  /// A non-negative decimal integer: 1…18 ASCII digits (no sign, no spaces, fits `Int`).
  static func nonNegativeInteger<Text: StringProtocol>(_ text: Text) -> Int? {
    let utf8 = text.utf8
    guard (1...18).contains(utf8.count) else { return nil }
    var value = 0
    for byte in utf8 {
      guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
      value = value * 10 + Int(byte - UInt8(ascii: "0"))
    }
    return value
  }

  /// `Upload-Length`, when sent.
  static func uploadLength(_ head: HTTPRequestHead) throws(TusError) -> Int? {
    guard let text = try single(head, "Upload-Length", or: .invalidUploadLength) else { return nil }
    guard let value = nonNegativeInteger(text) else { throw .invalidUploadLength }
    return value
  }

  /// `Upload-Offset`, which a PATCH must carry.
  static func uploadOffset(_ head: HTTPRequestHead) throws(TusError) -> Int {
    guard let text = try single(head, "Upload-Offset", or: .invalidUploadOffset),
      let value = nonNegativeInteger(text)
    else { throw .invalidUploadOffset }
    return value
  }

  /// Whether `Upload-Defer-Length: 1` was sent (any other value is refused).
  static func defersLength(_ head: HTTPRequestHead) throws(TusError) -> Bool {
    guard let text = try single(head, "Upload-Defer-Length", or: .invalidDeferLength) else { return false }
    guard text == "1" else { throw .invalidDeferLength }
    return true
  }

  /// Whether the request announces a body (`Content-Length` above 0, or chunked).
  static func hasBody(_ head: HTTPRequestHead) -> Bool {
    switch head.framing {
    case .none, .contentLength(0): false
    case .contentLength, .chunked: true
    }
  }

  /// Whether `Content-Type` is `application/offset+octet-stream` (case-insensitive, parameters
  /// allowed).
  static func isOffsetStream(_ head: HTTPRequestHead) -> Bool {
    let values = head.headers["Content-Type"]
    guard values.count == 1 else { return false }
    let mediaType = values[0].split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
    return mediaType.trimmingASCIIWhitespace().lowercased() == contentType
  }

  /// Whether the client announced `Upload-Checksum` as a trailer (`Trailer: Upload-Checksum`,
  /// chunked): then the chunk is held until the trailer arrives.
  static func announcesChecksumTrailer(_ head: HTTPRequestHead) -> Bool {
    guard case .chunked = head.framing else { return false }
    return head.headers["Trailer"].contains { field in
      field.split(separator: ",").contains { $0.trimmingASCIIWhitespace().lowercased() == "upload-checksum" }
    }
  }
}
