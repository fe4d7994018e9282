import Foundation
import SystemCalls

extension AttachmentStore {
  /// Stores a rendition of `record` for `profile` (blob first, pinned, then its row), or
  /// returns the one already stored for that profile; nil when the attachment is gone.
  ///
  /// Two requests making the same rendition at once both write the same bytes (deterministic
  /// output, one content address); the first row wins, and the other's blob reference is
  /// never added, so nothing leaks.
  public func storeRendition(
    of record: AttachmentRecord, profile: String, bytes: [UInt8], width: Int, height: Int
  ) throws -> Rendition? {
    try bytes.withUnsafeBytes { buffer in
      try storeRendition(of: record, profile: profile, buffer: buffer, width: width, height: height)
    }
  }

  /// `storeRendition(of:profile:bytes:width:height:)` of bytes read in place (a video's source,
  /// mapped from its upload, never copied).
  public func storeRendition(
    of record: AttachmentRecord, profile: String, buffer: UnsafeRawBufferPointer, width: Int, height: Int
  ) throws -> Rendition? {
    let hash = BlobHash.of(buffer)
    let pin = try index.pinBlob(hash, now: now, lease: configuration.pinLease)
    defer { try? index.unpinBlob(pin) }
    _ = try blobs.put(buffer, sha256: hash)
    let created = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
    return try index.insertRendition(
      Rendition(
        attachment: record.id, profile: profile, blob: hash, width: width, height: height,
        bytes: buffer.count,
        createdAt: created), now: now)
  }

  /// `storeRendition` of `range` of the open file `descriptor` (a video's kept source, hundreds
  /// of MiB): copied by the kernel into the blob store, never through this process's memory. A
  /// range that is not the whole file (a multipart part) is first copied alone into an unlinked
  /// file in `scratchDirectory`. The blob is pinned after it is written: a blob just written is
  /// within the sweeper's grace period.
  public func storeRendition(
    of record: AttachmentRecord, profile: String, file descriptor: Int32, range: Range<Int>,
    scratchDirectory: String, width: Int, height: Int
  ) throws -> Rendition? {
    let whole = try FileSystem.status(descriptor, path: "rendition source")
    var part: TemporaryFile?
    if range.lowerBound != 0 || Int(whole.st_size) != range.upperBound {
      let copy = try TemporaryFile(directory: scratchDirectory)
      do { try SystemCall.copyFile(from: descriptor, range: range, to: copy.descriptor) } catch {
        throw FileSystem.error("sendfile", copy.label, errno: error.errno)
      }
      part = copy
    }
    // /proc/self/fd reopens the file itself, whether or not its name is still there.
    let hash = try withExtendedLifetime(part) {
      try blobs.put(fileAt: "/proc/self/fd/\(part?.descriptor ?? descriptor)")
    }
    let pin = try index.pinBlob(hash, now: now, lease: configuration.pinLease)
    defer { try? index.unpinBlob(pin) }
    _ = try blobs.size(of: hash)  // still there (a sweep in between would have removed it)
    let created = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
    return try index.insertRendition(
      Rendition(
        attachment: record.id, profile: profile, blob: hash, width: width, height: height,
        bytes: range.count, createdAt: created), now: now)
  }

  /// The renditions stored for `record`, by profile name.
  public func renditions(of record: AttachmentRecord) throws -> [String: Rendition] {
    var byProfile: [String: Rendition] = [:]
    for rendition in try index.renditions(ofAttachment: record.id) {
      byProfile[rendition.profile] = rendition
    }
    return byProfile
  }

  /// The stored bytes of a rendition (or the bytes in `range`, clamped).
  public func read(_ rendition: Rendition, range: Range<Int>? = nil) throws -> [UInt8] {
    try blobs.read(rendition.blob, range: range)
  }

  /// A local file holding the rendition's bytes (for `sendfile`), when the blob store has one.
  public func path(for rendition: Rendition) -> String? { blobs.path(for: rendition.blob) }
}
