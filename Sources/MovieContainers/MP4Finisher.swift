import ImageContainers

/// Finishes an MP4 the muxer wrote (`ftyp`, `mdat`, `moov` last): `moov` moves before `mdat`
/// (the "faststart" order, so a player can start before the whole file arrives) with every
/// chunk offset moved by as much, and what the muxer leaves even when asked for nothing is
/// dropped — `udta` and `meta` at any level, `free` boxes, the encoder's name in the video
/// sample entry. Done here, in the output's own bytes, because FFmpeg's faststart reopens the
/// output by name, which the sandbox refuses, and its `-map_metadata -1` keeps all of these.
/// The result is checked by `MovieOutputCheck` like any rendition.
public enum MP4Finisher {
  public enum Failure: Error, Equatable, Sendable {
    case unreadable(String)
  }

  /// Boxes whose children are rebuilt; every other box is copied (with the patches below).
  static let containers: Set<String> = ["moov", "trak", "mdia", "minf", "stbl", "edts", "dinf"]
  /// Boxes dropped wherever they are.
  static let dropped: Set<String> = ["udta", "meta", "free", "skip"]

  public static func finish(_ bytes: [UInt8]) throws(Failure) -> [UInt8] {
    try bytes.withBytes { raw throws(Failure) in try finish(raw) }
  }

  public static func finish(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> [UInt8] {
    let r = ByteReader(bytes)
    let top: [ISOBox]
    do { top = try ISOBoxes.children(r, from: 0, to: bytes.count) } catch { throw .unreadable(error.reason) }
    guard let ftyp = top.first, ftyp.type == FourCC("ftyp"),
      let moov = top.first(where: { $0.type == FourCC("moov") }),
      let mdat = top.first(where: { $0.type == FourCC("mdat") })
    else { throw .unreadable("not ftyp, mdat and moov") }
    // The new moov's size does not depend on the offsets in it: build once to learn it.
    let sized = try rebuild(r, moov, delta: 0)
    let newMdat = (ftyp.end - ftyp.offset) + sized.count
    let finished = try rebuild(r, moov, delta: newMdat - mdat.offset)
    var out: [UInt8] = []
    out.reserveCapacity(newMdat + (mdat.end - mdat.offset))
    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[ftyp.offset..<ftyp.end]))
    out.append(contentsOf: finished)
    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[mdat.offset..<mdat.end]))
    return out
  }

  private static func rebuild(_ r: ByteReader, _ box: ISOBox, delta: Int) throws(Failure) -> [UInt8] {
    let name = box.type.description
    var payload: [UInt8]
    if containers.contains(name) {
      let children: [ISOBox]
      do { children = try ISOBoxes.children(r, from: box.body, to: box.end) } catch {
        throw .unreadable(error.reason)
      }
      payload = []
      for child in children where !dropped.contains(child.type.description) {
        payload += try rebuild(r, child, delta: delta)
      }
    } else {
      payload = r.slice(box.body, box.end - box.body) ?? []
      switch name {
      case "stco": try shift(&payload, wide: false, by: delta)
      case "co64": try shift(&payload, wide: true, by: delta)
      case "stsd": clearCompressorNames(&payload)
      default: break
      }
    }
    let size = UInt32(8 + payload.count)
    return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
      + box.type.bytes + payload
  }

  /// Adds `delta` to every chunk offset of an `stco` (32-bit) or `co64` payload.
  private static func shift(_ payload: inout [UInt8], wide: Bool, by delta: Int) throws(Failure) {
    guard payload.count >= 8 else { throw .unreadable("chunk offsets") }
    let count = Int(payload[4]) << 24 | Int(payload[5]) << 16 | Int(payload[6]) << 8 | Int(payload[7])
    let width = wide ? 8 : 4
    guard payload.count >= 8 + count * width else { throw .unreadable("chunk offsets") }
    for i in 0..<count {
      let at = 8 + i * width
      var value = 0
      for byte in payload[at..<(at + width)] { value = value << 8 | Int(byte) }
      value += delta
      guard value >= 0, wide || value <= Int(UInt32.max) else {
        throw .unreadable("a chunk offset out of range")
      }
      for j in 0..<width { payload[at + j] = UInt8(truncatingIfNeeded: value >> (8 * (width - 1 - j))) }
    }
  }

  /// Zeroes the compressor name (32 bytes at 42 of a VisualSampleEntry's body) of `avc1` entries.
  private static func clearCompressorNames(_ payload: inout [UInt8]) {
    var at = 8
    while at + 8 <= payload.count {
      let size =
        Int(payload[at]) << 24 | Int(payload[at + 1]) << 16 | Int(payload[at + 2]) << 8 | Int(payload[at + 3])
      guard size >= 8, at + size <= payload.count else { return }
      if Array(payload[(at + 4)..<(at + 8)]) == Array("avc1".utf8), size >= 8 + 74 {
        for i in (at + 8 + 42)..<(at + 8 + 74) { payload[i] = 0 }
      }
      at += size
    }
  }
}
