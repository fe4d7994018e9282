private import CCrypto

/// HMAC-SHA-256 (RFC 2104) over one message.
public enum HMACSHA256 {
  /// The tag length in bytes.
  public static let byteCount = 32

  /// The 32-byte HMAC-SHA-256 tag of `message` under `key`.
  public static func authenticate(_ message: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: byteCount)
    var length: UInt32 = 0
    // HMAC() reads a null data pointer with length 0 as the empty message; key likewise.
    let result = out.withUnsafeMutableBufferPointer { tag in
      HMAC(
        EVP_sha256(), key.baseAddress, Int32(key.count),
        message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
        tag.baseAddress, &length)
    }
    precondition(result != nil && length == UInt32(byteCount), "HMAC(sha256) failed")
    return out
  }

  /// The HMAC-SHA-256 tag of `message` under `key`, both contiguous byte collections.
  public static func authenticate<Message: Sequence<UInt8>, Key: Sequence<UInt8>>(
    _ message: Message, key: Key
  ) -> [UInt8] {
    Array(key).withUnsafeBytes { keyBytes in
      if let tag = message.withContiguousStorageIfAvailable({
        authenticate(UnsafeRawBufferPointer($0), key: keyBytes)
      }) {
        return tag
      }
      return Array(message).withUnsafeBytes { authenticate($0, key: keyBytes) }
    }
  }

  /// The HMAC-SHA-256 tag of a string's UTF-8 bytes under `key`.
  public static func authenticate<Key: Sequence<UInt8>>(_ message: String, key: Key) -> [UInt8] {
    authenticate(Array(message.utf8), key: key)
  }
}
