import ImagePipeline

/// `attachd process IN OUT [--max-edge N] [--quality Q] [--deadline SECONDS]` (logic in
/// `ImagePipeline.ProcessCLI`).
enum ProcessCommand {
  static func run(_ arguments: [String]) -> Int32 {
    ProcessCLI.run(arguments)
  }
}
