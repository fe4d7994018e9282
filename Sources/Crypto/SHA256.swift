private import CCrypto

/// Streaming SHA-256 (OpenSSL EVP); feed bytes with `update`, then `finalize` once.
public final class SHA256 {
  /// The digest length in bytes.
  public static let byteCount = 32

  // The streaming work is MessageDigest's; this type names the hash our own records use.
  private let digest = MessageDigest(.sha256)

  /// A fresh hasher.
  public init() {}

  /// Adds bytes to the digest.
  public func update(_ bytes: UnsafeRawBufferPointer) { digest.update(bytes) }

  /// Adds the bytes of a contiguous collection (array, slice, Data) to the digest.
  public func update<Bytes: Sequence<UInt8>>(_ bytes: Bytes) { digest.update(bytes) }

  /// Ends the digest and returns its 32 bytes; the hasher cannot be used afterwards.
  public func finalize() -> [UInt8] { digest.finalize() }

  /// Ends the digest and returns it as 64 lower-case hex digits.
  public func finalizeHex() -> String { Hex.encode(finalize()) }

  /// The SHA-256 of one buffer.
  public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: byteCount)
    out.withUnsafeMutableBufferPointer { digest in
      // The one-shot SHA256() accepts a null pointer only with a zero length.
      let empty: UInt8 = 0
      withUnsafePointer(to: empty) { emptyPointer in
        let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyPointer
        _ = CCrypto.SHA256(base, bytes.count, digest.baseAddress)
      }
    }
    return out
  }

  /// The SHA-256 of a contiguous collection (array, slice, Data).
  public static func hash<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> [UInt8] {
    if let digest = bytes.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) {
      return digest
    }
    return Array(bytes).withUnsafeBytes { hash($0) }
  }

  /// The SHA-256 of a string's UTF-8 bytes.
  public static func hash(_ string: String) -> [UInt8] {
    var string = string
    return string.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
  }
}
