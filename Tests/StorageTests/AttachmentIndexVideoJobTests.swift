import Foundation
import Storage
import Testing

/// Video MP4 jobs, on every backend: queued once, claimed by one node at a time, taken over when
/// a lease lapses, finished only by the claim that holds them (fencing), the kept source dropped
/// with its reference when they finish, and gone with their attachment.
@Suite struct AttachmentIndexVideoJobTests {
  @Test(arguments: IndexFactory.all)
  func aJobIsClaimedOnceRenewedAndFinishedByItsHolderOnly(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let (a, b) = try factory.makeNodes(directory.path)
    try a.insert(record("att_1"))
    let source = rendition(of: "att_1", profile: "video-source", blobSeed: 70)
    _ = try a.insertRendition(source, now: t0)
    try a.enqueueVideoJob(attachment: "att_1", tenant: "acme", now: t0)
    try a.enqueueVideoJob(attachment: "att_1", tenant: "acme", now: t0)
    #expect(try b.videoJob(attachment: "att_1")?.state == .queued)
    let claimed = try #require(try a.claimVideoJob(holder: "a/1", now: t0, lease: 30))
    #expect(claimed.attachment == "att_1" && claimed.tenant == "acme" && claimed.attempts == 1)
    // Held: the other node finds nothing to do, and cannot renew or finish it.
    #expect(try b.claimVideoJob(holder: "b/1", now: t0.addingTimeInterval(10), lease: 30) == nil)
    #expect(try !b.renewVideoJob(attachment: "att_1", holder: "b/1", now: t0, lease: 30))
    #expect(
      try a.renewVideoJob(attachment: "att_1", holder: "a/1", now: t0.addingTimeInterval(20), lease: 30))
    // Renewed at 20 s: still held at 45 s.
    #expect(try b.claimVideoJob(holder: "b/1", now: t0.addingTimeInterval(45), lease: 30) == nil)
    #expect(
      try !b.finishVideoJob(
        attachment: "att_1", holder: "b/1", state: .ready, code: nil, releasing: "video-source"))
    #expect(try a.referenceCount(of: source.blob) == 1)
    #expect(
      try a.finishVideoJob(
        attachment: "att_1", holder: "a/1", state: .ready, code: nil, releasing: "video-source"))
    let finished = try #require(try b.videoJob(attachment: "att_1"))
    #expect(finished.state == .ready && finished.holder == nil)
    // The source is dropped with its reference; a finished job is never claimed again.
    #expect(try a.renditions(ofAttachment: "att_1").isEmpty)
    #expect(try a.referenceCount(of: source.blob) == 0)
    #expect(try b.claimVideoJob(holder: "b/2", now: t0.addingTimeInterval(3600), lease: 30) == nil)
  }

  @Test(arguments: IndexFactory.all)
  func aLapsedLeaseIsTakenOverAndTheLateHolderChangesNothing(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let (a, b) = try factory.makeNodes(directory.path)
    try a.insert(record("att_1"))
    try a.enqueueVideoJob(attachment: "att_1", tenant: "acme", now: t0)
    _ = try #require(try a.claimVideoJob(holder: "a/1", now: t0, lease: 30))
    let taken = try #require(try b.claimVideoJob(holder: "b/1", now: t0.addingTimeInterval(31), lease: 30))
    #expect(taken.attempts == 2 && taken.holder == "b/1")
    // The frozen node wakes: its renewal and its finish are refused.
    #expect(
      try !a.renewVideoJob(attachment: "att_1", holder: "a/1", now: t0.addingTimeInterval(32), lease: 30))
    #expect(
      try !a.finishVideoJob(
        attachment: "att_1", holder: "a/1", state: .failed, code: "corrupt", releasing: "video-source"))
    #expect(try b.videoJob(attachment: "att_1")?.state == .running)
    #expect(
      try b.finishVideoJob(
        attachment: "att_1", holder: "b/1", state: .failed, code: "corrupt", releasing: "x"))
    #expect(try a.videoJob(attachment: "att_1")?.code == "corrupt")
  }

  @Test(arguments: IndexFactory.all)
  func aRestartedNodeRequeuesItsOwnRunningJobsAndADeletionTakesTheJob(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let (a, b) = try factory.makeNodes(directory.path)
    for id in ["att_1", "att_2"] {
      try a.insert(record(id))
      try a.enqueueVideoJob(attachment: id, tenant: "acme", now: t0)
    }
    let mine = try #require(try a.claimVideoJob(holder: "node-a/1", now: t0, lease: 30))
    let theirs = try #require(try b.claimVideoJob(holder: "node-b/1", now: t0, lease: 30))
    #expect(Set([mine.attachment, theirs.attachment]) == ["att_1", "att_2"])
    #expect(try a.requeueVideoJobs(holderPrefix: "node-a/") == 1)
    #expect(try a.videoJob(attachment: mine.attachment)?.state == .queued)
    #expect(try a.videoJob(attachment: theirs.attachment)?.state == .running)
    #expect(try a.claimVideoJob(holder: "node-a/2", now: t0, lease: 30)?.attachment == mine.attachment)
    _ = try a.deleteAttachment(tenant: "acme", id: theirs.attachment)
    #expect(try a.videoJob(attachment: theirs.attachment) == nil)
  }
}
