import Foundation
import ImagePipeline
import Sandbox
import Server
import Storage

// How a model profile's image is made and cached.
//
// At upload, the renditions asked for (`?profile=`, and the tenant's default profile) are made
// in the same pipeline run as the default image, from its pixels before encoding (see
// `RenditionStep`), and stored with it. A profile asked for later (`GET …?profile=`, `/meta`)
// whose rendition does not exist yet is made then, once, from the stored default JPEG (decoded
// with DCT scaling, resampled, encoded), on the worker pool under the pipeline's deadline and
// memory budget, and stored. Either way the rendition is a blob of its own, content-addressed
// like every blob, with a row in the index's `renditions` table that counts as a reference to
// it: deleting or expiring the attachment deletes its renditions in the same transaction, and
// their blobs go when nothing else refers to them. A profile whose size is the default image's
// own has no rendition: the default image is served for it.
extension AttachmentService {
  /// Stores the renditions an upload's pipeline run made. A failure to store one is logged and
  /// left for a later request to make again, never a failed upload.
  func storeRenditions(_ renditions: [ProfileRendition], of record: AttachmentRecord) throws -> [String:
    Rendition]
  {
    var stored: [String: Rendition] = [:]
    for rendition in renditions {
      do {
        if let row = try store.storeRendition(
          of: record, profile: rendition.profile.rawValue, bytes: rendition.jpeg, width: rendition.width,
          height: rendition.height)
        {
          stored[row.profile] = row
        }
      } catch {
        eventLog.warning(
          "rendition not stored",
          fields: [("profile", rendition.profile.rawValue), ("detail", String(describing: error))])
      }
    }
    return stored
  }

  /// The renditions of `record`, with `profile`'s made now if it needs one and has none.
  ///
  /// A read must not fail for want of disk: a rendition made now that cannot be stored (a full
  /// volume) is returned with its bytes in `unstored`, served from memory and made again by the
  /// next request that asks.
  func renditions(
    of record: AttachmentRecord, ensuring profile: ModelProfile, cancellation: RequestCancellation?
  )
    throws -> (renditions: [String: Rendition], unstored: [UInt8]?)
  {
    var renditions = try store.renditions(of: record)
    let size = profile.size(ofStored: record.width, record.height)
    guard size != (record.width, record.height), renditions[profile.rawValue] == nil else {
      return (renditions, nil)
    }
    guard
      let made = try makeRendition(
        of: record, from: try store.read(record), profile: profile,
        name: profile.rawValue, cancellation: cancellation)
    else { return (renditions, nil) }
    renditions[made.row.profile] = made.row
    return (renditions, made.unstored)
  }

  /// Makes `profile`'s rendition of `stored` (a JPEG of `record`: its image, or a video's frame)
  /// and keeps it under `name`; nil when the pipeline made none. On a full volume it is not
  /// stored: returned with its bytes in `unstored`, served from memory and made again by the next
  /// request that asks (a read must not fail for want of disk). `AppError.notFound` when the
  /// attachment was deleted or expired meanwhile.
  private func makeRendition(
    of record: AttachmentRecord, from stored: [UInt8], profile: ModelProfile, name: String,
    cancellation: RequestCancellation?
  ) throws -> (row: Rendition, unstored: [UInt8]?)? {
    guard
      let made = try imaging.renditions(ofStored: stored, profiles: [profile], cancellation: cancellation)
        .first
    else { return nil }
    do {
      guard
        let row = try store.storeRendition(
          of: record, profile: name, bytes: made.jpeg, width: made.width, height: made.height)
      else { throw AppError.notFound }
      return (row, nil)
    } catch let error as StorageError where error.code == .full {
      eventLog.warning("rendition not stored", fields: [("profile", name), ("detail", error.description)])
      volume?.noteFull()
      let row = Rendition(
        attachment: record.id, profile: name, blob: BlobHash.of(made.jpeg), width: made.width,
        height: made.height, bytes: made.jpeg.count, createdAt: store.now)
      return (row, made.jpeg)
    }
  }

  /// The image `profile` serves for `record`: its rendition (made now if missing) or the
  /// stored default.
  func image(of record: AttachmentRecord, profile: ModelProfile, cancellation: RequestCancellation?) throws
    -> ServedImage
  {
    let (renditions, unstored) = try renditions(of: record, ensuring: profile, cancellation: cancellation)
    if let rendition = renditions[profile.rawValue] {
      return ServedImage(
        blob: rendition.blob, bytes: rendition.bytes, contentType: record.contentType, unstored: unstored)
    }
    return ServedImage(blob: record.blob, bytes: record.bytes, contentType: record.contentType)
  }
}

extension AttachmentService {
  /// A video's frame `number` as `profile`'s image rule sizes it: the stored frame itself when
  /// the rule keeps its size (at the default `video.frameEdge`, every provider's), else its
  /// rendition `frame-N.profile`, made now from the stored frame when missing and kept like a
  /// profile's rendition (deleted with the attachment). nil when the video has no such frame.
  func frameImage(
    of record: AttachmentRecord, number: Int, profile: ModelProfile?, cancellation: RequestCancellation?
  ) throws -> ServedImage? {
    let renditions = try store.renditions(of: record)
    guard let frame = renditions[VideoFacts.frameName(number)] else { return nil }
    let plain = ServedImage(blob: frame.blob, bytes: frame.bytes, contentType: record.contentType)
    guard let profile, profile.size(ofStored: frame.width, frame.height) != (frame.width, frame.height) else {
      return plain
    }
    let name = VideoFacts.frameName(number, profile: profile)
    if let made = renditions[name] {
      return ServedImage(blob: made.blob, bytes: made.bytes, contentType: record.contentType)
    }
    guard
      let made = try makeRendition(
        of: record, from: try store.read(frame), profile: profile, name: name, cancellation: cancellation)
    else { return plain }
    return ServedImage(
      blob: made.row.blob, bytes: made.row.bytes, contentType: record.contentType, unstored: made.unstored)
  }
}

/// What a `GET` of an attachment sends: a stored blob, or the bytes of a rendition made for
/// this request that could not be stored (`unstored`, whose content address `blob` is).
struct ServedImage {
  var blob: BlobHash
  var bytes: Int
  var contentType: String
  var unstored: [UInt8]? = nil
}

/// A request whose client left stops its decoding child.
extension RequestCancellation: SandboxCancellation {}
