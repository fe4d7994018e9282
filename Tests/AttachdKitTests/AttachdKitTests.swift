import AttachdKit
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// AttachdKit against the built `attachd serve` on a real port: every request crosses a socket.
/// Serialized: the memory test reads this process's resident set, which other tests would move.
@Suite(.serialized, .enabled(if: LiveAttachd.binary != nil, "attachd binary not built"))
struct AttachdKitTests {
  static let jpeg = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/decoders/jpeg-trailing-data.jpg")

  static func client(_ url: URL, chunkSize: Int = 2 << 20) -> AttachdClient {
    AttachdClient(baseURL: url, chunkSize: chunkSize, retry: RetryPolicy(initialDelay: 0.05)) {
      LiveAttachd.key
    }
  }

  /// A JPEG followed by `padding` zero bytes (a sparse file): a valid image of any size.
  static func paddedJPEG(_ padding: Int) throws -> URL {
    let url = URL(fileURLWithPath: ScratchSpace.file("attachdkit-padded", suffix: ".jpg"))
    try Data(contentsOf: jpeg).write(to: url)
    let handle = try FileHandle(forWritingTo: url)
    try handle.truncate(atOffset: try handle.seekToEnd() + UInt64(padding))
    try handle.close()
    return url
  }

  @Test func uploadsReadsAndDeletes() async throws {
    let server = try LiveAttachd()
    let client = Self.client(server.baseURL)
    let progress = Progress()
    let attachment = try await client.upload(file: Self.jpeg, profile: "anthropic") { sent, total in
      progress.record(sent, total)
    }
    #expect(attachment.id.hasPrefix("att_"))
    #expect(attachment.profile == "anthropic")
    #expect(progress.last == progress.total && progress.total > 0)
    #expect(try await client.attachment(id: attachment.id).id == attachment.id)
    try await client.delete(id: attachment.id)
    await #expect(throws: AttachdError.self) { try await client.attachment(id: attachment.id) }
    do {
      _ = try await client.attachment(id: attachment.id)
    } catch let error as AttachdError {
      #expect(error.status == 404 && error.code == "not_found")
    }
  }

  @Test func aRealPhotoFromTheCorpusGoesResumableInChunks() async throws {
    guard let corpus = Corpus.directory else { return }
    let server = try LiveAttachd()
    let photo = corpus.appendingPathComponent("heic-iphone13pro-grid-depth-gps.heic")
    let attachment = try await Self.client(server.baseURL, chunkSize: 256 << 10).upload(file: photo)
    #expect(
      attachment.source.format.lowercased().contains("heic")
        || attachment.source.format.lowercased().contains("heif"))
    #expect(attachment.width == 2048)
  }

  /// 200 MB from disk: the resident set grows by at most 16 MiB while it is sent.
  @Test func a200MBFileKeepsMemoryFlat() async throws {
    let server = try LiveAttachd(environment: ["ATTACHD_MAX_UPLOAD_BYTES": String(256 << 20)])
    let file = try Self.paddedJPEG(200_000_000)
    defer { try? FileManager.default.removeItem(at: file) }
    // The default chunk size: the figure is what an app gets.
    let client = AttachdClient(baseURL: server.baseURL) { LiveAttachd.key }
    let before = ResidentMemory.current()
    let progress = Progress()
    let (result, peak) = await ResidentMemory.peak {
      await Result(catching: { try await client.upload(file: file) { progress.record($0, $1) } })
    }
    let growth = peak - before
    print(
      "AttachdKit: 200 MB upload, resident set \(before >> 20) MiB before, peak \(peak >> 20) MiB, growth \(growth >> 10) KiB"
    )
    #expect(progress.last == 200_000_000 + Int64(try Data(contentsOf: Self.jpeg).count))
    #expect(growth <= 16 << 20)
    // The server takes the bytes; what it makes of a JPEG with 200 MB of trailing zeros is its
    // business (stored, or refused with its problem code) — the memory is the point here.
    // A JPEG followed by 200 MB of zeros is a valid JPEG to the server: stored, one record.
    let attachment = try result.get()
    #expect(attachment.source.bytes == Int(progress.total))
  }

  /// A 48 MP HEIC from disk, as the picker gives it: a resumable upload in 1 MiB appends while
  /// the resident set is sampled; the server decodes it whole.
  @Test(.enabled(if: PhoneHEIC.missing == nil, "skipped: \(PhoneHEIC.missing ?? "")"))
  func a48MPHEICGoesFromDiskWithFlatMemory() async throws {
    let photo = try PhoneHEIC.file()
    let size = try #require(try FileManager.default.attributesOfItem(atPath: photo.path)[.size] as? NSNumber)
    let server = try LiveAttachd()
    let client = AttachdClient(baseURL: server.baseURL) { LiveAttachd.key }
    let progress = Progress()
    let before = ResidentMemory.current()
    let (result, peak) = await ResidentMemory.peak {
      await Result(catching: {
        try await client.upload(file: photo, profile: "anthropic") { progress.record($0, $1) }
      })
    }
    print(
      "AttachdKit: 48 MP HEIC (\(size.intValue >> 10) KiB), resident set growth \((peak - before) >> 10) KiB"
    )
    let attachment = try result.get()
    #expect(attachment.source.format.lowercased().hasPrefix("hei"))
    #expect(attachment.source.width * attachment.source.height == 8064 * 6048)
    #expect(attachment.source.bytes == size.intValue)
    // The stored image fits 2048 px; the record's top level describes the profile asked for.
    #expect(attachment.profiles["default"].map { max($0.width, $0.height) } == 2048)
    #expect(attachment.profile == "anthropic" && max(attachment.width, attachment.height) < 2048)
    #expect(progress.last == size.int64Value)
    #expect(peak - before <= 16 << 20)
  }

  /// Three files in one multipart request, the body put together on disk: two stored with the
  /// profile, a text file refused with its own problem; the resident set grows by far less than
  /// the body.
  @Test func aMultipartUploadStreamsItsFilesFromDisk() async throws {
    let server = try LiveAttachd(environment: ["ATTACHD_MAX_UPLOAD_BYTES": String(128 << 20)])
    let big = try Self.paddedJPEG(64_000_000)
    let text = URL(fileURLWithPath: ScratchSpace.file("attachdkit-notes", suffix: ".txt"))
    try Data("not an image\n".utf8).write(to: text)
    defer { for file in [big, text] { try? FileManager.default.removeItem(at: file) } }
    let client = Self.client(server.baseURL)
    // A first small upload from a file: what the first use of `URLSession` costs (its threads,
    // libcurl's buffers) is not what this measures.
    _ = try await client.uploadMultipart(files: [Self.jpeg])
    let progress = Progress()
    let reports = Counter()
    let before = ResidentMemory.current()
    let (result, peak) = await ResidentMemory.peak {
      await Result(catching: {
        try await client.uploadMultipart(files: [Self.jpeg, big, text], profile: "openai") {
          progress.record($0, $1)
          _ = reports.next()
        }
      })
    }
    print("AttachdKit: 64 MB multipart upload, resident set growth \((peak - before) >> 10) KiB")
    let answers = try result.get()
    #expect(answers.count == 3)
    let stored = answers.compactMap { try? $0.get() }
    #expect(stored.count == 2)
    #expect(stored.allSatisfy { $0.profile == "openai" && $0.id.hasPrefix("att_") })
    #expect(stored.last?.source.bytes == 64_000_000 + (try Data(contentsOf: Self.jpeg).count))
    guard case .failure(let refusal) = answers.last else {
      Issue.record("the text part must be refused")
      return
    }
    #expect(refusal.status == 415 && refusal.code == "unsupported_format")
    #expect(progress.last == progress.total && progress.total > 64_000_000)
    // On Linux FoundationNetworking tells a completion-handler task's delegate nothing of the
    // body it sends: the start and the end are reported (see docs/client.md).
    #expect(reports.value >= 2)
    #expect(peak - before <= 16 << 20)
    // The temporary body is gone.
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())
      .filter { $0.hasSuffix(".multipart") && $0.hasPrefix("attachdkit-") }
    #expect(leftovers.isEmpty)
  }

  /// What docs/client.md says of Live Photos: a still and a movie that are not a pair (no
  /// shared content identifier) sent together are two attachments, an image and a video.
  @Test func aStillAndAMovieThatAreNotAPairAreTwoAttachments() async throws {
    let server = try LiveAttachd()
    let movie = Self.jpeg.deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("video/hevc-rot90-mirror.mov")
    let answers = try await Self.client(server.baseURL).uploadMultipart(files: [Self.jpeg, movie])
    #expect(answers.count == 2)
    #expect((try? answers.first?.get())?.kind == "image")
    let video = try #require(try answers.last?.get())
    #expect(video.kind == "video" && video.video?.width == 108 && video.video?.height == 192)
    #expect(video.frames?.count == 4)
  }

  @Test(arguments: [false, true], [ResumableProtocol.ietfDraft, .tus])
  func aCutConnectionResumesFromTheServersOffset(haproxy: Bool, resumable: ResumableProtocol) async throws {
    // The cut may land just after a request's head: FoundationNetworking's libcurl then resends
    // the head alone on a new connection and the server times its body out (408, retried after
    // the offset is asked); a short body timeout keeps that case quick.
    let server = try LiveAttachd(environment: ["ATTACHD_BODY_IDLE_TIMEOUT": "2"])
    let proxy = try haproxy ? HAProxy(backends: [server.port]) : nil
    let front = try TCPFront(upstream: proxy?.port ?? server.port, cutAfter: 1_500_000)
    let file = try Self.paddedJPEG(3_000_000)
    defer { try? FileManager.default.removeItem(at: file) }
    let client = AttachdClient(
      baseURL: URL(string: "http://127.0.0.1:\(front.port)")!, chunkSize: 1 << 20,
      resumableProtocol: resumable,
      retry: RetryPolicy(initialDelay: 0.05)
    ) { LiveAttachd.key }
    let progress = Progress()
    let attachment = try await client.upload(file: file, profile: "anthropic") { progress.record($0, $1) }
    #expect(front.counts.cuts == 1)
    #expect(front.counts.connections >= 2)
    #expect(attachment.id.hasPrefix("att_"))
    #expect(attachment.profile == "anthropic")
    #expect(attachment.source.bytes == Int(progress.total))
    #expect(try await server.storedObjects() == 1)
    // The appends went where the protocol says.
    let route = resumable == .tus ? "/v1/tus/{id}" : "/v1/uploads/{id}"
    let appends = try await server.metricTotal(
      #"attachd_http_requests_total{route="\#(route)",method="PATCH""#, reaching: 3)
    #expect(appends >= 3)
    _ = proxy
  }

  @Test(arguments: [false, true]) func retriesAfterTheServersRetryAfter(haproxy: Bool) async throws {
    // The real server's own 429: one request per second, a burst of one.
    // One request per 4 s, a burst of one: the second upload is refused even when the first
    // took a second or two on a loaded machine (at one per second it sometimes was not).
    let server = try LiveAttachd(environment: ["ATTACHD_RATE_LIMIT": "0.25", "ATTACHD_RATE_BURST": "1"])
    let proxy = try haproxy ? HAProxy(backends: [server.port]) : nil
    let base = URL(string: "http://127.0.0.1:\(proxy?.port ?? server.port)")!
    let client = AttachdClient(baseURL: base, retry: RetryPolicy(attempts: 3, initialDelay: 30)) {
      LiveAttachd.key
    }
    _ = try await client.upload(file: Self.jpeg)
    let started = Date()
    _ = try await client.upload(file: Self.jpeg)
    // Retry-After (at most 4 s) was honoured, not the backoff (15–30 s).
    #expect(Date().timeIntervalSince(started) < 12)
    #expect(Date().timeIntervalSince(started) >= 0.5)
    #expect(try await server.metric(#"attachd_rejections_total{code="rate_limited"}"#) == 1)
  }

  @Test func retries429And503FromAFrontWithRetryAfter() async throws {
    let server = try LiveAttachd()
    let front = try TCPFront(upstream: server.port, faults: [429, 503])
    let client = AttachdClient(
      baseURL: URL(string: "http://127.0.0.1:\(front.port)")!,
      retry: RetryPolicy(attempts: 3, initialDelay: 30)
    ) { LiveAttachd.key }
    let started = Date()
    let attachment = try await client.upload(file: Self.jpeg)
    #expect(attachment.id.hasPrefix("att_"))
    #expect(front.counts.connections >= 3)
    #expect(Date().timeIntervalSince(started) < 14)
    let limited = AttachdClient(
      baseURL: URL(
        string: "http://127.0.0.1:\(try TCPFront(upstream: server.port, faults: [503, 503]).port)")!,
      retry: RetryPolicy(attempts: 2, initialDelay: 0.05)
    ) { LiveAttachd.key }
    do {
      _ = try await limited.upload(file: Self.jpeg)
      Issue.record("two 503s with two attempts must fail")
    } catch let error as AttachdError {
      #expect(error.status == 503 && error.code == "overloaded" && error.retryAfter == 1)
    }
  }

  @Test(arguments: [false, true]) func theIdempotencyKeyMakesARetriedUploadOneAttachment(haproxy: Bool)
    async throws
  {
    // The first answer is lost: the front cuts the connection once the whole request is in, so
    // the server stores it and the client retries with the same Idempotency-Key.
    let server = try LiveAttachd()
    let proxy = try haproxy ? HAProxy(backends: [server.port]) : nil
    let front = try TCPFront(upstream: proxy?.port ?? server.port, loseFirstAnswer: true)
    let client = Self.client(URL(string: "http://127.0.0.1:\(front.port)")!)
    let attachment = try await client.upload(file: Self.jpeg)
    #expect(front.counts.cuts == 1)
    #expect(attachment.id.hasPrefix("att_"))
    #expect(try await server.storedObjects() == 1)
    _ = proxy
  }

  @Test(arguments: [false, true], [ResumableProtocol.ietfDraft, .tus])
  func aCancelledUploadStoresNothing(haproxy: Bool, resumable: ResumableProtocol) async throws {
    let server = try LiveAttachd()
    let proxy = try haproxy ? HAProxy(backends: [server.port]) : nil
    let file = try Self.paddedJPEG(40_000_000)
    defer { try? FileManager.default.removeItem(at: file) }
    let base = proxy.map { URL(string: "http://127.0.0.1:\($0.port)")! } ?? server.baseURL
    let client = AttachdClient(
      baseURL: base, chunkSize: 1 << 20, resumableProtocol: resumable, retry: RetryPolicy(initialDelay: 0.05)
    ) { LiveAttachd.key }
    let progress = Progress()
    let task = Task { try await client.upload(file: file) { progress.record($0, $1) } }
    let deadline = Date().addingTimeInterval(30)
    while progress.last < 3 << 20 {
      try #require(Date() < deadline, "the upload did not reach 3 MiB in 30 s")
      try await Task.sleep(nanoseconds: 5_000_000)
    }
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    // The client said DELETE: no attachment was made, and the upload is gone.
    #expect(try await server.storedObjects() == 0)
    print("AttachdKit: after the cancel the data directory holds \(server.storedFiles())")
    _ = proxy
  }

  @Test(arguments: [false, true]) func anExpiredTokenIsRefreshedOnce(haproxy: Bool) async throws {
    let issuer = try TokenIssuer()
    let server = try LiveAttachd(environment: issuer.environment)
    let proxy = try haproxy ? HAProxy(backends: [server.port]) : nil
    // The first token is about to expire (1 s); it has when the upload starts.
    let first = try issuer.mint(ttl: 1)
    try await Task.sleep(nanoseconds: 2_100_000_000)
    let calls = Counter()
    let base = proxy.map { URL(string: "http://127.0.0.1:\($0.port)")! } ?? server.baseURL
    let client = AttachdClient(baseURL: base) {
      calls.next() == 1 ? first : try issuer.mint(ttl: 600)
    }
    let attachment = try await client.upload(file: Self.jpeg)
    #expect(attachment.owner == "user-1")
    #expect(calls.value == 2)
    _ = proxy
  }

  /// The token runs out between two appends of a resumable upload: the next request is answered
  /// `401 token_expired` (or its connection closed under its body), the client fetches one fresh
  /// token and the upload goes on to one attachment.
  @Test(arguments: [false, true]) func aTokenThatExpiresMidUploadIsRefreshedOnce(haproxy: Bool) async throws {
    let issuer = try TokenIssuer()
    let server = try LiveAttachd(environment: issuer.environment)
    let proxy = try haproxy ? HAProxy(backends: [server.port]) : nil
    let file = try Self.paddedJPEG(4_000_000)
    defer { try? FileManager.default.removeItem(at: file) }
    let base = proxy.map { URL(string: "http://127.0.0.1:\($0.port)")! } ?? server.baseURL
    // 3 s: time for the creation and the first append on a loaded machine, and then it runs out.
    let first = try issuer.mint(ttl: 3)
    let expiry = try #require(TokenIssuer.expiry(of: first))
    let calls = Counter()
    let client = AttachdClient(baseURL: base, chunkSize: 1 << 20, retry: RetryPolicy(initialDelay: 0.05)) {
      calls.next() == 1 ? first : try issuer.mint(ttl: 600)
    }
    let waits = Counter()
    let firstChunkInTime = Counter()
    let attachment = try await client.upload(file: file) { sent, _ in
      // After the first append: hold the upload until the token has run out (blocking this one
      // task is the point; the server's clock counts whole seconds, `now >= exp` is expired).
      guard sent >= 1 << 20, waits.next() == 1 else { return }
      if Date().timeIntervalSince1970 < expiry { _ = firstChunkInTime.next() }
      while Date().timeIntervalSince1970 < expiry + 0.3 { usleep(20_000) }
    }
    #expect(firstChunkInTime.value == 1, "the first append went with the first token")
    #expect(calls.value == 2)
    #expect(attachment.owner == "user-1")
    #expect(attachment.source.bytes == 4_000_000 + (try Data(contentsOf: Self.jpeg).count))
    #expect(try await server.storedObjects() == 1)
    #expect(try await server.metric(#"attachd_rejections_total{code="token_expired"}"#) == 1)
    _ = proxy
  }

  @Test func attachmentMatchesTheServersOpenAPIRecord() async throws {
    let server = try LiveAttachd()
    let (data, _) = try await URLSession.shared.data(
      from: server.baseURL.appendingPathComponent("openapi.json"))
    let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
    func properties(_ schema: Any?) throws -> Set<String> {
      Set(try #require((schema as? [String: Any])?["properties"] as? [String: Any]).keys)
    }
    let record = schemas["Record"] as? [String: Any]
    #expect(try properties(record) == Attachment.jsonKeys)
    #expect(
      try properties((record?["properties"] as? [String: Any])?["source"]) == Attachment.Source.jsonKeys)
    #expect(try properties(schemas["ProfileImage"]) == Attachment.ProfileImage.jsonKeys)
    let fields = record?["properties"] as? [String: Any]
    #expect(try properties(fields?["video"]) == Attachment.Video.jsonKeys)
    let video = (fields?["video"] as? [String: Any])?["properties"] as? [String: Any]
    #expect(try properties(video?["mp4"]) == Attachment.MP4.jsonKeys)
    #expect(try properties((fields?["frames"] as? [String: Any])?["items"]) == Attachment.Frame.jsonKeys)
  }
}

/// Counts calls from any thread.
final class Counter: @unchecked Sendable {
  private let lock = NSLock()
  private var count = 0
  var value: Int { lock.withLock { count } }
  /// One more; returns the new count.
  func next() -> Int {
    lock.withLock {
      count += 1
      return count
    }
  }
}

/// The last progress an upload reported.
final class Progress: @unchecked Sendable {
  private let lock = NSLock()
  private var values: (Int64, Int64) = (0, 0)
  var last: Int64 { lock.withLock { values.0 } }
  var total: Int64 { lock.withLock { values.1 } }
  func record(_ sent: Int64, _ total: Int64) { lock.withLock { values = (sent, total) } }
}

extension Result where Failure == any Error {
  init(catching body: () async throws -> Success) async {
    do { self = .success(try await body()) } catch { self = .failure(error) }
  }
}
