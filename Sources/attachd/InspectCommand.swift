<<<<<<< HEAD
// Placeholder: the pipeline helper owns this file and replaces it at merge.
import Foundation

/// `attachd inspect`.
enum InspectCommand {
  static func run(_ arguments: [String]) -> Int32 {
    FileHandle.standardError.write(Data("attachd inspect: not built yet\n".utf8))
    return 2
=======
import ImagePipeline

/// `attachd inspect IN` (logic in `ImagePipeline.InspectCLI`).
enum InspectCommand {
  static func run(_ arguments: [String]) -> Int32 {
    InspectCLI.run(arguments)
>>>>>>> pipeline
  }
}
