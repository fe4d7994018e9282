import Foundation
import Sandbox

/// `attachd sandbox check [--json]`: which isolation layers the decode sandbox has here, each
/// proved by a child that tries the forbidden thing. Exit 0 when every mandatory layer holds,
/// 1 otherwise (64 for a bad command line).
enum SandboxCommand {
  static func run(_ arguments: [String]) -> Int32 {
    guard arguments.first == "check", arguments.count <= 2 else {
      return CLI.usageError("usage: attachd sandbox check [--json]")
    }
    let json = arguments.count == 2
    if json && arguments[1] != "--json" { return CLI.usageError("unknown option \(arguments[1])") }
    let check = SandboxCheck.run(configuration: SandboxConfiguration())
    print(json ? check.json : check.text)
    return check.passed ? 0 : 1
  }
}
