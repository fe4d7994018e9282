// attachd-bench-unsandboxed: `attachd serve` with every image decoded in the server process, for
// Scripts/bench-load --sandbox only (the side that shows what the sandbox costs). It is not a
// product: the Dockerfile and every release build `--product attachd`, which never contains it,
// and `serve` has no switch that turns the sandbox off.
import App
import Foundation
import PipelineSandbox
import Sandbox

// The service still starts its sandbox helper (idle here), as `serve` does: the two servers
// differ only in where the pixels are decoded.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "sandbox-helper" {
  SandboxHelper.run(arguments: Array(CommandLine.arguments.dropFirst(2)), jobs: PipelineJobs.all)
}
let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.first == "serve" else {
  FileHandle.standardError.write(Data("usage: attachd-bench-unsandboxed serve [serve options]\n".utf8))
  exit(ServeMain.exitUsage)
}
exit(
  ServeMain.run(
    Array(arguments.dropFirst()), command: "attachd-bench-unsandboxed serve",
    decoding: .inProcessForBenchmarks))
