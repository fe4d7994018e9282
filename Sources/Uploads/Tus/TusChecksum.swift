import Crypto

/// `Upload-Checksum: <algorithm> <base64 digest>` (tus 1.0 checksum extension), and the running
/// digest a chunk is checked with.
struct TusChecksum: Sendable, Equatable {
  var algorithm: MessageDigest.Algorithm
  var digest: [UInt8]

  /// Parses a header (or trailer) value. An algorithm name we do not know is
  /// `checksumAlgorithmUnsupported`; anything else malformed (no space, bad base64, a digest
  /// of the wrong length for its algorithm) is `invalidChecksum`.
  init(parsing text: String) throws(TusError) {
    let parts = text.trimmingASCIIWhitespace().split(separator: " ", omittingEmptySubsequences: false)
    guard parts.count == 2, !parts[0].isEmpty else { throw .invalidChecksum }
    // Names are lower-case ASCII by the specification: `SHA1` is not `sha1`.
    guard let algorithm = MessageDigest.Algorithm(rawValue: String(parts[0])),
      TusProtocol.checksumAlgorithms.contains(algorithm)
    else { throw .checksumAlgorithmUnsupported }
    guard let digest = Base64.decode(parts[1]), digest.count == algorithm.byteCount else {
      throw .invalidChecksum
    }
    self.algorithm = algorithm
    self.digest = digest
  }

  init(algorithm: MessageDigest.Algorithm, digest: [UInt8]) {
    self.algorithm = algorithm
    self.digest = digest
  }

  /// Whether `computed` (the chunk's digest in this algorithm) is the one sent. Not secret:
  /// the client knows both sides, so no constant-time comparison is needed.
  func matches(_ computed: [UInt8]) -> Bool { computed == digest }
}
