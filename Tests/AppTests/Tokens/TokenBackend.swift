import Foundation
import TestSupport
import Testing

@testable import App

/// A tenant's backend written as the README says: Python with PyJWT and `cryptography`. It
/// makes its own Ed25519 key pair and HS256 secret, and mints tokens with `jwt.encode`.
final class TokenBackend {
  let directory: String
  /// The Ed25519 public key as `cryptography` writes it (SubjectPublicKeyInfo PEM).
  let publicKeyPEM: String
  /// A second tenant's Ed25519 public key (its own key pair).
  let otherPublicKeyPEM: String
  /// The HS256 secret text.
  let secret: String

  /// What one token should be: algorithm, which key, claims (`iat`, `exp`, `nbf` are seconds
  /// from now) and extra header members.
  struct Spec: Encodable {
    var alg = "EdDSA"
    /// `ed` (acme's key), `other` (beta's key) or `hs` (the HS256 secret).
    var key = "ed"
    var claims: [String: Claim]
    var headers: [String: String] = [:]
  }

  enum Claim: Encodable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case string(String)
    case int(Int)
    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int) { self = .int(value) }
    func encode(to encoder: any Encoder) throws {
      var container = encoder.singleValueContainer()
      switch self {
      case .string(let value): try container.encode(value)
      case .int(let value): try container.encode(value)
      }
    }
  }

  static let keygen = """
    import sys, secrets
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives import serialization as s
    d = sys.argv[1]
    for name in ('ed', 'other'):
        k = Ed25519PrivateKey.generate()
        open(d + '/' + name + '.pem', 'wb').write(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()))
        open(d + '/' + name + '.pub', 'wb').write(k.public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo))
    open(d + '/hs.secret', 'w').write(secrets.token_urlsafe(32))
    """

  static let mint = """
    import sys, json, time, jwt
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    d = sys.argv[1]
    keys = {n: load_pem_private_key(open(d + '/' + n + '.pem', 'rb').read(), None) for n in ('ed', 'other')}
    keys['hs'] = open(d + '/hs.secret').read()
    now = int(time.time())
    out = []
    for spec in json.load(sys.stdin):
        claims = dict(spec['claims'])
        for name in ('iat', 'exp', 'nbf'):
            if name in claims: claims[name] = now + claims[name]
        key = None if spec['alg'] == 'none' else keys[spec['key']]
        out.append(jwt.encode(claims, key, algorithm=spec['alg'], headers=spec['headers'] or None))
    print(json.dumps(out))
    """

  init() throws {
    directory = try LiveTesting.temporaryDirectory()
    let (status, _) = try LiveTesting.run(
      "/usr/bin/env", ["python3", "-c", Self.keygen, directory], timeout: 30)
    #expect(
      status == 0, "key generation failed: are PyJWT and cryptography installed (Scripts/install-deps)?")
    publicKeyPEM = try String(contentsOfFile: directory + "/ed.pub", encoding: .utf8)
    otherPublicKeyPEM = try String(contentsOfFile: directory + "/other.pub", encoding: .utf8)
    secret = try String(contentsOfFile: directory + "/hs.secret", encoding: .utf8)
  }

  /// Token keys for the server: acme verifies `ed` (EdDSA, kid acme-1), beta verifies `other`
  /// (EdDSA, kid beta-1), gamma verifies the HS256 secret.
  var tokenKeys: [TokenKey] {
    [
      TokenKey(
        tenant: "acme", issuer: "acme-backend", keyID: "acme-1", algorithm: .edDSA, publicKeyPEM: publicKeyPEM
      ),
      TokenKey(
        tenant: "beta", issuer: "beta-backend", keyID: "beta-1", algorithm: .edDSA,
        publicKeyPEM: otherPublicKeyPEM),
      TokenKey(
        tenant: "gamma", issuer: "gamma-backend", algorithm: .hs256, secretSource: .environment("GAMMA"),
        secret: Array(secret.utf8)),
    ]
  }

  /// Mints every spec in one Python run.
  func mint(_ specs: [Spec]) throws -> [String] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", Self.mint, directory]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    input.fileHandleForWriting.write(try JSONEncoder().encode(specs))
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    return try JSONDecoder().decode([String].self, from: data)
  }

  /// An acme EdDSA token for `user` with `scope`, 10 minutes, plus `extra` claims.
  static func acme(_ user: String, scope: String = "upload read delete", extra: [String: Claim] = [:]) -> Spec
  {
    var claims: [String: Claim] = [
      "iss": "acme-backend", "sub": .string(user), "scope": .string(scope), "iat": 0, "exp": 600,
    ]
    claims.merge(extra) { $1 }
    return Spec(claims: claims, headers: ["kid": "acme-1"])
  }

  /// A small PNG of `side`² pixels, written once per call.
  static func smallPNG(in directory: String, side: Int = 32, seed: UInt8 = 1) throws -> String {
    let pixels = (0..<(side * side * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }
    let path = directory + "/small-\(side)-\(seed).png"
    try Data(PNGWriter.png(width: side, height: side, colourType: 2, pixels: pixels)).write(
      to: URL(fileURLWithPath: path))
    return path
  }
}
