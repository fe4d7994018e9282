import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Tells an upload's progress callback what a task that sends a file body sent.
final class ProgressDelegate: NSObject, URLSessionTaskDelegate, Sendable {
  let report: @Sendable (Int64, Int64) -> Void

  init(_ report: @escaping @Sendable (Int64, Int64) -> Void) { self.report = report }

  func urlSession(
    _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
    totalBytesExpectedToSend: Int64
  ) {
    report(totalBytesSent, totalBytesExpectedToSend)
  }
}
