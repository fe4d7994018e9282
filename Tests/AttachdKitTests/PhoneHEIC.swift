import Foundation
import TestSupport

/// A 48 MP HEIC shaped like an iPhone 14 Pro's (8064 × 6048, a grid of 512 × 512 HEVC tiles,
/// Display P3, EXIF with GPS), made by `Scripts/make-heif-bench` from a corpus photo — the corpus
/// holds no 48 MP HEIC. Made once (about 20 s: ffmpeg and libx265 encode 192 tiles) into
/// `.build/test-fixtures/` and reused while the script is unchanged.
enum PhoneHEIC {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
  static let script = root.appendingPathComponent("Scripts/make-heif-bench")
  static let cached = root.appendingPathComponent(".build/test-fixtures/iphone-48mp.heic")

  /// Why the 48 MP test cannot run here, or nil when it can.
  static let missing: String? = {
    if Corpus.directory == nil { return "needs the corpus (../shared/corpus) for Scripts/make-heif-bench" }
    let tools = ["/usr/bin/ffmpeg", "/usr/bin/python3"]
    if let absent = tools.first(where: { !FileManager.default.isExecutableFile(atPath: $0) }) {
      return "needs \(absent) (with libx265) for Scripts/make-heif-bench"
    }
    return nil
  }()

  /// The file, made now when it is missing or older than the script.
  static func file() throws -> URL {
    if modified(cached) > modified(script) { return cached }
    try FileManager.default.createDirectory(
      at: cached.deletingLastPathComponent(), withIntermediateDirectories: true)
    let partial = cached.path + ".partial"
    _ = try ChildProcess.run("/usr/bin/python3", [script.path, partial], timeout: 300)
    _ = try? FileManager.default.removeItem(at: cached)
    try FileManager.default.moveItem(atPath: partial, toPath: cached.path)
    return cached
  }

  private static func modified(_ url: URL) -> Date {
    let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
    return attributes?[.modificationDate] as? Date ?? .distantPast
  }
}
