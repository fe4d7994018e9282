import Foundation
import ImagePipeline
import PipelineSandbox
import Server
import Storage
import Synchronization
import VideoPipeline

/// Each node's worker for video MP4 renditions: a thread that claims one job at a time from the
/// index (any node's upload, `FOR UPDATE SKIP LOCKED` on PostgreSQL), makes the MP4 in a sandbox
/// child from the kept source, stores it and finishes the job, renewing its lease while the
/// child encodes.
///
/// Durability: a job lives in the index from the upload's 201 on. A node that dies mid-encode
/// stops renewing; its lease lapses after `lease` and another node's worker (or the same node
/// restarted: a node requeues its own running jobs at start) claims the job again. A finish
/// counts only while the finisher still holds the job, so a frozen node that wakes after a
/// takeover changes nothing. A job claimed more than `maxAttempts` times (a source that kills
/// every child that tries it) is failed instead of run again.
public final class VideoRenditionWorker: Sendable {
  /// How long a claim holds a job without a renewal, and how often a running job renews it.
  static let lease: TimeInterval = 30
  static let renewal: TimeInterval = 10
  /// How often an idle worker looks for jobs other nodes queued (its own wake it at once).
  static let poll: TimeInterval = 2
  static let maxAttempts = 3
  /// The longest one encode may take (a 5-minute 4K source, on one core, with room).
  static let deadline: Duration = .seconds(1800)

  private let store: AttachmentStore
  private let video: SandboxedVideo
  private let settings: VideoRenditionSettings
  /// `node/`: every claim's holder starts with it, so a restarted node finds its own jobs.
  private let holderPrefix: String
  /// Whether this node's own running jobs are requeued at start (true where nodes share the
  /// index, so only ours; false on SQLite, which one process at a time uses: all of them).
  private let scratchDirectory: String
  private let requeuePrefix: String
  private let eventLog: EventLog
  private let wakeup = DispatchSemaphore(value: 0)
  private let stopped = Atomic<Bool>(false)
  private let started = Atomic<Bool>(false)
  private let finished = DispatchSemaphore(value: 0)
  /// Cancels the running encode when the worker stops.
  private let cancellation = RequestCancellation()

  init(
    store: AttachmentStore, video: SandboxedVideo, settings: VideoRenditionSettings, node: String,
    sharedIndex: Bool, scratchDirectory: String, eventLog: EventLog
  ) {
    self.store = store
    self.video = video
    self.settings = settings
    self.holderPrefix = node + "/"
    self.requeuePrefix = sharedIndex ? node + "/" : ""
    self.scratchDirectory = scratchDirectory
    self.eventLog = eventLog
  }

  /// Requeues this node's jobs a previous run left running, then starts the thread.
  func start() {
    guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
    do {
      let requeued = try store.index.requeueVideoJobs(holderPrefix: requeuePrefix)
      if requeued > 0 { eventLog.info("video jobs requeued", fields: [("jobs", String(requeued))]) }
    } catch {
      eventLog.warning("video jobs not requeued", fields: [("detail", String(describing: error))])
    }
    Thread.detachNewThread { [self] in
      while !stopped.load(ordering: .acquiring) {
        if !runOne() { _ = wakeup.wait(timeout: .now() + Self.poll) }
      }
      finished.signal()
    }
  }

  /// Looks for a job now (an upload on this node just queued one).
  func wake() { wakeup.signal() }

  /// Stops the thread; a running encode is stopped and its job left for a lease to free.
  func stop() {
    guard started.load(ordering: .acquiring), !stopped.exchange(true, ordering: .acquiringAndReleasing) else {
      return
    }
    cancellation.cancel()
    wakeup.signal()
    finished.wait()
  }

  /// Claims and runs one job; false when there was none (or the index could not be asked).
  func runOne() -> Bool {
    let holder = holderPrefix + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    let job: VideoJob
    do {
      guard let claimed = try store.index.claimVideoJob(holder: holder, now: store.now, lease: Self.lease)
      else {
        return false
      }
      job = claimed
    } catch {
      eventLog.warning("video job claim failed", fields: [("detail", String(describing: error))])
      return false
    }
    let outcome = run(job, holder: holder)
    if stopped.load(ordering: .acquiring), outcome == nil { return true }
    let (state, code) = outcome ?? (.failed, "internal_error")
    do {
      let counted = try store.index.finishVideoJob(
        attachment: job.attachment, holder: holder, state: state, code: code, releasing: VideoFacts.sourceName
      )
      eventLog.info(
        counted ? "video rendition finished" : "video rendition superseded",
        fields: [("attachment", job.attachment), ("state", state.rawValue), ("code", code ?? "")])
    } catch {
      // The lease lapses and another claim runs the job again.
      eventLog.warning("video job not finished", fields: [("detail", String(describing: error))])
    }
    return true
  }

  /// The MP4 of `job`'s source, stored: `ready`, or `failed` with the code a client sees; nil
  /// when the worker was stopped mid-encode (the job is left to its lease).
  private func run(_ job: VideoJob, holder: String) -> (VideoJob.State, String?)? {
    guard job.attempts <= Self.maxAttempts else { return (.failed, "rendition_failed") }
    do {
      guard let record = try store.get(tenant: job.tenant, id: job.attachment),
        let source = try store.renditions(of: record)[VideoFacts.sourceName]
      else { return (.failed, "not_found") }
      let renewing = Renewal(index: store.index, job: job, holder: holder, clock: { [store] in store.now })
      renewing.start()
      defer { renewing.stop() }
      let mp4 = try store.withMappedBlob(source.blob, scratchDirectory: scratchDirectory) { input, file in
        try video.rendition(
          input, file: file.map { ($0, 0..<input.count) }, settings: settings, deadline: Self.deadline,
          cancellation: cancellation)
      }
      guard !renewing.lost else { return (.failed, "rendition_superseded") }
      let size = Self.size(ofRendition: record, settings: settings)
      guard
        try store.storeRendition(
          of: record, profile: VideoFacts.mp4Name, bytes: mp4, width: size.width, height: size.height) != nil
      else { return (.failed, "not_found") }
      return (.ready, nil)
    } catch let error as VideoError {
      if stopped.load(ordering: .acquiring) { return nil }
      return (.failed, error.code)
    } catch {
      if stopped.load(ordering: .acquiring) { return nil }
      eventLog.warning(
        "video rendition failed",
        fields: [("attachment", job.attachment), ("detail", String(describing: error))])
      return (.failed, ErrorTable.publicError(for: error).code)
    }
  }

  /// The rendition's upright size: the record's poster's shape within `maxEdge`, even sides.
  static func size(ofRendition record: AttachmentRecord, settings: VideoRenditionSettings) -> (
    width: Int, height: Int
  ) {
    guard let facts = VideoFacts(details: record.details), facts.width > 0, facts.height > 0 else {
      return (record.width, record.height)
    }
    let scale = min(1, Double(settings.maxEdge) / Double(max(facts.width, facts.height)))
    func even(_ value: Double) -> Int { max(2, Int((value / 2).rounded()) * 2) }
    return (even(Double(facts.width) * scale), even(Double(facts.height) * scale))
  }

  /// Renews a claim every `VideoRenditionWorker.renewal` seconds on a thread of its own while
  /// the encode runs; `lost` once the claim is gone (another node took the job over).
  private final class Renewal: Sendable {
    let index: any AttachmentIndex
    let job: VideoJob
    let holder: String
    let clock: @Sendable () -> Date
    private let done = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)
    private let lostClaim = Atomic<Bool>(false)

    init(index: any AttachmentIndex, job: VideoJob, holder: String, clock: @escaping @Sendable () -> Date) {
      self.index = index
      self.job = job
      self.holder = holder
      self.clock = clock
    }

    var lost: Bool { lostClaim.load(ordering: .acquiring) }

    func start() {
      Thread.detachNewThread { [self] in
        while done.wait(timeout: .now() + VideoRenditionWorker.renewal) == .timedOut {
          let held =
            (try? index.renewVideoJob(
              attachment: job.attachment, holder: holder, now: clock(), lease: VideoRenditionWorker.lease))
            ?? true
          if !held { lostClaim.store(true, ordering: .releasing) }
        }
        exited.signal()
      }
    }

    func stop() {
      done.signal()
      exited.wait()
    }
  }
}
