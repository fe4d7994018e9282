import Foundation
import Glibc
import ImagePipeline
import Synchronization
import TestSupport
import Testing

@testable import PipelineSandbox
@testable import Sandbox

/// The pipeline through the sandbox: every real and hostile file of the corpus and every HEIF
/// fixture decodes under the filter with no violation and no crash, to exactly what the
/// pipeline makes in-process; one child's heap never reaches the next image.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct SandboxedPipelineTests {
  static func sandboxed() throws -> SandboxedPipeline {
    var configuration = SandboxConfiguration()
    configuration.executable = try #require(BuiltExecutable.attachd, "attachd is not built")
    let sandbox = Sandbox(configuration: configuration)
    #expect(sandbox.waitUntilReady(seconds: 10), "\(sandbox.lastFailure ?? "")")
    return SandboxedPipeline(pipeline: try Pipeline(), sandbox: sandbox)
  }

  /// Every corpus file, `Tests/Fixtures/heif`, the inputs Scripts/fuzz-sandbox found
  /// (`Tests/Fixtures/sandbox-fuzz`) and the HEIF conformance files beside the checkout.
  static func inputs() -> [URL] {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    var directories = ["heif", "sandbox-fuzz"].map { root.appendingPathComponent("Tests/Fixtures/\($0)") }
    if let corpus = Corpus.directory { directories.append(corpus) }
    directories.append(root.deletingLastPathComponent().appendingPathComponent("shared/heifconf/files"))
    let skipped: Set<String> = ["md", "tsv", "txt", "json"]
    return directories.flatMap { directory -> [URL] in
      let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
      return names.sorted().map { directory.appendingPathComponent($0) }
        .filter { !skipped.contains($0.pathExtension.lowercased()) && !$0.lastPathComponent.hasPrefix("SHA") }
        .filter { !$0.hasDirectoryPath && FileManager.default.isReadableFile(atPath: $0.path) }
        .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
    }
  }

  @Test(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
  func everyCorpusFileAndHEIFFixtureDecodesUnderTheFilterAsItDoesInProcess() throws {
    let inputs = Self.inputs()
    try #require(inputs.count > 60, "corpus and fixtures: \(inputs.count) files")
    let sandboxed = try Self.sandboxed()
    defer { sandboxed.sandbox.stop() }
    let reports = Mutex<[DecodeReport]>([])
    let observed = SandboxedPipeline(pipeline: sandboxed.pipeline, sandbox: sandboxed.sandbox) { report in
      reports.withLock { $0.append(report) }
    }
    for url in inputs {
      let bytes = [UInt8](try Data(contentsOf: url))
      let inProcess = Result { () throws(PipelineError) in try sandboxed.pipeline.process(bytes) }
      let boxed = Result { () throws(PipelineError) in
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 16)
        defer { copy.deallocate() }
        bytes.withUnsafeBytes { copy.copyMemory(from: $0) }
        return try observed.process(UnsafeRawBufferPointer(rebasing: copy[0..<bytes.count]))
      }
      switch (inProcess, boxed) {
      case (.success(let a), .success(let b)):
        #expect(a.jpeg == b.jpeg, "\(url.lastPathComponent): outputs differ")
        #expect(a.source.orientation == b.source.orientation && a.source.format == b.source.format)
      case (.failure(let a), .failure(let b)):
        #expect(a.kind == b.kind, "\(url.lastPathComponent): \(a) in process, \(b) sandboxed")
      case (.success, .failure(let b)):
        Issue.record("\(url.lastPathComponent): decoded in process, \(b) sandboxed")
      case (.failure(let a), .success):
        Issue.record("\(url.lastPathComponent): \(a) in process, decoded sandboxed")
      }
    }
    for report in reports.withLock({ $0 }) {
      #expect(report.outcome == .finished, "\(report.outcome) \(report.inputSHA256 ?? "")")
    }
  }

  @Test func decodingAThenBGivesBExactlyWhatBAloneGivesFromAnotherProcess() throws {
    let sandboxed = try Self.sandboxed()
    defer { sandboxed.sandbox.stop() }
    let files = Self.inputs().filter { ["jpg", "heic", "png"].contains($0.pathExtension.lowercased()) }
    let a = [UInt8](try Data(contentsOf: try #require(files.first)))
    let b = [UInt8](try Data(contentsOf: try #require(files.last)))
    func run(_ bytes: [UInt8]) throws -> (jpeg: [UInt8], pid: Int32) {
      let run = try bytes.withUnsafeBytes {
        try sandboxed.sandbox.run(
          job: PipelineJobs.process.name, input: $0,
          parameters: PipelineWire.parameters(sandboxed.pipeline.configuration, profiles: []),
          outputCapacity: 64 << 20, deadline: .seconds(30))
      }
      guard case .processed(let image) = try PipelineWire.read(run.output) else { throw CancellationError() }
      return (image.jpeg, run.exit.pid)
    }
    let alone = try run(b)
    let first = try run(a)
    let after = try run(b)
    #expect(after.jpeg == alone.jpeg)
    #expect(Set([alone.pid, first.pid, after.pid]).count == 3)
  }
}
