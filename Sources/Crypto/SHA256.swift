private import CCrypto

/// Streaming SHA-256 (OpenSSL EVP); feed bytes with `update`, then `finalize` once.
public final class SHA256 {
  /// The digest length in bytes.
  public static let byteCount = 32

  // One EVP_MD_CTX per hasher, owned here and freed in deinit.
  private let context: OpaquePointer
  private var finished = false

  /// A fresh hasher.
  public init() {
    guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
    // EVP_DigestInit_ex only fails on allocation failure or a missing provider: not recoverable.
    guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
      EVP_MD_CTX_free(context)
      fatalError("EVP_DigestInit_ex(sha256) failed")
    }
    self.context = context
  }

  deinit { EVP_MD_CTX_free(context) }

  /// Adds bytes to the digest.
  public func update(_ bytes: UnsafeRawBufferPointer) {
    precondition(!finished, "SHA256.update after finalize")
    guard let base = bytes.baseAddress, bytes.count > 0 else { return }
    _ = EVP_DigestUpdate(context, base, bytes.count)
  }

  /// Adds the bytes of a contiguous collection (array, slice, Data) to the digest.
  public func update<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
    let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
    if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
  }

  /// Ends the digest and returns its 32 bytes; the hasher cannot be used afterwards.
  public func finalize() -> [UInt8] {
    precondition(!finished, "SHA256.finalize called twice")
    finished = true
    var out = [UInt8](repeating: 0, count: Self.byteCount)
    var length: UInt32 = 0
    _ = out.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
    return out
  }

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
