import Foundation
import Testing

@testable import Storage

/// The lease, length and completion rules as pure values: no file, no database.
@Suite struct UploadRecordTests {
  private static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

  private static func record(
    offset: Int = 0, length: Int? = 100, status: UploadStatus = .receiving, holder: String? = nil,
    expiresIn: TimeInterval = 30
  ) -> UploadRecord {
    UploadRecord(
      state: UploadState(
        id: "upl_x", tenant: "acme", owner: nil, protocolName: "test", metadata: [], length: length,
        maxLength: 1_000, offset: offset, status: status, result: nil, createdAt: t0,
        expiresAt: t0.addingTimeInterval(3_600)),
      leaseHolder: holder, leaseExpiresAt: holder.map { _ in t0.addingTimeInterval(expiresIn) },
      leaseWanted: false)
  }

  private static func take(_ record: inout UploadRecord, offset: Int?, length: Int? = nil) throws
    -> UploadRecord.LeaseAttempt
  {
    try record.takeWriterLease(
      token: "me.1", instance: "me", now: t0, until: t0.addingTimeInterval(30), offset: offset, length: length
    )
  }

  @Test func aLiveLeaseOfAnotherInstanceIsAskedForAndAnythingElseIsTaken() throws {
    var foreign = Self.record(holder: "other.7")
    #expect(try Self.take(&foreign, offset: 0) == .held)
    #expect(foreign.leaseWanted && foreign.leaseHolder == "other.7")
    // Expired, or this instance's own (whose writer the caller has already stopped): taken.
    for holder in ["other.7", "me.2"] {
      var record = Self.record(holder: holder, expiresIn: holder == "me.2" ? 30 : 0)
      #expect(try Self.take(&record, offset: 0) == .acquired)
      #expect(record.leaseHolder == "me.1" && !record.leaseWanted)
    }
    // A prefix that merely starts like the instance name is not the instance.
    #expect(!UploadRecord.token("meow.1", isOf: "me") && UploadRecord.token("me.1", isOf: "me"))
  }

  @Test func refusalsComeInTheDraftsOrderCompletedThenOffsetThenLength() throws {
    var completed = Self.record(offset: 100, status: .completed)
    let first = #expect(throws: StorageError.self) { try Self.take(&completed, offset: 3, length: 5_000) }
    #expect(first?.code == .uploadCompleted)
    var receiving = Self.record(offset: 10, length: nil)
    let second = #expect(throws: StorageError.self) { try Self.take(&receiving, offset: 3, length: 5_000) }
    #expect(second?.code == .offsetMismatch && second?.offset == 10)
    let third = #expect(throws: StorageError.self) { try Self.take(&receiving, offset: 10, length: 5_000) }
    #expect(third?.code == .lengthExceeded)
    #expect(receiving.leaseHolder == nil && receiving.state.length == nil)
  }

  @Test func lengthIsDeclaredOnceNeverBelowTheOffsetNorAboveTheMaximum() throws {
    var record = Self.record(offset: 50, length: nil)
    for (length, code) in [(49, StorageError.Code.lengthMismatch), (1_001, .lengthExceeded)] {
      let error = #expect(throws: StorageError.self) { try record.declare(length: length) }
      #expect(error?.code == code)
    }
    try record.declare(length: 50)
    try record.declare(length: 50)
    let again = #expect(throws: StorageError.self) { try record.declare(length: 60) }
    #expect(again?.code == .lengthMismatch)
  }

  @Test func completionNeedsEveryByteAndClaimsProcessingOnce() throws {
    let until = Self.t0.addingTimeInterval(30)
    var partial = Self.record(offset: 99)
    let early = #expect(throws: StorageError.self) {
      try partial.claimProcessing(token: "me.1", instance: "me", now: Self.t0, until: until)
    }
    #expect(early?.code == .uploadIncomplete && early?.offset == 99)
    var deferred = Self.record(offset: 40, length: nil)
    #expect(
      try deferred.claimProcessing(token: "me.1", instance: "me", now: Self.t0, until: until) == .acquired)
    #expect(
      deferred.state.length == 40 && deferred.state.status == .completed && deferred.leaseHolder == "me.1")
    // A live claim binds even this instance; a lapsed one does not.
    let busy = #expect(throws: StorageError.self) {
      try deferred.claimProcessing(token: "me.2", instance: "me", now: Self.t0, until: until)
    }
    #expect(busy?.code == .inProgress)
    #expect(
      try deferred.claimProcessing(token: "me.2", instance: "me", now: until, until: until) == .acquired)
    let result = UploadResult(attachmentID: "att_1", response: StoredResponse(status: 201, body: []))
    try deferred.record(result)
    #expect(deferred.state.status == .processed && deferred.leaseHolder == nil)
    #expect(
      try deferred.claimProcessing(token: "me.3", instance: "me", now: Self.t0, until: until) == .acquired)
    #expect(deferred.leaseHolder == nil)  // nothing to claim: the caller answers the result
  }

  @Test func configurationRefusesSettingsThatCannotWork() throws {
    try UploadStoreConfiguration().validate()
    for configuration in [
      UploadStoreConfiguration(spoolThreshold: -1), UploadStoreConfiguration(resumableLifetime: 0),
      UploadStoreConfiguration(writeBufferBytes: 1_000), UploadStoreConfiguration(writeBufferBytes: 1 << 30),
      UploadStoreConfiguration(leaseDuration: 0.5), UploadStoreConfiguration(takeoverTimeout: -1),
      UploadStoreConfiguration(takeoverPollInterval: 0), UploadStoreConfiguration(maxMetadataBytes: -1),
    ] {
      let error = #expect(throws: StorageError.self) { try configuration.validate() }
      #expect(error?.code == .invalidArgument)
    }
  }
}
