import Crypto
import Foundation
import Storage
import Synchronization
import TestSupport

extension SeaweedFS {
  /// A client configuration for `bucket` on this server, with test-sized timeouts and retries.
  func clientConfiguration(
    bucket: String, timeouts: S3Client.Timeouts = S3Client.Timeouts(connect: 2, idle: 5, request: 60),
    retry: S3Client.Retry = S3Client.Retry(maxAttempts: 3, baseDelay: 0.05, maxDelay: 0.2)
  ) -> S3Client.Configuration {
    S3Client.Configuration(
      endpoint: endpoint, bucket: bucket, region: region, accessKeyId: accessKeyId,
      secretAccessKey: secretAccessKey, timeouts: timeouts, retry: retry)
  }

  /// Creates a new bucket and returns a client for it.
  func makeBucket(_ label: String) throws -> S3Client {
    let client = try S3Client(configuration: clientConfiguration(bucket: uniqueBucketName(label)))
    try client.createBucket()
    return client
  }
}

/// One bucket per label on the shared SeaweedFS, created on first use: a suite's tests share it
/// and keep apart by key prefix (`uniquePrefix`), so the server holds few buckets.
enum SharedBucket {
  private static let buckets = Mutex<[String: S3Client.Configuration]>([:])

  /// The configuration of the shared server's bucket for `label`.
  static func configuration(_ label: String) throws -> S3Client.Configuration {
    let server = try SeaweedFS.shared()
    return try buckets.withLock { buckets in
      if let existing = buckets[label] { return existing }
      let client = try server.makeBucket(label)
      buckets[label] = client.configuration
      return client.configuration
    }
  }

  /// A key prefix no other test uses (`label/<random>/`).
  static func uniquePrefix(_ label: String) -> String {
    "\(label)/\(Hex.encode(SecureRandom.bytes(6)))/"
  }
}
