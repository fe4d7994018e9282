private import CCrypto

/// An Ed25519 public key (RFC 8032) that verifies signatures; the key a token issuer shares.
///
/// Owns one `EVP_PKEY`, freed in `deinit`. OpenSSL allows one key to be used by many threads
/// at once for verification (each call makes its own `EVP_MD_CTX`), hence `@unchecked Sendable`.
public final class Ed25519PublicKey: @unchecked Sendable {
  /// Length of a raw public key and of the `x` of a JWK: 32 bytes.
  public static let byteCount = 32
  /// Length of a signature: 64 bytes.
  public static let signatureByteCount = 64

  private let key: OpaquePointer

  private init(key: OpaquePointer) { self.key = key }

  deinit { EVP_PKEY_free(key) }

  /// The key in a PEM `PUBLIC KEY` block (SubjectPublicKeyInfo); nil for anything else,
  /// including a valid PEM key of another type (RSA, P-256, X25519).
  public convenience init?(pem: String) {
    guard let key = readPEM(pem, private: false) else { return nil }
    self.init(key: key)
  }

  /// The key from its 32 raw bytes (the `x` of an OKP JWK); nil for another length.
  public convenience init?(raw: [UInt8]) {
    guard raw.count == Self.byteCount,
      let key = raw.withUnsafeBufferPointer({
        EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count)
      })
    else {
      ERR_clear_error()
      return nil
    }
    self.init(key: key)
  }

  /// The 32 raw bytes of the key.
  public var raw: [UInt8] { rawBytes(key, private: false) }

  /// The key as a PEM `PUBLIC KEY` block (one base64 line; ends with a newline).
  public var pem: String { PEMBlock.encode(PEMBlock.publicKeyPrefix + raw, label: "PUBLIC KEY") }

  /// Whether `signature` is this key's Ed25519 signature of `message`.
  ///
  /// OpenSSL checks the encoding strictly (S < L, a canonical point), so a signature cannot be
  /// changed into another valid one for the same message.
  public func verify(signature: [UInt8], message: UnsafeRawBufferPointer) -> Bool {
    guard signature.count == Self.signatureByteCount, let context = EVP_MD_CTX_new() else { return false }
    defer { EVP_MD_CTX_free(context) }
    // Ed25519 hashes internally: no digest is named, and the message is passed in one call.
    guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else {
      ERR_clear_error()
      return false
    }
    let empty: UInt8 = 0
    let result = withUnsafePointer(to: empty) { emptyPointer in
      signature.withUnsafeBufferPointer { sig in
        EVP_DigestVerify(
          context, sig.baseAddress, sig.count,
          message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyPointer, message.count)
      }
    }
    if result != 1 { ERR_clear_error() }
    return result == 1
  }

  /// `verify` over the bytes of a contiguous collection.
  public func verify<Message: Sequence<UInt8>>(signature: [UInt8], message: Message) -> Bool {
    if let result = message.withContiguousStorageIfAvailable({
      verify(signature: signature, message: UnsafeRawBufferPointer($0))
    }) {
      return result
    }
    return Array(message).withUnsafeBytes { verify(signature: signature, message: $0) }
  }
}

/// An Ed25519 private key: signs tokens in `attachd tokens mint` and in tests. attachd itself
/// never needs one to serve.
public final class Ed25519PrivateKey: @unchecked Sendable {
  /// Length of a raw private key (the seed, the `d` of a JWK): 32 bytes.
  public static let byteCount = 32

  private let key: OpaquePointer

  private init(key: OpaquePointer) { self.key = key }

  deinit { EVP_PKEY_free(key) }

  /// A new key from the system CSPRNG.
  public convenience init() {
    self.init(raw: SecureRandom.bytes(Self.byteCount))!
  }

  /// The key from its 32-byte seed; nil for another length.
  public convenience init?(raw: [UInt8]) {
    guard raw.count == Self.byteCount,
      let key = raw.withUnsafeBufferPointer({
        EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count)
      })
    else {
      ERR_clear_error()
      return nil
    }
    self.init(key: key)
  }

  /// The key in a PEM `PRIVATE KEY` block (PKCS #8); nil for anything else.
  public convenience init?(pem: String) {
    guard let key = readPEM(pem, private: true) else { return nil }
    self.init(key: key)
  }

  /// The key as a PEM `PRIVATE KEY` block (PKCS #8, unencrypted; ends with a newline).
  public var pem: String {
    PEMBlock.encode(PEMBlock.privateKeyPrefix + rawBytes(key, private: true), label: "PRIVATE KEY")
  }

  /// The matching public key.
  public var publicKey: Ed25519PublicKey { Ed25519PublicKey(raw: rawBytes(key, private: false))! }

  /// The 64-byte Ed25519 signature of `message` (deterministic: same key and message, same bytes).
  public func sign<Message: Sequence<UInt8>>(_ message: Message) -> [UInt8] {
    let bytes = Array(message)
    guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
    defer { EVP_MD_CTX_free(context) }
    guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else {
      fatalError("EVP_DigestSignInit failed")
    }
    var signature = [UInt8](repeating: 0, count: Ed25519PublicKey.signatureByteCount)
    var length = signature.count
    let empty: UInt8 = 0
    let result = withUnsafePointer(to: empty) { emptyPointer in
      bytes.withUnsafeBufferPointer { input in
        signature.withUnsafeMutableBufferPointer {
          EVP_DigestSign(context, $0.baseAddress, &length, input.baseAddress ?? emptyPointer, input.count)
        }
      }
    }
    precondition(result == 1 && length == signature.count, "EVP_DigestSign(Ed25519) failed")
    return signature
  }
}

/// Reads one PEM key block with OpenSSL; nil unless it is an Ed25519 key of the asked kind.
private func readPEM(_ pem: String, private wantsPrivate: Bool) -> OpaquePointer? {
  let bytes = Array(pem.utf8)
  // A PEM key is a few hundred bytes; a bound keeps a wrong file from being parsed at length.
  guard !bytes.isEmpty, bytes.count <= 16_384 else { return nil }
  let key: OpaquePointer? = bytes.withUnsafeBytes { buffer in
    guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
    defer { BIO_free(bio) }
    // No password callback: an encrypted private key is refused, never prompted for.
    return wantsPrivate
      ? PEM_read_bio_PrivateKey(bio, nil, nil, nil) : PEM_read_bio_PUBKEY(bio, nil, nil, nil)
  }
  guard let key else {
    ERR_clear_error()
    return nil
  }
  guard EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 else {
    EVP_PKEY_free(key)
    return nil
  }
  return key
}

private func rawBytes(_ key: OpaquePointer, private wantsPrivate: Bool) -> [UInt8] {
  var out = [UInt8](repeating: 0, count: 32)
  var length = out.count
  let result = out.withUnsafeMutableBufferPointer {
    wantsPrivate
      ? EVP_PKEY_get_raw_private_key(key, $0.baseAddress, &length)
      : EVP_PKEY_get_raw_public_key(key, $0.baseAddress, &length)
  }
  precondition(result == 1 && length == 32, "EVP_PKEY_get_raw_*_key(Ed25519) failed")
  return out
}

/// PEM text for the two fixed-size Ed25519 DER structures (RFC 8410).
enum PEMBlock {
  /// SubjectPublicKeyInfo up to the 32 key bytes: SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING }.
  static let publicKeyPrefix: [UInt8] = [
    0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00,
  ]
  /// PKCS #8 OneAsymmetricKey up to the 32 seed bytes: version 0, the OID, OCTET STRING { OCTET STRING }.
  static let privateKeyPrefix: [UInt8] = [
    0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
  ]

  /// `-----BEGIN label-----`, standard base64 in lines of 64, `-----END label-----`.
  static func encode(_ der: [UInt8], label: String) -> String {
    var base64 = [UInt8](repeating: 0, count: (der.count + 2) / 3 * 4 + 1)
    let written = der.withUnsafeBufferPointer { input in
      base64.withUnsafeMutableBufferPointer {
        EVP_EncodeBlock($0.baseAddress, input.baseAddress, Int32(input.count))
      }
    }
    let text = String(decoding: base64.prefix(Int(written)), as: UTF8.self)
    var lines: [Substring] = []
    var rest = Substring(text)
    while !rest.isEmpty {
      lines.append(rest.prefix(64))
      rest = rest.dropFirst(64)
    }
    return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
  }
}
