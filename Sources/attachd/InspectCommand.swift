import PipelineCLI

/// `attachd inspect IN` (logic in `PipelineCLI.InspectCLI`).
enum InspectCommand {
  static func run(_ arguments: [String]) -> Int32 {
    InspectCLI.run(arguments)
  }
}
