private import CCurl
private import DelayLoadCurl
import Glibc
import Synchronization

/// One HTTP exchange as libcurl should run it; plain Swift values, so no C type leaves this file.
struct CurlExchange {
  /// GET, HEAD, PUT, POST or DELETE.
  var method: String
  /// The full URL, path and query already encoded exactly as they are to be signed.
  var url: String
  /// Extra request headers ("Name: value"); libcurl 7.88 signs every one of them.
  var headers: [String]
  /// The request body, or nil for none.
  var upload: UploadSource?
  /// `aws:amz:<region>:s3`: what CURLOPT_AWS_SIGV4 signs for.
  var signing: String
  /// The access key id and secret access key.
  var credentials: (user: String, password: String)
  /// Limits on one attempt.
  var timeouts: S3Client.Timeouts
}

/// How an attempt ended when no HTTP response came back.
struct CurlFailure: Error {
  /// True for failures a later attempt may not see: refused or reset connections, timeouts.
  var isTransient: Bool
  /// libcurl's error text (never holds a credential: curl does not print them).
  var message: String
}

/// One libcurl easy handle, owned here and freed in `deinit`.
///
/// A handle keeps its connections open between requests, so reusing handles (`CurlHandlePool`)
/// is what reuses connections. It is used by one thread at a time: the pool hands it out.
final class CurlEasy: @unchecked Sendable {
  private let handle: UnsafeMutableRawPointer
  // CURLOPT_ERRORBUFFER: libcurl writes a failure's detail here during a transfer.
  private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

  /// A new handle; libcurl is initialised once per process first.
  init() throws {
    try DelayedLibrary.curl()
    guard CurlEasy.globalInit else { throw StorageError(.io, "curl_global_init failed") }
    guard let handle = curl_easy_init() else { throw StorageError(.io, "curl_easy_init failed") }
    self.handle = handle
  }

  deinit {
    curl_easy_cleanup(handle)
    errorBuffer.deallocate()
  }

  // curl_global_init is not thread-safe; a static `let` runs it exactly once (swift_once).
  private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

  /// The libcurl version string (`libcurl/7.88.1 OpenSSL/3.0 …`), for logs.
  static var version: String { String(cString: curl_version()) }

  /// Runs one exchange; the response (status, headers, body) is left in `transfer`.
  func perform(_ exchange: CurlExchange, transfer: CurlTransfer) -> Result<Int, CurlFailure> {
    // Options of an earlier request (method, body size, callbacks) must not leak into this one;
    // reset keeps the handle's open connections.
    curl_easy_reset(handle)
    errorBuffer[0] = 0
    let headerList = exchange.headers.reduce(UnsafeMutablePointer<curl_slist>?.none) {
      curl_slist_append($0, $1)
    }
    defer { curl_slist_free_all(headerList) }
    let context = Unmanaged.passUnretained(transfer).toOpaque()

    var code = configure(exchange, headerList: headerList, context: context)
    if code == CURLE_OK { code = curl_easy_perform(handle) }
    // Drop every pointer into this call's memory before the handle goes back to the pool.
    _ = CCurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, nil)
    _ = CCurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, nil)

    if code == CURLE_OK {
      var status = 0
      _ = CCurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
      return .success(status)
    }
    let detail = String(cString: errorBuffer)
    let text = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    return .failure(CurlFailure(isTransient: Self.transientCodes.contains(code), message: text))
  }

  /// Errors of the network or of the server's side of the connection: a retry may succeed.
  private static let transientCodes: Set<CURLcode> = [
    CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_OPERATION_TIMEDOUT, CURLE_SEND_ERROR,
    CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_SSL_CONNECT_ERROR,
    CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_HTTP3,
  ]

  private func configure(
    _ exchange: CurlExchange, headerList: UnsafeMutablePointer<curl_slist>?, context: UnsafeMutableRawPointer
  ) -> CURLcode {
    let timeouts = exchange.timeouts
    var codes: [CURLcode] = [
      CCurl_setopt_string(handle, CURLOPT_URL, exchange.url),
      // Only HTTP(S), never redirected elsewhere (redirects are off by default; say so anyway).
      CCurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"),
      CCurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0),
      // The path is signed as given: curl must not merge "/./" or "/../" in an object key.
      CCurl_setopt_long(handle, CURLOPT_PATH_AS_IS, 1),
      // No SIGALRM-based timeouts: those are unsafe with many threads.
      CCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1),
      CCurl_setopt_long(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1),
      CCurl_setopt_string(handle, CURLOPT_AWS_SIGV4, exchange.signing),
      // Name and password apart rather than CURLOPT_USERPWD's "name:password": no string with
      // both is built, and a colon in either cannot split them wrongly.
      CCurl_setopt_string(handle, CURLOPT_USERNAME, exchange.credentials.user),
      CCurl_setopt_string(handle, CURLOPT_PASSWORD, exchange.credentials.password),
      CCurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headerList)),
      CCurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer)),
      CCurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, milliseconds(timeouts.connect)),
      CCurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, milliseconds(timeouts.request)),
      // An idle transfer: under 1 byte/s for `idle` seconds (curl's low-speed check is per second).
      CCurl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1),
      CCurl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, max(1, Int(timeouts.idle.rounded(.up)))),
      CCurl_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1),
      // Names are looked up again after 2 s, not curl's 60: a restarted S3 container (compose,
      // Kubernetes) comes back on a new address, and with the old one cached every request
      // timed out connecting for up to a minute (Scripts/staging restarts SeaweedFS).
      CCurl_setopt_long(handle, CURLOPT_DNS_CACHE_TIMEOUT, 2),
      CCurl_setopt_long(handle, CURLOPT_BUFFERSIZE, 256 * 1024),
      CCurl_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION, headerCallback),
      CCurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context),
      CCurl_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION, writeCallback),
      CCurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context),
    ]
    switch exchange.method {
    case "GET": codes.append(CCurl_setopt_long(handle, CURLOPT_HTTPGET, 1))
    case "HEAD": codes.append(CCurl_setopt_long(handle, CURLOPT_NOBODY, 1))
    default: codes.append(CCurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, exchange.method))
    }
    if let upload = exchange.upload {
      // A sized upload: curl sends Content-Length, never chunked (S3 refuses unsized PUTs).
      codes += [
        CCurl_setopt_long(handle, CURLOPT_UPLOAD, 1),
        CCurl_setopt_off_t(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(upload.count)),
        CCurl_setopt_long(handle, CURLOPT_UPLOAD_BUFFERSIZE, 1024 * 1024),
        CCurl_setopt_data_callback(handle, CURLOPT_READFUNCTION, readCallback),
        CCurl_setopt_pointer(handle, CURLOPT_READDATA, context),
        CCurl_setopt_seek_callback(handle, CURLOPT_SEEKFUNCTION, seekCallback),
        CCurl_setopt_pointer(handle, CURLOPT_SEEKDATA, context),
      ]
    }
    return codes.first { $0 != CURLE_OK } ?? CURLE_OK
  }

  private func milliseconds(_ seconds: Double) -> Int { max(1, Int((seconds * 1000).rounded(.up))) }
}

// The C callbacks: `context` is the unretained `CurlTransfer` of the running exchange, which
// outlives `curl_easy_perform`. Returning a count other than the one given aborts the transfer.

private let headerCallback: CCurl_data_callback = { buffer, size, count, context in
  let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
  let line = UnsafeRawBufferPointer(start: buffer, count: size * count)
  return transfer.receiveHeader(line) ? size * count : 0
}

private let writeCallback: CCurl_data_callback = { buffer, size, count, context in
  let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
  let bytes = UnsafeRawBufferPointer(start: buffer, count: size * count)
  return transfer.receiveBody(bytes) ? size * count : 0
}

private let readCallback: CCurl_data_callback = { buffer, size, count, context in
  let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
  let space = UnsafeMutableRawBufferPointer(start: buffer, count: size * count)
  return transfer.sendBody(into: space) ?? Int(CURL_READFUNC_ABORT)
}

private let seekCallback: curl_seek_callback = { context, offset, origin in
  let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
  guard origin == SEEK_SET, transfer.rewind(to: Int(offset)) else { return CURL_SEEKFUNC_CANTSEEK }
  return CURL_SEEKFUNC_OK
}

/// Easy handles kept for reuse, so that requests reuse their open connections.
///
/// A request takes a handle (the most recently returned one, whose connection is warmest) or
/// makes one when none is idle; at most `capacity` idle handles are kept.
final class CurlHandlePool: Sendable {
  private let idle = Mutex<[CurlEasy]>([])
  private let capacity: Int

  /// A pool that keeps at most `capacity` idle handles.
  init(capacity: Int) { self.capacity = capacity }

  /// Runs `body` with a handle of its own, returned to the pool afterwards.
  func withHandle<Result>(_ body: (CurlEasy) throws -> Result) throws -> Result {
    let easy = try idle.withLock { $0.popLast() } ?? CurlEasy()
    defer {
      idle.withLock { handles in
        if handles.count < capacity { handles.append(easy) }
      }
    }
    return try body(easy)
  }

  /// How many handles are idle now (for tests).
  var idleCount: Int { idle.withLock { $0.count } }
}
