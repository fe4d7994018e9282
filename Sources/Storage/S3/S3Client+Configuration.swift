import Foundation

extension S3Client {
  /// Where the bucket is, how to sign for it, and how long and how often to try.
  ///
  /// `description` and `dump` show no credential: neither the secret nor the access key id.
  public struct Configuration: Sendable, CustomStringConvertible, CustomReflectable {
    /// `http://host:port` or `https://host`; requests go to `<endpoint>/<bucket>/<key>` (path style).
    public var endpoint: String
    /// The bucket (3–63 of `a-z 0-9 . -`).
    public var bucket: String
    /// The region the signatures are made for (`us-east-1` for most S3-compatible servers).
    public var region: String
    /// The access key id (a credential: never logged).
    public var accessKeyId: String
    /// The secret access key (a credential: never logged).
    public var secretAccessKey: String
    /// Limits on each attempt of a request.
    public var timeouts: Timeouts
    /// How failed attempts are repeated.
    public var retry: Retry
    /// How many idle connections (libcurl handles) are kept for reuse.
    public var maxIdleConnections: Int

    /// A configuration with default timeouts and retries.
    public init(
      endpoint: String, bucket: String, region: String = "us-east-1", accessKeyId: String,
      secretAccessKey: String, timeouts: Timeouts = Timeouts(), retry: Retry = Retry(),
      maxIdleConnections: Int = 16
    ) {
      self.endpoint = endpoint
      self.bucket = bucket
      self.region = region
      self.accessKeyId = accessKeyId
      self.secretAccessKey = secretAccessKey
      self.timeouts = timeouts
      self.retry = retry
      self.maxIdleConnections = maxIdleConnections
    }

    /// Throws `.invalidArgument` for settings that cannot work; the message names no credential.
    public func validate() throws {
      func fail(_ reason: String) -> StorageError { StorageError(.invalidArgument, "s3: \(reason)") }
      guard Self.isValidEndpoint(endpoint) else {
        throw fail("endpoint must be http(s)://host[:port] with no path, query or user name")
      }
      guard Self.isValidBucket(bucket) else {
        throw fail("bucket must be 3-63 of a-z 0-9 . - starting and ending with a letter or digit")
      }
      guard (1...64).contains(region.utf8.count), region.utf8.allSatisfy(Self.isRegionByte) else {
        throw fail("region must be 1-64 of a-z 0-9 -")
      }
      guard Self.isCredential(accessKeyId), Self.isCredential(secretAccessKey) else {
        throw fail("access key id and secret access key must be 1-128 printable ASCII characters")
      }
      try timeouts.validate()
      try retry.validate()
      guard (0...1024).contains(maxIdleConnections) else { throw fail("maxIdleConnections must be 0-1024") }
    }

    /// The longest a failing request can take: every attempt timing out plus every backoff.
    public var worstCaseDuration: TimeInterval {
      Double(retry.maxAttempts) * timeouts.request
        + (1..<max(1, retry.maxAttempts)).reduce(0) { $0 + retry.maximumDelay(beforeAttempt: $1 + 1) }
    }

    /// `text` with each credential, and any signature or credential scope a server quoted back
    /// from an Authorization header, replaced by `<redacted>`: for anything bound for a log line.
    func redact(_ text: String) -> String {
      var text = text
      for secret in [secretAccessKey, accessKeyId] where !secret.isEmpty {
        text = text.replacingOccurrences(of: secret, with: "<redacted>")
      }
      for pattern in ["(?i)authorization", "(?i)credential=[^ ,]*", "(?i)signature=[^ ,]*"]
      where text.range(of: pattern, options: .regularExpression) != nil {
        text = text.replacingOccurrences(of: pattern, with: "<redacted>", options: .regularExpression)
      }
      return text
    }

    public var description: String {
      "S3(endpoint: \(endpoint), bucket: \(bucket), region: \(region), credentials: <redacted>, "
        + "timeouts: \(timeouts), retry: \(retry), maxIdleConnections: \(maxIdleConnections))"
    }

    public var customMirror: Mirror {
      Mirror(
        self,
        children: [
          "endpoint": endpoint, "bucket": bucket, "region": region, "accessKeyId": "<redacted>",
          "secretAccessKey": "<redacted>", "timeouts": timeouts, "retry": retry,
          "maxIdleConnections": maxIdleConnections,
        ])
    }

    private static func isValidEndpoint(_ endpoint: String) -> Bool {
      guard let url = URLComponents(string: endpoint), let scheme = url.scheme?.lowercased(),
        scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty,
        url.user == nil, url.password == nil, url.query == nil, url.fragment == nil,
        url.path.isEmpty || url.path == "/"
      else { return false }
      return url.port.map { (1...65_535).contains($0) } ?? true
    }

    private static func isValidBucket(_ bucket: String) -> Bool {
      let bytes = Array(bucket.utf8)
      let isAlphanumeric: (UInt8) -> Bool = {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
          || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
      }
      return (3...63).contains(bytes.count) && isAlphanumeric(bytes.first!) && isAlphanumeric(bytes.last!)
        && bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    private static func isRegionByte(_ byte: UInt8) -> Bool {
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        || byte == UInt8(ascii: "-")
    }

    // Printable ASCII without spaces: they go into a header and a signature.
    private static func isCredential(_ value: String) -> Bool {
      (1...128).contains(value.utf8.count) && value.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }
  }

  /// Limits on one attempt of a request, in seconds.
  public struct Timeouts: Sendable, Hashable {
    /// To set up a connection (TCP and TLS).
    public var connect: TimeInterval
    /// Without a single byte moving either way (a stalled server or network).
    public var idle: TimeInterval
    /// For a whole attempt, transfer included: bounds a large part's upload too.
    public var request: TimeInterval

    /// Defaults: connect 5 s, idle 30 s, request 300 s.
    public init(connect: TimeInterval = 5, idle: TimeInterval = 30, request: TimeInterval = 300) {
      self.connect = connect
      self.idle = idle
      self.request = request
    }

    func validate() throws {
      guard connect > 0, connect.isFinite, idle >= 1, idle.isFinite, request >= connect, request.isFinite
      else {
        throw StorageError(
          .invalidArgument, "s3: timeouts must be finite, connect > 0, idle >= 1 s, request >= connect")
      }
    }
  }

  /// Retries of attempts that failed on the network or with a 5xx; a 4xx is never retried.
  public struct Retry: Sendable, Hashable {
    /// Attempts in all, the first included (1 = no retry).
    public var maxAttempts: Int
    /// The backoff before the first retry; it doubles for each further one.
    public var baseDelay: TimeInterval
    /// The longest backoff.
    public var maxDelay: TimeInterval

    /// Defaults: 4 attempts, 0.1 s doubling up to 2 s, with full jitter.
    public init(maxAttempts: Int = 4, baseDelay: TimeInterval = 0.1, maxDelay: TimeInterval = 2) {
      self.maxAttempts = maxAttempts
      self.baseDelay = baseDelay
      self.maxDelay = maxDelay
    }

    func validate() throws {
      guard (1...20).contains(maxAttempts), baseDelay >= 0, maxDelay >= baseDelay, maxDelay.isFinite else {
        throw StorageError(.invalidArgument, "s3: retry needs 1-20 attempts and 0 <= baseDelay <= maxDelay")
      }
    }

    /// The longest wait before attempt `attempt` (2 = the first retry).
    func maximumDelay(beforeAttempt attempt: Int) -> TimeInterval {
      min(maxDelay, baseDelay * pow(2, Double(max(0, attempt - 2))))
    }

    /// A wait before attempt `attempt`: uniformly random up to the maximum ("full jitter"), so
    /// that many clients failing together do not retry together.
    func delay(beforeAttempt attempt: Int) -> TimeInterval {
      let ceiling = maximumDelay(beforeAttempt: attempt)
      return ceiling > 0 ? Double.random(in: 0...ceiling) : 0
    }
  }
}
