import Foundation
import Testing

@testable import Storage

@Suite struct FileBlobStoreTests {
  @Test func blobLivesUnderShardedHashPathReadOnlyAndTmpIsLeftEmpty() throws {
    let directory = try TemporaryDirectory()
    let store = try FileBlobStore(root: directory.path)
    let hash = try store.put(sampleBytes(1_234, seed: 1))
    let hex = hash.hex
    let relative = "\(hex.prefix(2))/\(hex.dropFirst(2).prefix(2))/\(hex)"
    #expect(directory.files(under: "blobs") == [relative])
    #expect(store.path(for: hash) == directory.path + "/blobs/" + relative)
    #expect(directory.files(under: "tmp").isEmpty)
    let attributes = try FileManager.default.attributesOfItem(atPath: directory.path + "/blobs/" + relative)
    #expect((attributes[.posixPermissions] as? Int) == 0o444)
  }

  @Test func crashAfterTemporaryWriteLeavesNothingVisibleAndRestartCleansTmp() throws {
    let directory = try TemporaryDirectory()
    let bytes = sampleBytes(50_000, seed: 2)
    let crashing = try FileBlobStore(root: directory.path, crashPoint: .afterTemporaryWrite)
    #expect(throws: FileBlobStore.SimulatedCrash.self) { try crashing.put(bytes) }
    // As the dead process left it: a complete temp file, nothing under blobs/.
    #expect(directory.files(under: "tmp").count == 1)
    #expect(directory.files(under: "blobs").isEmpty)

    let restarted = try FileBlobStore(root: directory.path)
    #expect(restarted.removedTemporaryFiles == 1)
    #expect(directory.files(under: "tmp").isEmpty)
    #expect(try !restarted.exists(BlobHash.of(bytes)))
    // The retried upload then succeeds normally.
    #expect(try restarted.read(restarted.put(bytes)) == bytes)
  }

  @Test func crashAfterRenameLeavesTheCompleteBlob() throws {
    let directory = try TemporaryDirectory()
    let bytes = sampleBytes(50_000, seed: 3)
    let crashing = try FileBlobStore(root: directory.path, crashPoint: .afterRename)
    #expect(throws: FileBlobStore.SimulatedCrash.self) { try crashing.put(bytes) }
    let restarted = try FileBlobStore(root: directory.path)
    #expect(restarted.removedTemporaryFiles == 0)
    #expect(try restarted.read(BlobHash.of(bytes)) == bytes)
  }

  @Test func leftoverTemporaryFilesOfAnyNameAreRemovedAtStartUp() throws {
    let directory = try TemporaryDirectory()
    let kept = try FileBlobStore(root: directory.path).put(sampleBytes(10, seed: 4))
    for name in ["abc.tmp", "partial", ".hidden"] {
      try Data(sampleBytes(100, seed: 5)).write(to: URL(fileURLWithPath: directory.path + "/tmp/" + name))
    }
    let restarted = try FileBlobStore(root: directory.path)
    #expect(restarted.removedTemporaryFiles == 3)
    #expect(directory.files(under: "tmp").isEmpty)
    #expect(try restarted.exists(kept))
  }

  @Test func deduplicatedPutRenewsTheModificationTime() throws {
    let directory = try TemporaryDirectory()
    let store = try FileBlobStore(root: directory.path)
    let bytes = sampleBytes(100, seed: 6)
    let hash = try store.put(bytes)
    let old = Date(timeIntervalSince1970: 1_000_000_000)
    try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: store.path(for: hash)!)
    #expect(try modified(store, hash) < Date(timeIntervalSince1970: 1_000_000_001))
    #expect(try store.put(bytes) == hash)
    #expect(try modified(store, hash) > Date().addingTimeInterval(-60))
  }

  @Test func filesThatAreNotBlobsAreIgnoredByTheListing() throws {
    let directory = try TemporaryDirectory()
    let store = try FileBlobStore(root: directory.path)
    let hash = try store.put(sampleBytes(10, seed: 7))
    let shard = (store.path(for: hash)! as NSString).deletingLastPathComponent
    try Data([1]).write(to: URL(fileURLWithPath: shard + "/README"))
    try Data([1]).write(to: URL(fileURLWithPath: directory.path + "/blobs/stray"))
    var listed: [BlobHash] = []
    try store.forEachBlob { listed.append($0.hash) }
    #expect(listed == [hash])
  }

  @Test func missingTmpDirectoryMakesTheStoreUnwritable() throws {
    let directory = try TemporaryDirectory()
    let store = try FileBlobStore(root: directory.path)
    try store.checkWritable()
    try FileManager.default.removeItem(atPath: directory.path + "/tmp")
    let error = #expect(throws: StorageError.self) { try store.checkWritable() }
    #expect(error?.code == .notFound)
    #expect(throws: StorageError.self) { try store.put(sampleBytes(10, seed: 8)) }
  }

  @Test(arguments: [
    "", "ABCDEF", String(repeating: "g", count: 64), String(repeating: "A", count: 64),
    "../" + String(repeating: "a", count: 61),
  ])
  func malformedHashesAreRejected(hex: String) {
    #expect(BlobHash(hex: hex) == nil)
  }

  private func modified(_ store: FileBlobStore, _ hash: BlobHash) throws -> Date {
    var found: Date?
    try store.forEachBlob { if $0.hash == hash { found = $0.modified } }
    return try #require(found)
  }
}
