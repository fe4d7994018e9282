private import CCrypto

/// A streaming digest (OpenSSL EVP) of a named algorithm, for checks where the client picks it
/// (tus `Upload-Checksum`): SHA-1, SHA-256 or MD5. `SHA256` stays the type for our own hashes.
///
/// SHA-1 and MD5 are here to check that bytes arrived unchanged, not against an attacker.
public final class MessageDigest {
  /// The algorithms a client may name.
  public enum Algorithm: String, Sendable, CaseIterable {
    case sha1
    case sha256
    case md5

    /// The digest length in bytes.
    public var byteCount: Int {
      switch self {
      case .sha1: 20
      case .sha256: 32
      case .md5: 16
      }
    }

    fileprivate var evp: OpaquePointer? {
      switch self {
      case .sha1: EVP_sha1()
      case .sha256: EVP_sha256()
      case .md5: EVP_md5()
      }
    }
  }

  /// The algorithm this digest computes.
  public let algorithm: Algorithm
  // One EVP_MD_CTX per digest, owned here and freed in deinit.
  private let context: OpaquePointer
  private var finished = false

  /// A fresh digest of `algorithm`.
  public init(_ algorithm: Algorithm) {
    guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
    // EVP_DigestInit_ex fails only on allocation failure or a missing provider: not recoverable.
    guard EVP_DigestInit_ex(context, algorithm.evp, nil) == 1 else {
      EVP_MD_CTX_free(context)
      fatalError("EVP_DigestInit_ex(\(algorithm.rawValue)) failed")
    }
    self.algorithm = algorithm
    self.context = context
  }

  deinit { EVP_MD_CTX_free(context) }

  /// Adds bytes to the digest.
  public func update(_ bytes: UnsafeRawBufferPointer) {
    precondition(!finished, "MessageDigest.update after finalize")
    guard let base = bytes.baseAddress, bytes.count > 0 else { return }
    _ = EVP_DigestUpdate(context, base, bytes.count)
  }

  /// Adds the bytes of a contiguous collection (array, slice, Data) to the digest.
  public func update<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
    let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
    if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
  }

  /// Ends the digest and returns its bytes; the digest cannot be used afterwards.
  public func finalize() -> [UInt8] {
    precondition(!finished, "MessageDigest.finalize called twice")
    finished = true
    var out = [UInt8](repeating: 0, count: algorithm.byteCount)
    var length: UInt32 = 0
    _ = out.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
    return out
  }

  /// The digest of one buffer.
  public static func hash<Bytes: Sequence<UInt8>>(_ bytes: Bytes, _ algorithm: Algorithm) -> [UInt8] {
    let digest = MessageDigest(algorithm)
    digest.update(bytes)
    return digest.finalize()
  }
}
