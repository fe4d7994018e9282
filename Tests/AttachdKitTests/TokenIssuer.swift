import Foundation
import TestSupport

/// An app backend's token issuer against a live attachd: a random HS256 secret in a file, the
/// server's environment that trusts it (with no leeway, so an expiry is exact), and
/// `attachd tokens mint` to make tokens for user `user-1`.
struct TokenIssuer: Sendable {
  let secret: String

  init() throws {
    secret = try ScratchSpace.directory("attachdkit-secret") + "/secret"
    let characters = (0..<48).map { _ in "0123456789abcdef".randomElement()!.asciiValue! }
    try Data(characters).write(to: URL(fileURLWithPath: secret))
  }

  var environment: [String: String] {
    [
      "ATTACHD_TOKEN_KEYS": #"[{"tenant":"acme","iss":"acme","alg":"HS256","secret_file":"\#(secret)"}]"#,
      "ATTACHD_TOKEN_LEEWAY": "0",
    ]
  }

  /// A token for `user-1` with the upload and read scopes, living `ttl` seconds.
  func mint(ttl: Int) throws -> String {
    guard let binary = LiveAttachd.binary else { throw StartFailure(description: "attachd is not built") }
    return try ChildProcess.run(
      binary,
      [
        "tokens", "mint", "--key", secret, "--iss", "acme", "--sub", "user-1", "--scope", "upload read",
        "--ttl", String(ttl),
      ]
    ).output.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// The token's `exp` claim (seconds since 1970), read from its payload.
  static func expiry(of token: String) -> Double? {
    let parts = token.split(separator: ".")
    guard parts.count == 3 else { return nil }
    var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
    guard let payload = Data(base64Encoded: base64),
      let claims = try? JSONSerialization.jsonObject(with: payload) as? [String: Any]
    else { return nil }
    return (claims["exp"] as? NSNumber)?.doubleValue
  }
}
