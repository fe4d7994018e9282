import Foundation

/// A video's MP4 rendition as a durable job in the index: queued with the upload, claimed by any
/// node's worker under a lease it renews while it encodes, and finished `ready` or `failed`
/// (with a code). A job whose lease lapses (its node died or froze) is claimed again by another
/// worker; a finish only counts while the finisher's own claim holds the job (fencing: a node
/// that comes back after a takeover changes nothing).
public struct VideoJob: Sendable, Hashable {
  public enum State: String, Sendable, Hashable {
    case queued, running, ready, failed
  }

  /// The attachment the rendition is made for (one job each).
  public var attachment: String
  public var tenant: String
  public var state: State
  /// Why it failed (a stable problem code); nil otherwise.
  public var code: String?
  /// The claim running it: `node/random`, new for every claim; nil unless running.
  public var holder: String?
  /// Claims so far (a job claimed too often is failed instead of run again).
  public var attempts: Int

  public init(
    attachment: String, tenant: String, state: State, code: String? = nil, holder: String? = nil,
    attempts: Int = 0
  ) {
    self.attachment = attachment
    self.tenant = tenant
    self.state = state
    self.code = code
    self.holder = holder
    self.attempts = attempts
  }
}

/// The index's side of video jobs (both backends).
public protocol VideoJobIndex: Sendable {
  /// Queues the job of `attachment` (a second enqueue of the same attachment changes nothing).
  func enqueueVideoJob(attachment: String, tenant: String, now: Date) throws
  /// Claims the oldest queued job, or a running one whose lease has lapsed, for `holder` until
  /// `now + lease`; nil when there is none.
  func claimVideoJob(holder: String, now: Date, lease: TimeInterval) throws -> VideoJob?
  /// Extends `holder`'s claim; false when it no longer holds the job.
  func renewVideoJob(attachment: String, holder: String, now: Date, lease: TimeInterval) throws -> Bool
  /// Ends `holder`'s claim as `state` (`ready` or `failed` with `code`) and drops the rendition
  /// `releasing` (the kept source) with its blob reference, in one transaction; false (and
  /// nothing changed) when `holder` no longer holds the job.
  func finishVideoJob(
    attachment: String, holder: String, state: VideoJob.State, code: String?, releasing: String
  ) throws -> Bool
  /// The job of `attachment`, if it has one.
  func videoJob(attachment: String) throws -> VideoJob?
  /// Puts the running jobs whose holder starts with `prefix` back in the queue (a node's own, at
  /// its start: it cannot be running them any more).
  func requeueVideoJobs(holderPrefix prefix: String) throws -> Int
}
