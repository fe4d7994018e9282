import Foundation
import Testing

@testable import ImagePipeline

/// Inputs Scripts/fuzz-sandbox found (Tests/Fixtures/sandbox-fuzz), through the pipeline in this
/// process: an image or the input's own refusal, never a 500 (`internal`). SandboxedPipelineTests
/// runs the same files through the sandbox.
@Suite struct SandboxFuzzRegressionTests {
  static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .appendingPathComponent("Fixtures/sandbox-fuzz")

  static var names: [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
  }

  @Test func everyFoundInputIsHere() {
    // heif-thread-heap-shrink.heic: glibc's malloc probed /proc/sys/vm/overcommit_memory in the
    // child (a seccomp violation). jpeg-progressive-lossless-rewrite-cut.jpg: tjTransform
    // rewrote a broken scan losslessly, the output failed verification (a 500).
    #expect(Self.names == ["heif-thread-heap-shrink.heic", "jpeg-progressive-lossless-rewrite-cut.jpg"])
  }

  @Test(arguments: names)
  func foundInputIsAnImageOrARefusalNeverAnInternalError(name: String) throws {
    let bytes = [UInt8](try Data(contentsOf: Self.directory.appendingPathComponent(name)))
    do {
      let image = try Pipeline().process(bytes)
      #expect(!image.jpeg.isEmpty)
    } catch let error as PipelineError {
      #expect(error.kind != .internal, "\(name): \(error)")
    }
  }
}
