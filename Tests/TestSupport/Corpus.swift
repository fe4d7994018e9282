import Foundation

/// The shared image corpus (`../shared/corpus` beside the checkout), read in place.
public enum Corpus {
  /// The corpus directory, or nil when this checkout has none beside it.
  public static let directory: URL? = {
    if let override = ProcessInfo.processInfo.environment["ATTACHD_CORPUS"] {
      return URL(fileURLWithPath: override)
    }
    // Tests/TestSupport/Corpus.swift → repo root → ../shared/corpus
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let dir = root.deletingLastPathComponent().appendingPathComponent("shared/corpus")
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
