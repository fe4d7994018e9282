import Foundation
import Testing

@testable import Storage

@Suite struct SQLiteIndexTests {
  @Test func indexRunsInWALModeAtTheCurrentSchemaVersion() throws {
    let directory = try TemporaryDirectory()
    let index = try SQLiteIndex(path: directory.path + "/index.sqlite")
    #expect(try index.read { try $0.query("PRAGMA journal_mode") }.first?.first?.text == "wal")
    #expect(try index.write { try $0.query("PRAGMA synchronous") }.first?.first?.integer == 2)  // FULL
    #expect(
      try index.read { try $0.query("PRAGMA user_version") }.first?.first?.integer
        == Int64(SQLiteIndex.schemaVersion))
    let normal = try SQLiteIndex(
      configuration: .init(path: directory.path + "/normal.sqlite", synchronous: .normal))
    #expect(try normal.write { try $0.query("PRAGMA synchronous") }.first?.first?.integer == 1)
  }

  @Test func rowsSurviveReopeningTheFile() throws {
    let directory = try TemporaryDirectory()
    let path = directory.path + "/index.sqlite"
    let created = Date(timeIntervalSince1970: 1_800_000_000)
    let stored = AttachmentRecord(
      id: "att_x", tenant: "acme", blob: BlobHash.of([1, 2, 3]), contentType: "image/jpeg", width: 1,
      height: 2,
      bytes: 3, source: sampleSource, createdAt: created, expiresAt: created.addingTimeInterval(10))
    do {
      let index = try SQLiteIndex(path: path)
      try index.insert(stored)
      try index.setRetention(5, tenant: "acme")
    }
    let reopened = try SQLiteIndex(path: path)
    #expect(try reopened.attachment(tenant: "acme", id: "att_x", now: created) == stored)
    #expect(try reopened.retention(tenant: "acme") == 5)
  }

  @Test func indexOfTheFirstSchemaGainsBlobReferencesAndLeases() throws {
    let directory = try TemporaryDirectory()
    let path = directory.path + "/index.sqlite"
    let blob = BlobHash.of([1, 2, 3])
    do {
      // A file as the first release left it: two rows sharing a blob, a claim of a dead process.
      let connection = try SQLiteConnection(path: path, readOnly: false, busyTimeoutMilliseconds: 1_000)
      try connection.execute(SQLiteIndex.migrations[0])
      try connection.execute("PRAGMA user_version = 1")
      for id in ["att_a", "att_b"] {
        try connection.query(
          """
          INSERT INTO attachments VALUES (?, 'acme', ?, 'image/jpeg', 1, 1, 300, 'jpeg', 1, 1, 300, 1, NULL, NULL,
            1800000000, 1900000000)
          """, [.text(id), .text(blob.hex)])
      }
      try connection.query(
        "INSERT INTO idempotency_keys VALUES ('acme', 'k', 'f', 'running', NULL, NULL, NULL, 1800000000)")
    }
    let index = try SQLiteIndex(path: path)
    #expect(
      try index.read { try $0.query("PRAGMA user_version") }.first?.first?.integer
        == Int64(SQLiteIndex.schemaVersion))
    #expect(try index.referenceCount(of: blob) == 2)
    #expect(try index.statistics().blobBytes == 300)
    let now = Date(timeIntervalSince1970: 1_800_000_010)
    #expect(
      try index.beginIdempotent(
        tenant: "acme", key: "k", fingerprint: "f", now: now, lifetime: 86_400, lease: 60)
        == .started)
  }

  @Test func schemaFromANewerBuildIsRefused() throws {
    let directory = try TemporaryDirectory()
    let path = directory.path + "/index.sqlite"
    do {
      let index = try SQLiteIndex(path: path)
      try index.write { try $0.execute("PRAGMA user_version = 99") }
    }
    let error = #expect(throws: StorageError.self) { try SQLiteIndex(path: path) }
    #expect(error?.code == .database)
  }

  @Test func fileThatIsNotADatabaseGivesAStorageError() throws {
    let directory = try TemporaryDirectory()
    let path = directory.path + "/index.sqlite"
    try Data(repeating: 0x41, count: 8_192).write(to: URL(fileURLWithPath: path))
    let error = #expect(throws: StorageError.self) { try SQLiteIndex(path: path) }
    #expect(error?.code == .corrupt)
    // The log detail names SQLite's reason; the code is what the App maps.
    #expect(error?.detail.contains("not a database") == true)
  }

  @Test func unopenableIndexPathGivesAnIOError() throws {
    let directory = try TemporaryDirectory()
    let error = #expect(throws: StorageError.self) {
      try SQLiteIndex(path: directory.path + "/missing-dir/index.sqlite")
    }
    #expect(error?.code == .database || error?.code == .io)
  }

  @Test func invalidConfigurationIsRejected() throws {
    #expect(throws: StorageError.self) { try SQLiteIndex.Configuration(path: "").validate() }
    #expect(throws: StorageError.self) {
      try SQLiteIndex.Configuration(path: "x", busyTimeoutMilliseconds: -1).validate()
    }
  }

  @Test func storedResponseHeadersRoundTrip() {
    let headers = ["Location": "/v1/attachments/att_1", "Content-Type": "application/json; charset=utf-8"]
    #expect(StoredHeaders.decode(StoredHeaders.encode(headers)) == headers)
    #expect(StoredHeaders.decode("") == [:])
  }

  @Test func anIndexOfSchemaOneIsMigratedKeepingItsRowsWithNoOwner() throws {
    let directory = try TemporaryDirectory()
    let path = directory.path + "/index.sqlite"
    let created = Date(timeIntervalSince1970: 1_800_000_000)
    let stored = AttachmentRecord(
      id: "att_old", tenant: "acme", blob: BlobHash.of([4, 5, 6]), contentType: "image/jpeg", width: 1,
      height: 2, bytes: 3, source: sampleSource, createdAt: created, expiresAt: created.addingTimeInterval(10)
    )
    do {
      // A file as the first release wrote it: no owner column, no usage table.
      let connection = try SQLiteConnection(path: path, readOnly: false, busyTimeoutMilliseconds: 1_000)
      try connection.execute(SQLiteIndex.migrations[0])
      try connection.execute("PRAGMA user_version = 1")
      try connection.query(
        """
        INSERT INTO attachments VALUES (?, 'acme', ?, 'image/jpeg', 1, 2, 3, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        [
          .text(stored.id), .text(stored.blob.hex), .text(sampleSource.format),
          .integer(Int64(sampleSource.width)),
          .integer(Int64(sampleSource.height)), .integer(Int64(sampleSource.bytes)),
          .integer(Int64(sampleSource.orientation)),
          sampleSource.orientationSource.map(SQLValue.text) ?? .null,
          sampleSource.colourProfile.map(SQLValue.text) ?? .null, .integer(1_800_000_000),
          .integer(1_800_000_010),
        ])
    }
    let migrated = try SQLiteIndex(path: path)
    #expect(
      try migrated.read { try $0.query("PRAGMA user_version") }.first?.first?.integer
        == Int64(SQLiteIndex.schemaVersion))
    #expect(try migrated.attachment(tenant: "acme", id: "att_old", now: created) == stored)
    let key = UsageKey(tenant: "acme", name: "jti:x")
    #expect(
      try migrated.reserveUsage(
        key, adding: UsageAmount(files: 1, bytes: 1), limits: UsageLimits(),
        expiresAt: created.addingTimeInterval(5),
        now: created) == .reserved(UsageAmount(files: 1, bytes: 1)))
  }
}
