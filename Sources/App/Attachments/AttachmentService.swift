import Crypto
import Foundation
import HTTP
import ImagePipeline
import PipelineSandbox
import Server
import Storage
import Synchronization
import Uploads
import VideoPipeline

/// The attachments API: what an upload's files become (`process`, a domain result the edge
/// renders), reads, deletes, signed links, and the numbers `/metrics` shows.
///
/// Read head decisions run on an event loop and only look at headers; index look-ups,
/// decoding, storing and deleting run on the worker pool (the file itself is sent with
/// `sendfile` by the loop).
public final class AttachmentService: Sendable {
  public let store: AttachmentStore
  /// The pipeline's settings and memory budget.
  public let pipeline: Pipeline
  /// Where every decode of an upload or a rendition runs: the decode sandbox.
  public let imaging: any ImageProcessing
  /// Where a video's stills are made: the same sandbox (nil: videos are refused with 503).
  public let video: SandboxedVideo?
  /// This node's worker for video MP4 renditions (woken when an upload queues one).
  let videoJobs: VideoRenditionWorker?
  public let access: AccessControl
  public let metrics: AttachdMetrics
  public let options: Application.AttachmentOptions
  let eventLog: EventLog
  /// Told when an answer says the data directory's volume is full (`/readyz`); nil when a
  /// full disk may be another server's.
  let volume: VolumeSpace?
  /// Where a multipart part that is a video is copied alone before it is kept as its source.
  let scratchDirectory: String
  private let statisticsCache = Mutex<(at: Date, value: IndexStatistics)?>(nil)

  /// Seconds `/metrics` reuses storage counts before asking the index again.
  static let statisticsLifetime: TimeInterval = 5

  public init(
    store: AttachmentStore, imaging: any ImageProcessing, video: SandboxedVideo?, access: AccessControl,
    metrics: AttachdMetrics, options: Application.AttachmentOptions, eventLog: EventLog, volume: VolumeSpace?,
    videoJobs: VideoRenditionWorker? = nil, scratchDirectory: String = NSTemporaryDirectory()
  ) {
    self.store = store
    self.scratchDirectory = scratchDirectory
    self.imaging = imaging
    self.video = video
    self.videoJobs = videoJobs
    self.pipeline = imaging.pipeline
    self.access = access
    self.metrics = metrics
    self.options = options
    self.eventLog = eventLog
    self.volume = volume
  }

  // MARK: - Upload

  /// Runs an upload's files through the pipeline and the store (on a worker thread): what the
  /// upload became, file by file. The user's allowances are counted first (refused files are
  /// given back); the pipeline stops between steps and tiles once `cancellation` is cancelled
  /// (the client left), and a stopped run stores nothing.
  func process(_ upload: ReceivedUpload, as caller: AttachmentCaller, cancellation: RequestCancellation)
    -> UploadOutcome
  {
    let hold: UsageLimiter.Hold
    switch reserveUsage(upload, principal: caller.principal) {
    case .failure(let error): return .refused(error)
    case .success(let reserved): hold = reserved
    }
    var failed = UsageAmount.zero
    // A Live Photo's still and movie in one multipart upload: the movie's part joins its still's.
    let movieOfStill = upload.multipart ? LivePhotoPairs.find(upload.parts) : [:]
    let pairedMovies = Set(movieOfStill.values)
    var results: [Result<StoredAttachment, any Error>?] = Array(repeating: nil, count: upload.parts.count)
    for (index, part) in upload.parts.enumerated() where !pairedMovies.contains(index) {
      let id = upload.attachmentID(part: index)
      if let movie = movieOfStill[index] {
        let (still, motion) = processLivePhoto(
          part, movie: upload.parts[movie], caller: caller, id: id, requestID: upload.requestID,
          cancellation: cancellation)
        results[index] = still
        if let motion { results[movie] = .failure(motion) }
      } else {
        results[index] = processOne(
          part, caller: caller, id: id, requestID: upload.requestID, cancellation: cancellation)
      }
    }
    for (index, result) in results.enumerated() {
      if case .failure? = result {
        failed.files += 1
        failed.bytes += upload.parts[index].count
      }
    }
    giveBack(failed, of: hold, requestID: upload.requestID)
    return .processed(multipart: upload.multipart, results)
  }

  /// Pipeline, then store (the image, then the renditions the request asked for); errors are
  /// returned, not thrown, so a multipart upload goes on. A run stopped by its deadline or
  /// `cancellation` stores nothing. A video (sniffed from its bytes) goes to `processVideo`.
  private func processOne(
    _ bytes: UploadedFile, caller: AttachmentCaller, id: String?, requestID: String,
    cancellation: RequestCancellation
  ) -> Result<StoredAttachment, any Error> {
    do {
      if bytes.withUnsafeBytes({ FormatSniffer.sniff($0) }) == .video {
        return .success(try processVideo(bytes, caller: caller, id: id, cancellation: cancellation))
      }
      return .success(try processImage(bytes, caller: caller, id: id, cancellation: cancellation))
    } catch {
      return .failure(logged(error, requestID: requestID))
    }
  }

  /// The still pipeline, then the store: the image as `kind` (with `details`), then the
  /// renditions the request asked for. `id` is the record's id when the upload names its
  /// attachments (`ReceivedUpload.attachmentID`): one stored before is returned, not doubled.
  func processImage(
    _ bytes: UploadedFile, caller: AttachmentCaller, id: String?, cancellation: RequestCancellation,
    kind: String = "image",
    details: String? = nil
  ) throws -> StoredAttachment {
    let image = try bytes.withUnsafeBytes {
      try imaging.process($0, profiles: caller.profiles, cancellation: cancellation)
    }
    for timing in image.timings {
      let (seconds, attoseconds) = timing.duration.components
      metrics.recordStage(timing.stage, seconds: Double(seconds) + Double(attoseconds) * 1e-18)
    }
    metrics.recordInputFormat(image.source.format)
    let source = Storage.SourceInfo(
      format: image.source.format, width: image.source.width, height: image.source.height,
      bytes: image.source.bytes, orientation: image.source.orientation,
      orientationSource: image.source.orientationSource.rawValue, colourProfile: image.source.colourProfile)
    let record = try store.store(
      tenant: caller.principal.tenant, owner: caller.principal.user, bytes: image.jpeg, width: image.width,
      height: image.height, source: source, kind: kind, details: details, id: id)
    return StoredAttachment(record: record, renditions: try storeRenditions(image.renditions, of: record))
  }

  /// `error`, its refusal logged first (the library's words go to the event log only; never
  /// the file name or any bytes).
  func logged(_ error: any Error, requestID: String) -> any Error {
    switch error {
    case let error as PipelineError:
      eventLog.info(
        "image refused",
        fields: [("request_id", requestID), ("code", error.code), ("detail", error.description)])
    case let error as VideoError:
      eventLog.info(
        "video refused", fields: [("request_id", requestID), ("code", error.code), ("detail", "\(error)")])
    default: break
    }
    return error
  }

  func signedURL(for record: AttachmentRecord) -> String {
    access.signer.make(id: record.id, tenant: record.tenant, now: Int(store.now.timeIntervalSince1970)).path
  }

  /// What a record shows: its renditions, `profile` at the top level, links as configured.
  ///
  /// A profile whose rendition could not be stored with the upload (logged; the next request
  /// for it makes it) is not described at the top level: the stored image is, as `default`.
  func view(_ record: AttachmentRecord, _ renditions: [String: Rendition], profile: ModelProfile)
    -> RecordView
  {
    let stored = (record.width, record.height)
    let missing =
      renditions[profile.rawValue] == nil && profile.size(ofStored: record.width, record.height) != stored
    return RecordView(
      record: record, renditions: renditions, profile: missing ? .default : profile,
      tenantDefault: options.profiles.defaultProfile(for: record.tenant), baseURL: options.publicBaseURL,
      signedPath: signedURL(for: record),
      videoJob: record.hasMotion ? try? store.index.videoJob(attachment: record.id) : nil)
  }

  // MARK: - Problems

  /// The problem response for `error`, counted by code; 5xx details go to the event log.
  func problem(_ error: any Error, requestID: String) -> HTTPResponse {
    ErrorTable.problemResponse(
      ErrorTable.publicError(for: error), for: error, requestID: requestID, log: eventLog, metrics: metrics,
      volume: volume)
  }

  func problem(_ error: any Error, _ context: RequestContext) -> HTTPResponse {
    problem(error, requestID: context.requestID)
  }

  // MARK: - Metrics

  /// Sets the gauges read at scrape time; storage counts are cached for a few seconds.
  func refreshGauges() {
    metrics.memoryBudgetBytesInUse.set(pipeline.configuration.memoryBudget.inUse)
    let now = Date()
    let cached = statisticsCache.withLock { cache -> IndexStatistics? in
      guard let cache, now.timeIntervalSince(cache.at) < Self.statisticsLifetime else { return nil }
      return cache.value
    }
    if let statistics = cached ?? (try? store.statistics()) {
      if cached == nil { statisticsCache.withLock { $0 = (now, statistics) } }
      metrics.storedObjects.set(statistics.attachments)
      metrics.storedBytes.set(statistics.blobBytes)
    }
  }
}

/// What an upload became, file by file: its files' results, or the refusal of the whole (the
/// user's allowances) before any was decoded.
enum UploadOutcome {
  case refused(any Error)
  /// One result per part, in order; nil for a part that joined another (a Live Photo's movie).
  case processed(multipart: Bool, [Result<StoredAttachment, any Error>?])
}

/// A stored attachment and the renditions stored with it, by profile name.
struct StoredAttachment {
  var record: AttachmentRecord
  var renditions: [String: Rendition]
}

extension Array where Element: Hashable {
  /// The elements in order, each once.
  func uniqued() -> [Element] {
    var seen = Set<Element>()
    return filter { seen.insert($0).inserted }
  }
}
