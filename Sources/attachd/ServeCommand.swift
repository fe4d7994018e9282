import App

/// `attachd serve`: the service, always decoding in the sandbox (the body is `ServeMain`, shared
/// with the benchmark-only unsandboxed executable).
enum ServeCommand {
  static func run(_ arguments: [String]) -> Int32 {
    ServeMain.run(arguments, command: "attachd serve", decoding: .sandboxed)
  }
}
