import Foundation

/// An attachment's image made for one model profile (see `ImagePipeline.ModelProfile`), kept
/// beside the attachment's own blob and counted as one more reference to its blob.
public struct Rendition: Sendable, Hashable {
  /// The attachment it was made from.
  public var attachment: String
  /// The profile's name (`anthropic`, `openai`, …).
  public var profile: String
  /// The stored bytes' content address.
  public var blob: BlobHash
  /// Width in pixels.
  public var width: Int
  /// Height in pixels.
  public var height: Int
  /// Stored size in bytes.
  public var bytes: Int
  /// When it was made (whole seconds).
  public var createdAt: Date

  /// A rendition with every field given.
  public init(
    attachment: String, profile: String, blob: BlobHash, width: Int, height: Int, bytes: Int, createdAt: Date
  ) {
    self.attachment = attachment
    self.profile = profile
    self.blob = blob
    self.width = width
    self.height = height
    self.bytes = bytes
    self.createdAt = createdAt
  }
}
