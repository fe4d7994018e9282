import Foundation
import ImagePipeline
import TestSupport
import Testing

@testable import App

/// Every corpus file through the running service: accepted ones come back exactly as
/// `Pipeline.process` (same configuration) makes them, rejected ones get the pipeline's code.
@Suite(
  .serialized, .timeLimit(.minutes(5)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct CorpusUploadTests {
  static let files: [String] = {
    guard let directory = Corpus.directory else { return [] }
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    return names.filter { $0 != "MANIFEST.tsv" && !$0.hasPrefix(".") }.sorted()
  }()

  @Test func everyCorpusFileIsStoredAsThePipelineMakesItOrRefusedWithItsCode() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let pipeline = try Pipeline(configuration: server.app.configuration.attachments.pipelineConfiguration())
    var accepted = 0
    var rejected = 0
    for name in Self.files {
      let input = [UInt8](try Corpus.data(name))
      let reply = try server.post(file: UploadClientTests.corpusPath(name))
      let outcome: Result<[UInt8], PipelineError>
      do { outcome = .success(try pipeline.process(input).jpeg) } catch { outcome = .failure(error) }
      switch outcome {
      case .success(let expected):
        #expect(reply.status == 201, "\(name): \(reply.status) \(reply.code ?? "")")
        guard let id = reply.json?["id"] as? String else { continue }
        #expect(try UploadClientTests.fetch(server, id) == expected, "\(name): stored bytes differ")
        accepted += 1
      case .failure(let error):
        let entry = ErrorTable.publicError(for: error)
        #expect(reply.status == entry.status, "\(name)")
        #expect(reply["content-type"] == "application/problem+json", "\(name)")
        #expect(reply.code == error.code, "\(name)")
        rejected += 1
      }
    }
    #expect(accepted + rejected == Self.files.count)
    #expect(accepted > 40 && rejected > 5)
  }
}
