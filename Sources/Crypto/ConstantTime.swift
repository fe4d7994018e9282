private import CCrypto

/// Compares two byte sequences in time that depends only on their lengths (CRYPTO_memcmp).
///
/// Unequal lengths return false at once: the length is the only thing that leaks, which is
/// why callers compare fixed-length digests (e.g. SHA-256 of an API key), not the secrets.
public func constantTimeEquals<A: Sequence<UInt8>, B: Sequence<UInt8>>(_ a: A, _ b: B) -> Bool {
  let left = Array(a)
  let right = Array(b)
  guard left.count == right.count else { return false }
  if left.isEmpty { return true }
  return left.withUnsafeBytes { l in
    right.withUnsafeBytes { r in CRYPTO_memcmp(l.baseAddress, r.baseAddress, l.count) == 0 }
  }
}

/// Compares two strings' UTF-8 bytes in time that depends only on their lengths.
public func constantTimeEquals(_ a: String, _ b: String) -> Bool {
  constantTimeEquals(a.utf8, b.utf8)
}
