import Foundation
import TestSupport
import Testing

@testable import Storage

/// The embedded backend on a volume with no space left (a tmpfs of the test's own, filled to
/// the last block): every failed write is `StorageError.full`, leaves nothing half-written, and
/// the same store writes again once space is freed.
@Suite(
  .serialized, .enabled(if: SmallVolume.canMount, "skipped: this process may not mount a tmpfs (needs root)"))
struct FullVolumeTests {
  @Test func aBlobWriteOnAFullVolumeIsFullAndLeavesNoTemporaryFile() throws {
    let volume = try SmallVolume(megabytes: 1)
    defer { volume.unmount() }
    let blobs = try FileBlobStore(root: volume.path)
    let bytes = [UInt8](repeating: 7, count: 100_000)
    try volume.fill()
    let error = try #require(throws: StorageError.self) { try blobs.put(bytes) }
    #expect(error.code == .full, "\(error)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: volume.path + "/tmp").isEmpty)
    volume.free()
    let hash = try blobs.put(bytes)
    #expect(try blobs.read(hash, range: nil) == bytes)
  }

  @Test func aKeyWhoseClaimCouldNotBeReleasedOnAFullVolumeRunsAgainOnceFreed() throws {
    let volume = try SmallVolume(megabytes: 2)
    defer { volume.unmount() }
    let store = try AttachmentStore.embedded(
      directory: volume.path, index: try SQLiteIndex(path: volume.path + "/index.sqlite"))
    #expect(try store.beginIdempotent(tenant: "acme", key: "k-1", fingerprint: "f") == .started)
    try volume.fill()
    // The request failed, and so does giving its claim back: the index's WAL needs a page too.
    let error = try #require(throws: StorageError.self) {
      try store.abandonIdempotent(tenant: "acme", key: "k-1")
    }
    #expect(error.code == .full, "\(error)")
    volume.free()
    // The retry runs at once instead of waiting out the dead claim's 10-minute lease.
    #expect(try store.beginIdempotent(tenant: "acme", key: "k-1", fingerprint: "f") == .started)
    // Another request's claim, running within its lease, still holds its key.
    #expect(try store.beginIdempotent(tenant: "acme", key: "k-1", fingerprint: "f") == .inProgress)
  }

  @Test func aClaimWhoseReleaseFailedIsNotReleasedPastItsLease() throws {
    let volume = try SmallVolume(megabytes: 2)
    defer { volume.unmount() }
    let clock = TestClock()
    let index = try SQLiteIndex(path: volume.path + "/index.sqlite")
    let store = try AttachmentStore.embedded(directory: volume.path, index: index, now: clock.closure)
    // Another process over the same index, as a node of its own.
    let other = try AttachmentStore(blobs: store.blobs, index: index, now: clock.closure)
    #expect(try store.beginIdempotent(tenant: "acme", key: "k-2", fingerprint: "f") == .started)
    try volume.fill()
    #expect(throws: StorageError.self) { try store.abandonIdempotent(tenant: "acme", key: "k-2") }
    volume.free()
    // Past the lease the key is anyone's: the other node's claim is not this process's to release.
    clock.advance(by: store.configuration.idempotencyLease + 1)
    #expect(try other.beginIdempotent(tenant: "acme", key: "k-2", fingerprint: "f") == .started)
    #expect(try store.beginIdempotent(tenant: "acme", key: "k-2", fingerprint: "f") == .inProgress)
  }

  @Test func anIndexWriteOnAFullVolumeIsFullAndWorksOnceFreed() throws {
    let volume = try SmallVolume(megabytes: 1)
    defer { volume.unmount() }
    let index = try SQLiteIndex(path: volume.path + "/index.sqlite")
    try index.setRetention(5, tenant: "before")
    try volume.fill()
    // Each write is a transaction of its own; the WAL soon needs a page the volume lacks.
    var failure: (any Error)?
    for n in 0..<500 where failure == nil {
      do { try index.setRetention(TimeInterval(n + 1), tenant: "tenant-\(n)") } catch { failure = error }
    }
    let error = try #require(failure as? StorageError, "\(String(describing: failure))")
    #expect(error.code == .full, "\(error)")
    // Reads need no space.
    #expect(try index.retention(tenant: "before") == 5)
    volume.free()
    try index.setRetention(9, tenant: "after")
    #expect(try index.retention(tenant: "after") == 9)
  }
}
