import Foundation
import Storage
import Testing

@testable import App

/// The upload URL after the last byte, in the states a request cut short leaves behind; the
/// states are made with the server's own upload store, as a dropped request or a dead process
/// leaves them.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TusResultTests {
  typealias S = TusServer

  /// A tus upload of `bytes` made in the store directly, every byte written and committed.
  static func writtenUpload(_ tus: TusServer, _ bytes: [UInt8]) throws -> (store: any UploadStore, id: String)
  {
    let store = tus.server.app.uploads.store
    let upload = try store.create(
      NewUpload(
        tenant: "acme", length: bytes.count, maxLength: 64 << 20, protocolName: "tus", lifetime: 3600))
    let writer = try store.openWriter(tenant: "acme", id: upload.id, offset: 0, length: nil) {}
    try bytes.withUnsafeBytes { buffer in
      if try writer.append(buffer) == .flushNeeded { try writer.flush() }
    }
    #expect(try writer.close().offset == bytes.count)
    return (store, upload.id)
  }

  @Test func anUploadWhoseLastRequestLeftBeforeThePipelineIsProcessedByItsGet() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let image = S.png(seed: 6)
    let (_, id) = try Self.writtenUpload(tus, image)
    let path = "/v1/tus/" + id
    // Every byte is in: HEAD says so (the client is done), and GET runs the pipeline now.
    let head = try tus.request("HEAD", path, [S.tus, S.acme])
    #expect(head["Upload-Offset"] == String(image.count) && head["Content-Location"] == nil)
    let get = try tus.request("GET", path, [S.tus, S.acme])
    #expect(get.status == 200)
    let attachment = try #require(get["Content-Location"])
    #expect(S.content(try #require(get.json)) == S.content(try tus.plainRecord(image)))
    // Recorded: the next GET answers the same attachment, and HEAD names it.
    #expect(try tus.request("GET", path, [S.tus, S.acme])["Content-Location"] == attachment)
    #expect(try tus.request("HEAD", path, [S.tus, S.acme])["Content-Location"] == attachment)
  }

  @Test func aCompletedUploadWhoseProcessorLetGoIsProcessedByItsGet() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let image = S.png(seed: 7)
    let (store, id) = try Self.writtenUpload(tus, image)
    guard case .body = try store.complete(tenant: "acme", id: id) else {
      Issue.record("not claimed")
      return
    }
    try store.abandonProcessing(tenant: "acme", id: id)
    let get = try tus.request("GET", "/v1/tus/" + id, [S.tus, S.acme])
    #expect(get.status == 200 && get["Content-Location"] != nil)
  }

  @Test func anUploadBeingProcessedAnswers409UntilItsResultIsIn() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let image = S.png(seed: 8)
    let (store, id) = try Self.writtenUpload(tus, image)
    // Another request holds the processing claim.
    guard case .body = try store.complete(tenant: "acme", id: id) else {
      Issue.record("not claimed")
      return
    }
    let path = "/v1/tus/" + id
    let get = try tus.request("GET", path, [S.tus, S.acme])
    #expect(get.status == 409 && get.code == "upload_in_progress" && get["Retry-After"] == "1")
    let repeated = try tus.patch(path, offset: image.count, [])
    #expect(repeated.status == 409 && repeated.code == "upload_in_progress")
    #expect(try tus.request("HEAD", path, [S.tus, S.acme])["Upload-Offset"] == String(image.count))
  }

  @Test func aGetBeforeEveryByteIsInAnswersTheOffset() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let path = try tus.create(length: 100)
    #expect(try tus.patch(path, offset: 0, [UInt8](repeating: 1, count: 30)).status == 204)
    let get = try tus.request("GET", path, [S.tus, S.acme])
    #expect(get.status == 409 && get.code == "upload_incomplete" && get["Upload-Offset"] == "30")
  }

  @Test func aDeletedAttachmentLeavesTheUploadUrlAnswering404() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let image = S.png(seed: 9)
    let path = try tus.create(length: image.count)
    let attachment = try #require(try tus.patch(path, offset: 0, image)["Content-Location"])
    #expect(try tus.request("DELETE", attachment, [S.acme]).status == 204)
    let get = try tus.request("GET", path, [S.tus, S.acme])
    #expect(get.status == 404 && get.code == "not_found")
  }
}
