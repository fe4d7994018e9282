import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// One request through `URLSession` with the bearer token, the token-refresh rule and the retry
/// rule of the client: every request of the package goes through `send`.
struct Transport: Sendable {
  let session: URLSession
  let tokens: TokenCache
  let retry: RetryPolicy

  /// Sends `request` (its body is `body`) and returns the answer; 2xx only, anything else is
  /// thrown as an `AttachdError`. A `401 token_expired` fetches one fresh token and sends again;
  /// 429, 503 and a lost connection are retried after `Retry-After` or the backoff when
  /// `retryable`.
  func send(
    _ request: URLRequest, body: Data? = nil, file: URL? = nil, progress: (any URLSessionTaskDelegate)? = nil,
    retryable: Bool = true
  ) async throws -> (Data, HTTPURLResponse) {
    var attempt = 0
    var refreshed = false
    while true {
      try Task.checkCancellation()
      var request = request
      request.setValue("Bearer \(try await tokens.current())", forHTTPHeaderField: "Authorization")
      request.httpBody = body
      let result: (Data, HTTPURLResponse)
      do {
        result = try await exchange(request, file: file, progress: progress)
      } catch let error as AttachdError {
        attempt += 1
        guard retryable, attempt < retry.attempts else { throw error }
        try await retry.wait(attempt: attempt, retryAfter: nil)
        continue
      }
      let (data, response) = result
      if (200..<300).contains(response.statusCode) { return result }
      let error = AttachdError.from(status: response.statusCode, body: data, headers: response)
      if error.status == 401, error.code == "token_expired", !refreshed {
        refreshed = true
        try await tokens.refresh()
        continue
      }
      attempt += 1
      guard retryable, error.isRetryable, attempt < retry.attempts else { throw error }
      try await retry.wait(attempt: attempt, retryAfter: error.retryAfter)
    }
  }

  /// One exchange; a transport failure becomes `connection_lost`, cancellation stays
  /// cancellation.
  func exchange(_ request: URLRequest, file: URL?, progress: (any URLSessionTaskDelegate)?) async throws -> (
    Data, HTTPURLResponse
  ) {
    let handle = CancellableTask()
    do {
      let (data, response) = try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation {
          (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
          let finish: @Sendable (Data?, URLResponse?, (any Error)?) -> Void = { data, response, error in
            if let error { return continuation.resume(throwing: error) }
            guard let response else { return continuation.resume(throwing: URLError(.badServerResponse)) }
            continuation.resume(returning: (data ?? Data(), response))
          }
          let task =
            if let file {
              session.uploadTask(with: request, fromFile: file, completionHandler: finish)
            } else {
              session.dataTask(with: request, completionHandler: finish)
            }
          task.delegate = progress
          handle.start(task)
        }
      } onCancel: {
        handle.cancel()
      }
      guard let http = response as? HTTPURLResponse else {
        throw AttachdError(status: 0, code: "invalid_response")
      }
      return (data, http)
    } catch let error as AttachdError {
      throw error
    } catch {
      if Task.isCancelled || (error as? URLError)?.code == .cancelled { throw CancellationError() }
      throw AttachdError.connectionLost(error)
    }
  }
}

/// The `URLSessionTask` of one exchange, cancelled when the Swift task is.
///
/// Why not `URLSession.data(for:)`'s own cancellation: in swift-corelibs-foundation its
/// cancellation handler calls `URLSessionTask.cancel()`, which waits for the session's work
/// queue while the Swift task's status lock is held; when the request completes at that moment,
/// the work queue resumes the continuation and waits for the same lock — a deadlock (seen in
/// `aCancelledUploadStoresNothing`, cancelled as an append was answered). Here the cancellation
/// handler only hands the cancel to another queue and returns.
final class CancellableTask: @unchecked Sendable {
  private let lock = NSLock()
  private var task: URLSessionTask?
  private var cancelled = false

  /// Resumes `task`, or cancels it when the Swift task was cancelled before it existed.
  func start(_ task: URLSessionTask) {
    let cancelled = lock.withLock {
      self.task = task
      return self.cancelled
    }
    task.resume()
    if cancelled { Self.cancelLater(task) }
  }

  func cancel() {
    let task: URLSessionTask? = lock.withLock {
      cancelled = true
      return self.task
    }
    if let task { Self.cancelLater(task) }
  }

  private static func cancelLater(_ task: URLSessionTask) {
    DispatchQueue.global().async { task.cancel() }
  }
}

/// How often and how long to wait before a request is sent again.
public struct RetryPolicy: Sendable {
  /// Tries in all, the first included.
  public var attempts: Int
  /// The first backoff; doubled each time, up to `maximumDelay`.
  public var initialDelay: Double
  public var maximumDelay: Double

  public init(attempts: Int = 5, initialDelay: Double = 0.5, maximumDelay: Double = 30) {
    self.attempts = attempts
    self.initialDelay = initialDelay
    self.maximumDelay = maximumDelay
  }

  /// Sleeps the server's `Retry-After` when it sent one (capped at `maximumDelay`), else the
  /// exponential backoff with jitter, so phones that lost one cell tower do not come back at
  /// once.
  func wait(attempt: Int, retryAfter: Double?) async throws {
    let backoff = min(maximumDelay, initialDelay * Double(1 << min(attempt - 1, 16)))
    let delay = retryAfter.map { min(maximumDelay, $0) } ?? backoff * Double.random(in: 0.5...1)
    try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
  }
}

/// The app's token, fetched from its provider when first needed and again once the server
/// says it expired.
actor TokenCache {
  private let provider: @Sendable () async throws -> String
  private var token: String?

  init(provider: @escaping @Sendable () async throws -> String) { self.provider = provider }

  func current() async throws -> String {
    if let token { return token }
    let fresh = try await provider()
    token = fresh
    return fresh
  }

  func refresh() async throws {
    token = try await provider()
  }
}
