import ImagePipeline

/// `attachd inspect IN` (logic in `ImagePipeline.InspectCLI`).
enum InspectCommand {
  static func run(_ arguments: [String]) -> Int32 {
    InspectCLI.run(arguments)
  }
}
