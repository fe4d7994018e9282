import App
import Foundation

/// `attachd keys new --tenant T --scopes upload,read`: prints a new key once, then its config entry.
///
/// Standard output gets exactly two lines (the key, then the JSON entry) so scripts can read
/// them; the explanation goes to standard error.
enum KeysCommand {
  static func run(_ arguments: [String]) -> Int32 {
    if arguments.contains(where: { $0 == "--help" || $0 == "-h" }) {
      print(KeyGenerator.usage)
      return 0
    }
    let request: KeyGenerator.Request
    do {
      request = try KeyGenerator.parseArguments(arguments)
    } catch {
      FileHandle.standardError.write(Data("attachd keys: \(error.message)\n\(KeyGenerator.usage)\n".utf8))
      return 64
    }
    let (key, entry) = KeyGenerator.generate(tenant: request.tenant, scopes: request.scopes)
    FileHandle.standardError.write(
      Data(
        """
        New key for tenant \(request.tenant) (id \(entry.keyID)). It is shown only this once: \
        store it now. Add the JSON line to "auth": {"keys": [...]} in Config/attachd.json.

        """.utf8))
    print(key)
    print(entry.jsonLine)
    return 0
  }
}
