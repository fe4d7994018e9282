private import Crypto
import Foundation
import Glibc

/// A client for one bucket of an S3-compatible object store, over libcurl.
///
/// Requests are path-style (`<endpoint>/<bucket>/<key>`) and signed with SigV4 by libcurl
/// (CURLOPT_AWS_SIGV4). libcurl 7.88 signs the path and query exactly as the URL spells them and
/// does not hash an uploaded body, so this client encodes keys and sorts queries canonically
/// (`S3URI`) and sends `x-amz-content-sha256` with the body's real SHA-256 (never
/// UNSIGNED-PAYLOAD: S3 then verifies every byte it stores).
///
/// Every method may be called from many threads at once. Each attempt has a connect, an idle and
/// a total timeout; connection failures, timeouts and 5xx answers are retried with exponential
/// backoff and full jitter, a 4xx never. Errors are `StorageError`: `.notFound`, `.unavailable`
/// (unreachable, timing out or 5xx after every retry), `.conflict`, `.invalidArgument`, or `.io`
/// for anything else the server refused. No error or description holds a credential.
public final class S3Client: Sendable {
  /// The settings this client was made with.
  public let configuration: Configuration
  let pool: CurlHandlePool
  let bucketURL: String
  let signing: String

  /// The SHA-256 of no bytes: the payload hash of a request without a body.
  public static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
  /// The longest key S3 accepts, in UTF-8 bytes.
  public static let maximumKeyLength = 1024
  // XML answers (listings, upload ids, errors) are small; a longer one is not S3 talking.
  static let xmlLimit = 16 * 1024 * 1024

  /// A client for `configuration` (validated here); opens no connection yet.
  public init(configuration: Configuration) throws {
    try configuration.validate()
    self.configuration = configuration
    self.pool = CurlHandlePool(capacity: configuration.maxIdleConnections)
    var endpoint = configuration.endpoint
    while endpoint.hasSuffix("/") { endpoint.removeLast() }
    self.bucketURL = endpoint + "/" + configuration.bucket
    self.signing = "aws:amz:\(configuration.region):s3"
  }

  /// The libcurl in use (`libcurl/7.88.1 OpenSSL/3.0.x …`), for the start-up log.
  public static var libraryVersion: String { CurlEasy.version }

  // MARK: - Objects

  /// Stores `body` under `key` with one PUT; returns the ETag.
  ///
  /// `sha256` (lower-case hex), when given, must be the body's hash: it is sent as
  /// `x-amz-content-sha256` and S3 refuses bytes that do not match it. Without it the body is
  /// hashed first (a file is then read twice).
  @discardableResult
  public func putObject(_ key: String, body: S3Body, sha256: String? = nil, contentType: String? = nil)
    throws -> String?
  {
    try Self.checkKey(key)
    return try withUpload(body, sha256: sha256) { source, hash in
      var headers: [(String, String)] = []
      if let contentType { headers.append(("Content-Type", contentType)) }
      let response = try send("PUT \(key)") {
        S3Request(method: "PUT", key: key, headers: headers, upload: source, payloadSHA256: hash)
      }
      try check(response, "PUT \(key)")
      return response.headers["etag"]
    }
  }

  /// Streams the object's bytes (or those in `range`, clamped to the object) to `body`, in order.
  ///
  /// `start` is called once, before the first byte, with the object's size and the range that
  /// will be delivered. A connection lost mid-body is resumed where it stopped (with `If-Match`,
  /// so a changed object is never spliced), so `body` sees each byte exactly once. An error
  /// `start` or `body` throws ends the read and is rethrown. Throws `.notFound` when absent.
  @discardableResult
  public func getObject(
    _ key: String, range: Range<Int>? = nil, start: (S3ReadStart) throws -> Void = { _ in },
    body: (UnsafeRawBufferPointer) throws -> Void
  ) throws -> S3ReadStart {
    try Self.checkKey(key)
    if let range {
      guard range.lowerBound >= 0 else { throw StorageError(.invalidArgument, "negative range start") }
      // No byte wanted: S3 would answer 416 to "bytes=n-(n-1)", so only learn the size.
      if range.isEmpty { return try emptyRead(key, at: range.lowerBound, start: start) }
    }
    var read = RangedRead(requested: range)
    let response = try withoutActuallyEscaping(start) { start in
      try withoutActuallyEscaping(body) { body in
        try send(
          "GET \(key)", onResponse: { try read.begin($0, start: start) },
          onBody: { try read.deliver($0, to: body) }
        ) {
          S3Request(method: "GET", key: key, headers: read.resumeHeaders())
        }
      }
    }
    if response.status == 416 {
      // The object exists but the range starts at or past its end: nothing to deliver.
      if let started = read.started, started.range.isEmpty { return started }
      return try emptyRead(key, at: range?.lowerBound ?? 0, start: start)
    }
    try check(response, "GET \(key)")
    guard let started = read.started, read.delivered == started.range.count else {
      throw StorageError(.unavailable, "S3 GET \(key): the response ended before the range did")
    }
    return started
  }

  /// The object's size, date and ETag, or nil when there is no such object.
  public func headObject(_ key: String) throws -> S3ObjectInfo? {
    try Self.checkKey(key)
    let response = try send("HEAD \(key)") { S3Request(method: "HEAD", key: key) }
    if response.status == 404 { return nil }
    try check(response, "HEAD \(key)")
    guard let size = response.headers["content-length"].flatMap({ Int($0) }),
      let modified = response.headers["last-modified"].flatMap(S3Date.parseHTTP)
    else {
      throw StorageError(.io, "S3 HEAD \(key): no Content-Length or Last-Modified in the answer")
    }
    return S3ObjectInfo(key: key, size: size, lastModified: modified, etag: response.headers["etag"])
  }

  /// Removes the object. S3 answers the same whether or not it existed, so this cannot tell.
  public func deleteObject(_ key: String) throws {
    try Self.checkKey(key)
    let response = try send("DELETE \(key)") { S3Request(method: "DELETE", key: key) }
    try check(response, "DELETE \(key)")
  }

  /// Copies `source` onto `key` inside the bucket, server-side; with `source == key` it renews
  /// the object's Last-Modified date (its metadata is replaced, which S3 requires for a self-copy).
  public func copyObject(from source: String, to key: String) throws {
    try Self.checkKey(source)
    try Self.checkKey(key)
    let headers = [
      ("x-amz-copy-source", "/\(configuration.bucket)/\(S3URI.encodePath(source))"),
      ("x-amz-metadata-directive", "REPLACE"),
    ]
    // S3 can fail a copy after its 200 header went out: the body is then an <Error>.
    let response = try send("COPY \(source) to \(key)", retryOn: Self.isRetryableWithErrorBody) {
      S3Request(method: "PUT", key: key, headers: headers, upload: Self.noBody)
    }
    try check(response, "COPY \(source) to \(key)", errorBodyIsFailure: true)
  }

  /// One page of the keys under `prefix`, in key order (ListObjectsV2).
  public func listObjects(prefix: String, continuationToken: String? = nil, maxKeys: Int = 1000) throws
    -> S3ObjectPage
  {
    guard (1...1000).contains(maxKeys) else { throw StorageError(.invalidArgument, "maxKeys must be 1-1000") }
    // Keys come back percent-encoded (encoding-type=url): XML cannot carry every byte a key may hold.
    var query = [
      ("list-type", "2"), ("prefix", prefix), ("max-keys", String(maxKeys)), ("encoding-type", "url"),
    ]
    if let continuationToken { query.append(("continuation-token", continuationToken)) }
    let response = try send("LIST \(prefix)") {
      S3Request(method: "GET", key: nil, query: query, bodyLimit: Self.xmlLimit)
    }
    try check(response, "LIST \(prefix)")
    let root = try Self.parseXML(response, "LIST \(prefix)")
    var objects: [S3ObjectInfo] = []
    for entry in root.children("Contents") {
      guard let encoded = entry.value("Key"), let key = S3URI.decode(encoded, plusIsSpace: true),
        let size = entry.value("Size").flatMap({ Int($0) }),
        let modified = entry.value("LastModified").flatMap(S3Date.parseISO8601)
      else {
        throw StorageError(.io, "S3 LIST \(prefix): an entry without a valid Key, Size or LastModified")
      }
      objects.append(S3ObjectInfo(key: key, size: size, lastModified: modified, etag: entry.value("ETag")))
    }
    let truncated = root.value("IsTruncated") == "true"
    let token = truncated ? root.value("NextContinuationToken") : nil
    if truncated, token?.isEmpty ?? true {
      throw StorageError(.io, "S3 LIST \(prefix): a truncated page without a continuation token")
    }
    return S3ObjectPage(objects: objects, nextContinuationToken: token)
  }

  /// Calls `body` with every object under `prefix`, page by page (`pageSize` keys per request).
  public func forEachObject(prefix: String, pageSize: Int = 1000, _ body: (S3ObjectInfo) throws -> Void)
    throws
  {
    var token: String? = nil
    repeat {
      let page = try listObjects(prefix: prefix, continuationToken: token, maxKeys: pageSize)
      for object in page.objects { try body(object) }
      token = page.nextContinuationToken
    } while token != nil
  }

  /// Creates the bucket; succeeds when this account already owns it.
  public func createBucket() throws {
    var document: [UInt8] = []
    // us-east-1 is S3's default location and must not be named; any other region must be.
    if configuration.region != "us-east-1" {
      document = Array(
        ("<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
          + "<LocationConstraint>\(configuration.region)</LocationConstraint></CreateBucketConfiguration>")
          .utf8)
    }
    let response = try document.withUnsafeBytes { bytes in
      try send("CREATE BUCKET") {
        S3Request(
          method: "PUT", key: nil, upload: .memory(bytes), payloadSHA256: Hex.encode(SHA256.hash(bytes)))
      }
    }
    if response.status == 409, Self.errorCode(response) == "BucketAlreadyOwnedByYou" { return }
    try check(response, "CREATE BUCKET")
  }

  // MARK: - Helpers shared with the multipart calls

  /// Runs `run` with the body as an upload source and its SHA-256 hex.
  func withUpload<Result>(
    _ body: S3Body, sha256: String?, _ run: (UploadSource, String) throws -> Result
  ) throws -> Result {
    if let sha256, BlobHash(hex: sha256) == nil {
      throw StorageError(.invalidArgument, "sha256 must be 64 lower-case hex digits")
    }
    switch body {
    case .bytes(let bytes):
      return try run(.memory(bytes), sha256 ?? Hex.encode(SHA256.hash(bytes)))
    case .file(let path, let range):
      let descriptor = try FileSystem.open(path, O_RDONLY)
      defer { FileSystem.close(descriptor) }
      let size = Int(try FileSystem.status(descriptor, path: path).st_size)
      let window = range ?? 0..<size
      guard window.lowerBound >= 0, window.upperBound <= size else {
        throw StorageError(.invalidArgument, "range \(window) is outside \(path) (\(size) bytes)")
      }
      let hash = try sha256 ?? Self.hashFile(descriptor, path: path, window: window)
      return try run(
        .file(descriptor: descriptor, path: path, offset: window.lowerBound, count: window.count), hash)
    case .descriptor(let descriptor, let window):
      let path = "(open file \(descriptor))"
      let size = Int(try FileSystem.status(descriptor, path: path).st_size)
      guard window.lowerBound >= 0, window.upperBound <= size else {
        throw StorageError(.invalidArgument, "range \(window) is outside \(path) (\(size) bytes)")
      }
      let hash = try sha256 ?? Self.hashFile(descriptor, path: path, window: window)
      return try run(
        .file(descriptor: descriptor, path: path, offset: window.lowerBound, count: window.count), hash)
    }
  }

  static func checkKey(_ key: String) throws {
    guard (1...maximumKeyLength).contains(key.utf8.count) else {
      throw StorageError(.invalidArgument, "an S3 key must be 1-\(maximumKeyLength) UTF-8 bytes")
    }
  }

  private static func hashFile(_ descriptor: Int32, path: String, window: Range<Int>) throws -> String {
    let hasher = SHA256()
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
    defer { chunk.deallocate() }
    var offset = window.lowerBound
    while offset < window.upperBound {
      let wanted = UnsafeMutableRawBufferPointer(
        rebasing: chunk[0..<min(chunk.count, window.upperBound - offset)])
      let count = try FileSystem.readAll(descriptor, into: wanted, at: offset, path: path)
      guard count == wanted.count else {
        throw StorageError(.io, "\(path) became shorter while it was hashed")
      }
      hasher.update(UnsafeRawBufferPointer(wanted))
      offset += count
    }
    return hasher.finalizeHex()
  }

  private func emptyRead(_ key: String, at offset: Int, start: (S3ReadStart) throws -> Void) throws
    -> S3ReadStart
  {
    guard let info = try headObject(key) else { throw StorageError(.notFound, "S3 object \(key)") }
    let position = min(offset, info.size)
    let started = S3ReadStart(objectSize: info.size, range: position..<position, etag: info.etag)
    try start(started)
    return started
  }
}
