import Foundation
import Storage
import TestSupport
import Testing

@testable import App

/// A bucket on a real S3 server (SeaweedFS) and a database on a real PostgreSQL, of one test's
/// own, for App-level tests of the shared backends: `apply` points a configuration at them.
struct ScaleOutBackends {
  let s3: Application.S3Options
  let postgresURL: String

  /// A new bucket on `seaweed` and a new database on `postgres` (the process's shared servers
  /// unless a test brings its own to stop and start).
  static func make(
    seaweed: SeaweedFS? = nil, postgres: PostgresServer? = nil, label: String = "app",
    timeouts: S3Client.Timeouts = S3Client.Timeouts(connect: 2, idle: 5, request: 30), attempts: Int = 3
  ) throws -> ScaleOutBackends {
    let seaweed = try seaweed ?? SeaweedFS.shared()
    let postgres = try postgres ?? PostgresServer.shared()
    var s3 = Application.S3Options()
    s3.endpoint = seaweed.endpoint
    s3.bucket = seaweed.uniqueBucketName(label)
    s3.region = seaweed.region
    s3.accessKeyId = seaweed.accessKeyId
    s3.secretAccessKey = seaweed.secretAccessKey
    s3.connectTimeout = timeouts.connect
    s3.idleTimeout = timeouts.idle
    s3.requestTimeout = timeouts.request
    s3.maxAttempts = attempts
    try S3Client(configuration: s3.clientConfiguration()).createBucket()
    return ScaleOutBackends(
      s3: s3, postgresURL: postgres.url(database: try postgres.createDatabase(prefix: label)))
  }

  /// Blobs in the bucket, index in the database; PostgreSQL timeouts short enough for fault tests.
  func apply(_ config: inout Application.Configuration, postgresTimeout: TimeInterval = 2) {
    config.storage.backend = .s3
    config.storage.s3 = s3
    config.index.backend = .postgres
    config.index.postgresURL = postgresURL
    config.index.postgresConnectTimeout = postgresTimeout
    config.index.postgresStatementTimeout = postgresTimeout
  }

  /// The blob store every node writes to, for looking into the bucket.
  func blobStore() throws -> S3BlobStore {
    try S3BlobStore(configuration: S3BlobStore.Configuration(client: s3.clientConfiguration()))
  }

  /// The blobs in the bucket.
  func blobs() throws -> Set<BlobHash> {
    var found: Set<BlobHash> = []
    try blobStore().forEachBlob { found.insert($0.hash) }
    return found
  }
}

/// Small PNGs that differ by `seed`, so each upload stores a blob of its own.
enum DistinctImages {
  /// Writes one to a temp file and returns its path; `noisy` images make large JPEGs.
  static func file(seed: Int, width: Int = 320, height: Int = 240, noisy: Bool = false) throws -> String {
    var pixels = [UInt8](repeating: 0, count: width * height * 3)
    var state = UInt64(seed) &* 6_364_136_223_846_793_005 &+ 1
    for y in 0..<height {
      for x in 0..<width {
        let i = (y * width + x) * 3
        pixels[i] = UInt8(truncatingIfNeeded: x &+ seed &* 37)
        pixels[i + 1] = UInt8(truncatingIfNeeded: y &+ seed &* 11)
        pixels[i + 2] = UInt8(truncatingIfNeeded: (x ^ y) &+ seed)
        if noisy {
          state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
          pixels[i] = UInt8(truncatingIfNeeded: state >> 33)
          pixels[i + 1] = UInt8(truncatingIfNeeded: state >> 41)
        }
      }
    }
    let path = try LiveTesting.temporaryDirectory() + "/image-\(seed).png"
    try Data(PNGWriter.png(width: width, height: height, colourType: 2, pixels: pixels))
      .write(to: URL(fileURLWithPath: path))
    return path
  }
}

extension AttachmentServer {
  /// The image `id` with the acme key (or `key`), and any extra curl arguments.
  func image(_ id: String, key: String = acmeKey, extra: [String] = []) throws -> LiveTesting.Reply {
    try curl("/v1/attachments/\(id)", ["-H", Self.bearer(key)] + extra)
  }

  /// `GET /readyz`'s status.
  func readyStatus() throws -> Int { try curl("/readyz", [], timeout: 20).status }
}
