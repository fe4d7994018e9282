private import Crypto

/// A blob's content address: the SHA-256 of its bytes as 64 lower-case hex digits.
///
/// Only well-formed values can exist, so a hash is always safe to use in a file path.
public struct BlobHash: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The 64 lower-case hex digits.
  public let hex: String

  /// A hash from its hex form; nil unless exactly 64 lower-case hex digits.
  public init?(hex: String) {
    let utf8 = hex.utf8
    guard utf8.count == 64,
      utf8.allSatisfy({
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
          || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
      })
    else { return nil }
    self.hex = hex
  }

  /// A hash from the 32 raw digest bytes.
  public init?(digest: [UInt8]) {
    guard digest.count == 32 else { return nil }
    self.hex = Hex.encode(digest)
  }

  /// The SHA-256 of `bytes`.
  public static func of(_ bytes: UnsafeRawBufferPointer) -> BlobHash {
    BlobHash(digest: SHA256.hash(bytes))!
  }

  /// The SHA-256 of a contiguous byte collection.
  public static func of<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> BlobHash {
    BlobHash(digest: SHA256.hash(bytes))!
  }

  public var description: String { hex }

  public static func < (lhs: BlobHash, rhs: BlobHash) -> Bool { lhs.hex < rhs.hex }
}
