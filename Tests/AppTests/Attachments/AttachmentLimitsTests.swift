import AttachdTesting
import Foundation
import TestSupport
import Testing

@testable import App

/// Per-key limits, aborted uploads and retention: a client that leaves goes through the live
/// server, the rest through the in-process client.
@Suite(
  .serialized, .timeLimit(.minutes(2)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct AttachmentLimitsTests {
  static let file = UploadClientTests.corpusPath("jpeg-orient-1.jpg")

  @Test func theUploadCapRefusesWith429AndAnAbortedUploadGivesItsSlotBackStoringNothing() throws {
    let server = try AttachmentServer { $0.limits.uploads.maxConcurrentUploadsPerKey = 1 }
    defer { server.stop() }
    let service = server.app.attachments
    // A client on the real socket sends half a chunked upload, then hangs up.
    let body = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.file)))
    let client = try server.live.start(
      "POST", "/v1/attachments", headers: AttachmentServer.auth(AttachmentServer.acmeKey), framing: .chunked)
    try client.send(Array(body[..<(body.count / 2)]))
    #expect(LiveTesting.waitUntil(seconds: 5) { service.metrics.uploadsInFlight.current == 1 })
    let refused = try server.post(file: Self.file)
    #expect(refused.status == 429)
    #expect(refused.code == "too_many_uploads")
    #expect(refused["retry-after"] == "1")
    client.cancel()
    #expect(LiveTesting.waitUntil(seconds: 5) { service.metrics.uploadsInFlight.current == 0 })
    #expect(try service.store.statistics().attachments == 0)
    #expect(try server.post(file: Self.file).status == 201)
    #expect(try service.store.statistics().attachments == 1)
  }

  @Test func anUploadPastItsDeadlineAnswers503WithRetryAfterAndStoresNothing() throws {
    // libheif takes well over 50 ms on the iPhone photo; the pipeline stops when it returns.
    let server = try AttachmentServer { $0.attachments.pipelineDeadline = 0.05 }
    defer { server.stop() }
    let service = server.app.attachments
    let reply = try server.post(file: UploadClientTests.corpusPath("heic-iphonexs-irot-exif6-gps.heic"))
    #expect(reply.status == 503)
    #expect(reply.code == "deadline_exceeded")
    #expect(reply["retry-after"] == "5")
    #expect(try service.store.statistics().attachments == 0)
    // The worker and the upload slot are given back (the decode memory too: the budget is
    // process-wide here, shared with tests running alongside, so DeadlineTests checks that).
    #expect(LiveTesting.waitUntil(seconds: 5) { service.metrics.uploadsInFlight.current == 0 })
    #expect(try server.post(file: Self.file).status == 201)
  }

  @Test func theRateLimitRefusesWith429AndRetryAfterOnceTheBurstIsSpent() throws {
    let server = try AttachmentServer {
      $0.limits.rate.requestsPerSecond = 0.01
      $0.limits.rate.burst = 2
    }
    defer { server.stop() }
    let client = server.client
    let acme = AttachmentServer.auth(AttachmentServer.acmeKey)
    let path = "/v1/attachments/att_00000000000000000000000000"
    #expect(try client.execute("GET", path, headers: acme).status == 404)
    #expect(try client.execute("GET", path, headers: acme).status == 404)
    let limited = try client.execute("GET", path, headers: acme)
    #expect(limited.status == 429)
    #expect(limited.code == "rate_limited")
    #expect(Int(limited["retry-after"] ?? "") ?? 0 >= 1)
    // Another key has its own bucket.
    #expect(
      try client.execute("GET", path, headers: AttachmentServer.auth(AttachmentServer.betaKey)).status == 404)
  }

  @Test func expiredAttachmentsVanishAtOnceAndTheSweeperRemovesThem() throws {
    let server = try AttachmentServer {
      $0.attachments.retention = 3
      $0.attachments.sweepInterval = 1
    }
    defer { server.stop() }
    let service = server.app.attachments
    let record = try #require(try server.post(file: Self.file).json)
    let id = try #require(record["id"] as? String)
    let acme = AttachmentServer.auth(AttachmentServer.acmeKey)
    #expect(try server.client.execute("GET", "/v1/attachments/\(id)", headers: acme).status == 200)
    usleep(3_200_000)
    #expect(try server.client.execute("GET", "/v1/attachments/\(id)", headers: acme).status == 404)
    #expect(LiveTesting.waitUntil(seconds: 5) { (try? service.store.statistics().attachments) == 0 })
    let blob = try #require(record["sha256"] as? String)
    #expect(
      LiveTesting.waitUntil(seconds: 5) {
        !FileManager.default.fileExists(
          atPath: "\(server.directory)/data/blobs/\(blob.prefix(2))/\(blob.dropFirst(2).prefix(2))/\(blob)")
      })
  }
}

@Suite struct ByteRangeTests {
  @Test(
    arguments: [
      (nil, ByteRange.whole), ("bytes=0-9", .partial(lower: 0, upper: 9)),
      ("bytes=90-", .partial(lower: 90, upper: 99)), ("bytes=-5", .partial(lower: 95, upper: 99)),
      ("bytes=-500", .partial(lower: 0, upper: 99)), ("bytes=50-500", .partial(lower: 50, upper: 99)),
      ("bytes=100-", .unsatisfiable), ("bytes=-0", .unsatisfiable), ("bytes=0-1,4-5", .whole),
      ("items=0-1", .whole), ("bytes=9-2", .whole), ("bytes=a-b", .whole), ("bytes=", .whole),
    ] as [(String?, ByteRange)])
  func aRangeHeaderResolvesAgainstASize(header: String?, expected: ByteRange) {
    #expect(ByteRange.resolve(header, size: 100) == expected)
  }

  @Test func ifNoneMatchMatchesListsWeakTagsAndStar() {
    let etag = "\"abc\""
    #expect(AttachmentService.matches("\"x\", \"abc\"", etag: etag))
    #expect(AttachmentService.matches("W/\"abc\"", etag: etag))
    #expect(AttachmentService.matches("*", etag: etag))
    #expect(!AttachmentService.matches("\"abcd\"", etag: etag))
  }
}

@Suite struct AttachmentConfigurationTests {
  @Test func theAttachmentSettingsLoadFromTheEnvironment() throws {
    var config = Application.Configuration()
    try ConfigurationLoader.applyEnvironment(
      [
        "ATTACHD_MAX_UPLOAD_BYTES": "1048576", "ATTACHD_MAX_PARTS": "3", "ATTACHD_CACHE_MAX_AGE": "60",
        "ATTACHD_RETENTION": "86400", "ATTACHD_TENANT_RETENTION": #"{"acme": 3600}"#,
        "ATTACHD_SWEEP_INTERVAL": "120", "ATTACHD_RATE_LIMIT": "2.5", "ATTACHD_SIGNED_LINK_TTL": "60",
        "ATTACHD_MAX_EDGE": "1024", "ATTACHD_JPEG_QUALITY": "80", "ATTACHD_PIPELINE_DEADLINE": "2.5",
        "ATTACHD_HEVC_THREADS": "2",
      ], to: &config)
    try config.validate()
    #expect(config.attachments.maxUploadBytes == 1_048_576)
    #expect(config.attachments.maxParts == 3)
    #expect(config.attachments.cacheMaxAge == 60)
    #expect(config.attachments.tenantRetention == ["acme": 3600])
    #expect(config.attachments.sweepInterval == 120)
    #expect(config.limits.rate.requestsPerSecond == 2.5)
    #expect(config.signing.ttlSeconds == 60)
    #expect(config.attachments.pipelineConfiguration().maxEdge == 1024)
    #expect(config.attachments.pipelineConfiguration().limits.maxInputBytes == 1_048_576)
    #expect(config.attachments.pipelineConfiguration().deadline == .milliseconds(2500))
    #expect(Application.Configuration().attachments.pipelineConfiguration().deadline == .seconds(30))
    #expect(config.attachments.pipelineConfiguration().hevcThreads == 2)
    #expect(Application.Configuration().attachments.pipelineConfiguration().hevcThreads == 1)
    var bad = Application.Configuration()
    #expect(throws: ConfigurationError.self) {
      try ConfigurationLoader.applyEnvironment(["ATTACHD_PIPELINE_DEADLINE": "0"], to: &bad)
    }
    #expect(throws: ConfigurationError.self) {
      try ConfigurationLoader.applyEnvironment(["ATTACHD_HEVC_THREADS": "65"], to: &bad)
    }
    try ConfigurationLoader.applyEnvironment(["ATTACHD_PIPELINE_DEADLINE": "1e12"], to: &bad)
    #expect(throws: ConfigurationError.self) { try bad.validate() }
  }

  @Test func anEmptySigningSecretMeansUnset() throws {
    var config = Application.Configuration()
    try ConfigurationLoader.applyEnvironment(["ATTACHD_SIGNING_SECRET": ""], to: &config)
    #expect(config.signing.secret == nil)
    try config.validate()
  }

  @Test func aBadTenantRetentionIsRefusedWithItsVariable() {
    var config = Application.Configuration()
    #expect(throws: ConfigurationError.self) {
      try ConfigurationLoader.applyEnvironment(["ATTACHD_TENANT_RETENTION": #"{"acme": -1}"#], to: &config)
    }
  }
}
