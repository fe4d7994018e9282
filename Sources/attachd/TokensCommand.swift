import App
import Foundation

/// `attachd tokens new-key …` and `attachd tokens mint …` (see `TokenCommandLine.usage`).
///
/// Standard output gets only what a script reads (the key and its entry, or the token); the
/// explanation goes to standard error. Nothing here is logged.
enum TokensCommand {
  static func run(_ arguments: [String]) -> Int32 {
    if arguments.contains(where: { $0 == "--help" || $0 == "-h" }) {
      print(TokenCommandLine.usage)
      return 0
    }
    let command: TokenCommandLine
    do {
      command = try TokenCommandLine.parse(arguments)
    } catch {
      CLI.printError("attachd tokens: \(error.message)\n\(TokenCommandLine.usage)")
      return CLI.exitUsage
    }
    switch command {
    case .newKey(let tenant, let algorithm, let issuer, let keyID):
      let (secret, entry) = TokenMinter.newKey(
        tenant: tenant, issuer: issuer, keyID: keyID, algorithm: algorithm)
      switch algorithm {
      case .edDSA:
        CLI.printError(
          """
          New EdDSA issuer key for tenant \(tenant) (iss \(entry.issuer)). The private key below is for \
          the tenant's backend only; attachd needs just the JSON entry after it, in "auth": {"tokenKeys": [...]}.

          """)
        print(secret, terminator: "")
      case .hs256:
        CLI.printError(
          """
          New HS256 secret for tenant \(tenant) (iss \(entry.issuer)). Give it to the backend and set it in \
          attachd's environment as \(TokenMinter.secretVariable(tenant: tenant)); the JSON entry names that \
          variable. Anyone who reads the secret can mint tokens for every user: prefer --alg EdDSA.

          """)
        print(secret)
      }
      print(entry.jsonLine)
      return 0
    case .mint(let request):
      guard let bytes = FileManager.default.contents(atPath: request.keyFile),
        let signer = TokenMinter.signer(keyFile: [UInt8](bytes))
      else {
        CLI.printError(
          "attachd tokens: --key \(request.keyFile) is not a PEM Ed25519 private key or a secret of at least 32 bytes"
        )
        return CLI.exitUsage
      }
      let claims = TokenMinter.Claims(
        issuer: request.issuer, subject: request.subject, scopes: request.scopes,
        issuedAt: Int(Date().timeIntervalSince1970), lifetime: request.lifetime, jti: request.jti,
        maxFiles: request.maxFiles, maxBytes: request.maxBytes)
      print(TokenMinter.mint(claims, signer: signer, keyID: request.keyID))
      return 0
    }
  }
}
