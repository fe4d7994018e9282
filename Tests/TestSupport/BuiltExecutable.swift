import Foundation

/// The executables `swift build --build-tests` builds beside the test bundle.
public enum BuiltExecutable {
  /// The built `attachd` (it is also the decode sandbox's helper), or nil when it is missing.
  public static let attachd: String? = {
    let candidates = [
      URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
        "attachd"),
      URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/debug/attachd"),
    ]
    return candidates.map(\.path).first { FileManager.default.isExecutableFile(atPath: $0) }
  }()
}
