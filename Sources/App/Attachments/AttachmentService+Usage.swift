import HTTP
import Storage
import Uploads

extension AttachmentService {
  /// Counts an upload's files and bytes against its token's and user's allowances before any
  /// image is decoded (on the worker thread: the counters are in the index).
  func reserveUsage(_ upload: ReceivedUpload, principal: Principal) -> Result<UsageLimiter.Hold, any Error> {
    guard principal.user != nil else { return .success(.none) }
    let bytes = upload.parts.reduce(0) { $0 + $1.count }
    do {
      return try access.usage.reserve(
        for: principal, files: upload.parts.count, bytes: bytes, store: store, now: store.now
      ).mapError { $0 }
    } catch {
      return .failure(error)
    }
  }

  /// Gives back the files (and their bytes) that were refused, so a failed image does not use
  /// up a token or a day. A failure to give back is logged: it only errs against the user.
  func giveBack(_ failed: UsageAmount, of hold: UsageLimiter.Hold, requestID: String) {
    guard !hold.keys.isEmpty, failed.files > 0 else { return }
    do {
      try access.usage.release(hold, files: failed.files, bytes: failed.bytes, store: store)
    } catch {
      eventLog.error(
        "usage not given back", requestID: requestID, code: "storage_error", detail: String(describing: error)
      )
    }
  }
}
