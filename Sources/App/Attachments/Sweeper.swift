import Foundation
import Storage
import Synchronization

/// A background thread that calls `store.sweep()` (and deletes expired uploads, aborting their
/// multipart uploads on S3) every `interval` seconds until stopped. Nodes sharing an index may
/// all sweep at once: every row and blob goes exactly once (see `AttachmentIndex`).
public final class Sweeper: Sendable {
  private let store: AttachmentStore
  private let uploads: (any UploadStore)?
  private let interval: Double
  private let eventLog: EventLog
  private let wake = DispatchSemaphore(value: 0)
  private let stopped = Atomic<Bool>(false)
  private let finished = DispatchSemaphore(value: 0)

  /// A sweeper for `store` and `uploads` (not yet running).
  public init(store: AttachmentStore, uploads: (any UploadStore)? = nil, interval: Double, eventLog: EventLog)
  {
    self.store = store
    self.uploads = uploads
    self.interval = interval
    self.eventLog = eventLog
  }

  /// Starts the thread; the first sweep runs one interval from now.
  public func start() {
    Thread.detachNewThread { [self] in
      while !stopped.load(ordering: .acquiring) {
        _ = wake.wait(timeout: .now() + interval)
        if stopped.load(ordering: .acquiring) { break }
        sweepOnce()
      }
      finished.signal()
    }
  }

  /// One sweep now, its outcome logged.
  public func sweepOnce() {
    do {
      let report = try store.sweep()
      let expiredUploads = try uploads?.deleteAllExpired() ?? 0
      eventLog.info(
        "swept",
        fields: [
          ("expired", String(report.expiredAttachments)), ("blobs_deleted", String(report.deletedBlobs)),
          ("bytes_deleted", String(report.deletedBlobBytes)), ("uploads_expired", String(expiredUploads)),
        ])
    } catch {
      eventLog.warning("sweep failed", fields: [("detail", String(describing: error))])
    }
    guard let uploads else { return }
    do {
      let expired = try uploads.deleteAllExpired()
      if expired > 0 { eventLog.info("uploads expired", fields: [("deleted", String(expired))]) }
    } catch {
      eventLog.warning("upload sweep failed", fields: [("detail", String(describing: error))])
    }
  }

  /// Stops the thread and waits for a running sweep to finish.
  public func stop() {
    guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
    wake.signal()
    finished.wait()
  }
}
