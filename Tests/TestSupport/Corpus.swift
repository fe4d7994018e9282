import Foundation

/// The shared image corpus (`../shared/corpus` beside the checkout), read in place.
public enum Corpus {
  /// The corpus directory, or nil when this checkout has none beside it.
  public static let directory: URL? = {
    // ATTACHD_CORPUS (when set and non-empty) names it; else Tests/TestSupport/Corpus.swift →
    // repo root → ../shared/corpus. Either way it counts only if MANIFEST.tsv is there.
    let dir: URL
    if let override = ProcessInfo.processInfo.environment["ATTACHD_CORPUS"], !override.isEmpty {
      dir = URL(fileURLWithPath: override)
    } else {
      let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
      dir = root.deletingLastPathComponent().appendingPathComponent("shared/corpus")
    }
    return FileManager.default.fileExists(atPath: dir.appendingPathComponent("MANIFEST.tsv").path)
      ? dir : nil
  }()

  /// Why a corpus test did not run.
  public static let skipReason = "skipped: corpus not present"

  /// The bytes of one corpus file.
  public static func data(_ name: String) throws -> Data {
    guard let dir = directory else { throw CocoaError(.fileNoSuchFile) }
    return try Data(contentsOf: dir.appendingPathComponent(name))
  }
}
