import AttachdTesting
import Crypto
import Foundation
import Testing

@testable import App
@testable import Uploads

/// The checksum and checksum-trailer extensions: a chunk reaches the upload only when its
/// digest matches; otherwise 460 and the upload is untouched.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TusChecksumTests {
  typealias S = TusServer

  static func checksum(_ bytes: [UInt8], _ algorithm: MessageDigest.Algorithm) -> String {
    algorithm.rawValue + " " + Base64.encode(MessageDigest.hash(bytes, algorithm))
  }

  @Test(arguments: MessageDigest.Algorithm.allCases)
  func aMatchingChecksumIsAcceptedAndAMismatchDiscardsTheChunk(algorithm: MessageDigest.Algorithm) throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let image = S.png(seed: 5)
    let path = try tus.create(length: image.count)
    let first = Array(image[..<100])
    let good = try tus.patch(
      path, offset: 0, first, extra: [("Upload-Checksum", Self.checksum(first, algorithm))])
    #expect(good.status == 204 && good["Upload-Offset"] == "100")
    let rest = Array(image[100...])
    var corrupted = rest
    corrupted[7] ^= 0x40
    let bad = try tus.patch(
      path, offset: 100, corrupted, extra: [("Upload-Checksum", Self.checksum(rest, algorithm))])
    #expect(bad.status == 460 && bad.code == "checksum_mismatch")
    #expect(bad["Upload-Offset"] == "100")
    #expect(try tus.request("HEAD", path, [S.tus, S.acme])["Upload-Offset"] == "100")
    let last = try tus.patch(
      path, offset: 100, rest, extra: [("Upload-Checksum", Self.checksum(rest, algorithm))])
    #expect(last.status == 204 && last["Content-Location"] != nil)
    #expect(
      S.content(try #require(tus.request("GET", path, [S.tus, S.acme]).json))
        == S.content(try tus.plainRecord(image)))
  }

  @Test func aChunkLargerThanMemoryIsHeldOnDiskUntilVerified() throws {
    let tus = try TusServer { $0.uploads.writeBufferBytes = 4096 }
    defer { tus.stop() }
    let chunk = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 37) }
    let path = try tus.create(length: 200_000)
    var corrupted = chunk
    corrupted[99_999] ^= 1
    let bad = try tus.patch(
      path, offset: 0, corrupted, extra: [("Upload-Checksum", Self.checksum(chunk, .sha256))])
    #expect(bad.status == 460)
    #expect(try tus.request("HEAD", path, [S.tus, S.acme])["Upload-Offset"] == "0")
    let good = try tus.patch(
      path, offset: 0, chunk, extra: [("Upload-Checksum", Self.checksum(chunk, .sha256))])
    #expect(good.status == 204 && good["Upload-Offset"] == "100000")
    // No scratch file is left where it was made.
    let data = tus.server.app.configuration.storage.dataDirectory
    let names = try FileManager.default.contentsOfDirectory(atPath: data)
    #expect(!names.contains { $0.hasPrefix(".held-") })
  }

  @Test(arguments: [
    ("crc32 AAAAAA==", 400, "checksum_algorithm_unsupported"),
    ("SHA1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=", 400, "checksum_algorithm_unsupported"),
    ("sha1 AAAA", 400, "invalid_upload_checksum"),
    ("sha1", 400, "invalid_upload_checksum"),
  ])
  func aChecksumWeCannotUseIsRefusedBeforeTheBody(value: String, status: Int, code: String) throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let path = try tus.create(length: 10)
    let response = try tus.patch(path, offset: 0, [1, 2, 3], extra: [("Upload-Checksum", value)])
    #expect(response.status == status && response.code == code)
    #expect(try tus.request("HEAD", path, [S.tus, S.acme])["Upload-Offset"] == "0")
  }

  /// A chunked PATCH whose `Upload-Checksum` comes as a trailer.
  static func trailerPatch(_ tus: TusServer, _ path: String, offset: Int, _ bytes: [UInt8], trailer: String?)
    throws -> TestResponse
  {
    let fields = [
      S.tus, S.acme, S.stream, ("Upload-Offset", String(offset)), ("Transfer-Encoding", "chunked"),
      ("Trailer", "Upload-Checksum"),
    ]
    let exchange = try tus.start("PATCH", path, fields)
    for piece in stride(from: 0, to: bytes.count, by: 1000) {
      try exchange.send(Array(bytes[piece..<min(bytes.count, piece + 1000)]))
    }
    return try exchange.finish(trailers: trailer.map { ["Upload-Checksum": $0] } ?? [:])
  }

  @Test func aChecksumTrailerIsCheckedAfterTheBody() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let chunk = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 11) }
    let path = try tus.create(length: 10_000)
    let bad = try Self.trailerPatch(
      tus, path, offset: 0, chunk, trailer: Self.checksum(Array(chunk.reversed()), .md5))
    #expect(bad.status == 460)
    let missing = try Self.trailerPatch(tus, path, offset: 0, chunk, trailer: nil)
    #expect(missing.status == 400 && missing.code == "invalid_upload_checksum")
    #expect(try tus.request("HEAD", path, [S.tus, S.acme])["Upload-Offset"] == "0")
    let good = try Self.trailerPatch(tus, path, offset: 0, chunk, trailer: Self.checksum(chunk, .sha1))
    #expect(good.status == 204 && good["Upload-Offset"] == "5000")
  }

  @Test func aChunkCutOffKeepsWhatArrivedUnlessItCarriesAChecksum() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let chunk = [UInt8](repeating: 3, count: 4000)
    let access = tus.server.app.attachments.access
    for checksum in [nil, Self.checksum(chunk, .sha1)] {
      let path = try tus.create(length: 4000)
      var fields = [S.tus, S.acme, S.stream, ("Upload-Offset", "0"), ("Content-Length", "4000")]
      if let checksum { fields.append(("Upload-Checksum", checksum)) }
      let cut = try tus.start("PATCH", path, fields, live: true)
      try cut.send(Array(chunk[..<2500]))
      #expect(LiveTesting.waitUntil(seconds: 5) { access.uploadsInFlight == 1 })
      // The connection closes here, mid-body.
      cut.cancel()
      // Once the server has let the request go, the offset says what was kept: every byte
      // that arrived, or none of a chunk that could not be verified.
      #expect(LiveTesting.waitUntil(seconds: 5) { access.uploadsInFlight == 0 })
      let offset = try tus.request("HEAD", path, [S.tus, S.acme])["Upload-Offset"]
      #expect(offset == (checksum == nil ? "2500" : "0"))
    }
  }
}
