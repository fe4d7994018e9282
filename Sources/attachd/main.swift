// attachd: serve, process, inspect, keys, tokens. The subcommands live in their own files; the
// service itself is wired up in the App module.
import App
import Foundation
import PipelineCLI
import PipelineSandbox
import Sandbox
import Server

/// What every subcommand shares: usage text, exit statuses, printing to standard error.
enum CLI {
  static let usage = """
    usage: attachd <command> [options]

    commands:
      serve [--host ADDR] [--port N] [--data-dir DIR] [--config FILE]
                                 run the HTTP service (attachd serve --help lists every setting)
      process IN OUT [--max-edge N] [--quality Q] [--no-sandbox]
                                 turn one image into a clean JPEG
      stills IN DIR [--max-edge N] [--frames MIN-MAX] [--no-sandbox]
                                 a video's poster and frames as clean JPEGs
      rendition IN OUT.mp4 [--max-edge N] [--no-sandbox]
                                 a video as a clean H.264 + AAC MP4
      inspect IN                 describe an image as JSON
      keys new --tenant T --scopes upload,read[,delete]
                                 print a new API key and its config entry
      tokens new-key --tenant T [--alg EdDSA|HS256]
                                 print a new upload-token issuer key and its config entry
      tokens mint --key FILE --iss ISS --sub USER [--scope "upload read"] [--ttl S]
                                 print one upload token (for tests and scripts)
      sandbox check [--json]     prove which isolation layers the decode sandbox has here
      --help, --version
    """

  /// A command line that cannot be understood (sysexits.h EX_USAGE).
  static let exitUsage: Int32 = 64

  static func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
  }

  /// One line saying what was wrong, then the usage; returns `exitUsage`.
  static func usageError(_ message: String) -> Int32 {
    printError("attachd: \(message)")
    printError(usage)
    return exitUsage
  }

  static func dispatch(_ arguments: [String]) -> Int32 {
    guard let command = arguments.first else { return usageError("no command given") }
    let rest = Array(arguments.dropFirst())
    switch command {
    case "serve": return ServeCommand.run(rest)
    case "process": return ProcessCommand.run(rest)
    case "stills": return StillsCLI.run(rest)
    case "rendition": return RenditionCLI.run(rest)
    case "inspect": return InspectCommand.run(rest)
    case "keys": return KeysCommand.run(rest)
    case "tokens": return TokensCommand.run(rest)
    case "sandbox": return SandboxCommand.run(rest)
    // Not in the usage: a benchmark for Scripts/bench-hevc, not a user command.
    case "bench-hevc": return BenchHEVCCommand.run(rest)
    // Not in the usage either: the sandbox's cost per image, for Scripts/bench-pipeline.
    case "bench-sandbox": return BenchSandboxCommand.run(rest)
    case "--help", "-h", "help":
      print(usage)
      return 0
    case "--version", "version":
      print("attachd \(Application.version)")
      return 0
    default:
      return usageError(command.hasPrefix("-") ? "unknown option \(command)" : "unknown command \(command)")
    }
  }
}

// The sandbox helper runs before anything else can start a thread: it forks.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "sandbox-helper" {
  // Every child is forked from the helper and inherits its malloc settings and heap: freed
  // buffers stay for the next allocation of the same decode, and the heap's top is in
  // transparent huge pages, so a child faults its buffers in 2 MiB at a time instead of 4 KiB.
  MallocTuning.keepFreedBuffersForReuse()
  MallocTuning.hugePageHeap()
  SandboxHelper.run(arguments: Array(CommandLine.arguments.dropFirst(2)), jobs: PipelineJobs.all)
}
exit(CLI.dispatch(Array(CommandLine.arguments.dropFirst())))
