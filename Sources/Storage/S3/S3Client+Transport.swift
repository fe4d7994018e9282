import Foundation

/// One S3 request before encoding and signing.
struct S3Request {
  var method: String
  /// The object key, or nil for a request on the bucket itself.
  var key: String?
  var query: [(name: String, value: String)] = []
  var headers: [(name: String, value: String)] = []
  var upload: UploadSource? = nil
  /// The body's SHA-256 hex, sent as `x-amz-content-sha256` and so covered by the signature.
  var payloadSHA256 = S3Client.emptySHA256
  /// How much of a body that is not streamed to a callback is kept.
  var bodyLimit = 64 * 1024
}

/// The final answer to a request.
struct S3Response {
  var status: Int
  /// Header values by lower-cased name.
  var headers: [String: String]
  /// The body, unless it was streamed to a callback.
  var body: [UInt8]
  var bodyTruncated: Bool
}

extension S3Client {
  /// Sends the request `makeRequest` builds (again for each attempt) and returns the first
  /// answer that is not worth retrying.
  ///
  /// Retried: connection failures and timeouts, and answers `retryOn` accepts (5xx by default),
  /// up to `retry.maxAttempts` attempts in all with jittered exponential backoff. A 4xx is
  /// returned, never retried. An error `onResponse` or `onBody` throws is rethrown at once.
  func send(
    _ operation: String, retryOn: (S3Response) -> Bool = { $0.status >= 500 },
    onResponse: ((ResponseHead) throws -> Void)? = nil,
    onBody: ((UnsafeRawBufferPointer) throws -> Void)? = nil,
    _ makeRequest: () throws -> S3Request
  ) throws -> S3Response {
    let retry = configuration.retry
    var attempt = 1
    while true {
      let request = try makeRequest()
      let transfer = CurlTransfer(
        upload: request.upload, bodyLimit: request.bodyLimit, onResponse: onResponse, onBody: onBody)
      let outcome = try pool.withHandle { $0.perform(exchange(for: request), transfer: transfer) }
      if let error = transfer.callbackError { throw error }
      let reason: String
      switch outcome {
      case .success(let status):
        let response = S3Response(
          status: status, headers: transfer.headers, body: transfer.body,
          bodyTruncated: transfer.bodyTruncated)
        guard retryOn(response) else { return response }
        reason = "HTTP \(status)\(errorSummary(response))"
      case .failure(let failure):
        guard failure.isTransient else {
          throw StorageError(.io, configuration.redact("S3 \(operation): \(failure.message)"))
        }
        reason = failure.message
      }
      guard attempt < retry.maxAttempts else {
        let tries = attempt == 1 ? "" : " (\(attempt) attempts)"
        throw StorageError(.unavailable, configuration.redact("S3 \(operation): \(reason)\(tries)"))
      }
      attempt += 1
      Thread.sleep(forTimeInterval: retry.delay(beforeAttempt: attempt))
    }
  }

  /// Throws the `StorageError` a non-2xx answer (or, with `errorBodyIsFailure`, a 200 whose body
  /// is an S3 `<Error>`) stands for.
  func check(_ response: S3Response, _ operation: String, errorBodyIsFailure: Bool = false) throws {
    let failed = !(200..<300).contains(response.status) || (errorBodyIsFailure && Self.hasErrorBody(response))
    guard failed else { return }
    let s3Code = Self.errorCode(response)
    let code: StorageError.Code
    switch response.status {
    case 404 where s3Code == "NoSuchBucket": code = .io  // configuration, not a missing blob
    case 404: code = .notFound
    case 409, 412: code = .conflict
    case 500...599: code = .unavailable
    case 200..<300: code = Self.isServerSide(s3Code) ? .unavailable : .io
    default: code = .io
    }
    throw StorageError(
      code, configuration.redact("S3 \(operation): HTTP \(response.status)\(errorSummary(response))"))
  }

  /// 5xx, or a 200 whose body is an `<Error>` of the server's side (S3 does that on a copy or a
  /// multipart completion that failed after the answer began).
  static func isRetryableWithErrorBody(_ response: S3Response) -> Bool {
    response.status >= 500 || (hasErrorBody(response) && isServerSide(errorCode(response)))
  }

  /// The root element of an XML answer.
  static func parseXML(_ response: S3Response, _ operation: String) throws -> XMLTree {
    guard !response.bodyTruncated else {
      throw StorageError(.io, "S3 \(operation): an answer longer than \(xmlLimit) bytes")
    }
    return try XMLTree.parse(response.body)
  }

  /// The `<Code>` of an S3 error body, when there is one.
  static func errorCode(_ response: S3Response) -> String? {
    guard hasErrorBody(response), let tree = try? XMLTree.parse(response.body) else { return nil }
    return tree.value("Code")
  }

  private static func hasErrorBody(_ response: S3Response) -> Bool {
    // Cheap test first: only an <Error> document is parsed.
    guard response.body.count < 64 * 1024,
      String(decoding: response.body.prefix(256), as: UTF8.self).contains("<Error>")
    else { return false }
    return (try? XMLTree.parse(response.body))?.name == "Error"
  }

  private static func isServerSide(_ code: String?) -> Bool {
    ["InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout"].contains(code ?? "")
  }

  /// ` NoSuchKey: The specified key does not exist. (request 1234)` for a log line: the S3 code,
  /// message and request id only, never the rest of the body (AWS echoes the access key id and
  /// the string it signed there), cleaned of control characters, credentials redacted.
  func errorSummary(_ response: S3Response) -> String {
    var summary = ""
    if let tree = try? XMLTree.parse(response.body), tree.name == "Error" {
      if let code = tree.value("Code") { summary += " " + Self.clean(code, limit: 64) }
      if let message = tree.value("Message") { summary += ": " + Self.clean(message, limit: 200) }
    }
    if let id = response.headers["x-amz-request-id"] { summary += " (request \(Self.clean(id, limit: 64)))" }
    return configuration.redact(summary)
  }

  private static func clean(_ text: String, limit: Int) -> String {
    String(
      String.UnicodeScalarView(
        text.unicodeScalars.prefix(limit).filter { $0.value >= 0x20 && $0.value != 0x7F }))
  }

  private func exchange(for request: S3Request) -> CurlExchange {
    var url = bucketURL
    if let key = request.key { url += "/" + S3URI.encodePath(key) }
    if !request.query.isEmpty { url += "?" + S3URI.query(request.query) }
    var headers = ["x-amz-content-sha256: \(request.payloadSHA256)"]
    headers += request.headers.map { "\($0.name): \($0.value)" }
    return CurlExchange(
      method: request.method, url: url, headers: headers, upload: request.upload, signing: signing,
      credentials: (configuration.accessKeyId, configuration.secretAccessKey),
      timeouts: configuration.timeouts)
  }
}

/// The bookkeeping of one GET that may take several attempts: which bytes of the wanted range
/// were delivered, where the current answer starts, and how to ask for the rest.
struct RangedRead {
  let requested: Range<Int>?
  private(set) var started: S3ReadStart?
  private(set) var delivered = 0
  // The object offset of the current answer's first byte, and how much of it went by.
  private var answerOffset = 0
  private var answerSeen = 0

  init(requested: Range<Int>?) { self.requested = requested }

  /// The Range (and If-Match) headers for the next attempt.
  func resumeHeaders() -> [(name: String, value: String)] {
    // The whole object was asked for and none of it arrived yet: ask again without a Range (an
    // empty object has no byte range to name).
    guard requested != nil || delivered > 0, let wanted = started?.range ?? requested else { return [] }
    var headers = [(name: "Range", value: "bytes=\(wanted.lowerBound + delivered)-\(wanted.upperBound - 1)")]
    if delivered > 0, let etag = started?.etag { headers.append((name: "If-Match", value: etag)) }
    return headers
  }

  /// A final answer's head: learns where its bytes start and, the first time, the object's size.
  mutating func begin(_ head: ResponseHead, start: (S3ReadStart) throws -> Void) throws {
    answerSeen = 0
    guard (200..<300).contains(head.status) else { return }
    let total: Int
    if head.status == 206 {
      // "bytes 10-19/1000"
      guard let value = head.headers["content-range"], value.hasPrefix("bytes "),
        let slash = value.firstIndex(of: "/"), let size = Int(value[value.index(after: slash)...]),
        let first = Int(value.dropFirst(6).prefix { $0 != "-" })
      else { throw StorageError(.io, "S3 GET: a 206 answer without a valid Content-Range") }
      answerOffset = first
      total = size
    } else {
      // A 200 carries the whole object (a server may ignore Range); the window below cuts it.
      guard let size = head.headers["content-length"].flatMap({ Int($0) }) else {
        throw StorageError(.io, "S3 GET: an answer without Content-Length")
      }
      answerOffset = 0
      total = size
    }
    if let started {
      guard started.objectSize == total else {
        throw StorageError(.conflict, "S3 GET: the object changed mid-read")
      }
      return
    }
    let wanted = (requested ?? 0..<total).clamped(to: 0..<total)
    let first = S3ReadStart(objectSize: total, range: wanted, etag: head.headers["etag"])
    started = first
    try start(first)
  }

  /// Hands `body` the part of `chunk` inside the wanted range that it has not had yet.
  mutating func deliver(_ chunk: UnsafeRawBufferPointer, to body: (UnsafeRawBufferPointer) throws -> Void)
    throws
  {
    guard let wanted = started?.range else { return }
    let chunkStart = answerOffset + answerSeen
    answerSeen += chunk.count
    let low = max(chunkStart, wanted.lowerBound + delivered)
    let high = min(chunkStart + chunk.count, wanted.upperBound)
    guard low < high else { return }
    try body(UnsafeRawBufferPointer(rebasing: chunk[(low - chunkStart)..<(high - chunkStart)]))
    delivered += high - low
  }
}
