// Placeholder: the pipeline helper owns this file and replaces it at merge.
import Foundation

/// `attachd process`.
enum ProcessCommand {
  static func run(_ arguments: [String]) -> Int32 {
    FileHandle.standardError.write(Data("attachd process: not built yet\n".utf8))
    return 2
  }
}
