/// What the pipeline needs from an EXIF block: IFD0 Orientation and which private parts exist.
public struct EXIFInfo: Sendable, Equatable {
  /// The raw IFD0 Orientation value, if the tag is present (any number, even out of range).
  public var rawOrientation: Int?
  /// Whether IFD0 points to a GPS IFD (even when the pointer is broken).
  public var hasGPS: Bool = false
  /// Whether IFD0 points to an Exif sub-IFD (camera settings, maker notes).
  public var hasExifIFD: Bool = false
  /// Whether IFD1 describes an embedded JPEG thumbnail.
  public var hasThumbnail: Bool = false
  /// Whether IFD0 names an artist or a copyright holder.
  public var hasPersonalNames: Bool = false
  /// Bytes of the TIFF block.
  public var byteCount: Int = 0
  /// An iPhone's Live Photo content identifier (Apple MakerNote tag 0x0011): the still's half of
  /// the pairing with its movie. Read to pair the two, never written into an output.
  public var appleContentIdentifier: String?

  /// The EXIF orientation value to apply: the tag's value when it is 1…8, else 1 (out-of-range
  /// counts as 1, as EXIF readers do).
  public var orientationValue: Int {
    guard let rawOrientation, (1...8).contains(rawOrientation) else { return 1 }
    return rawOrientation
  }
}

/// Reads a TIFF-structured EXIF block (`II*\0` or `MM\0*` header) without trusting any offset.
public enum EXIFReader {
  static let exifPrefix: [UInt8] = Array("Exif\0\0".utf8)
  /// IFD entries read per directory; real files have well under 100.
  static let maxEntries = 1024

  /// Parses EXIF that may start with the `Exif\0\0` APP1 prefix (PNG `eXIf` and WebP `EXIF`
  /// writers disagree on whether to include it). Nil when there is no valid TIFF header.
  public static func read(_ bytes: [UInt8]) -> EXIFInfo? {
    bytes.withUnsafeBytes { read(ByteReader($0)) }
  }

  package static func read(_ reader: ByteReader) -> EXIFInfo? {
    var tiff = reader
    if reader.matches(reader.start, exifPrefix) {
      guard let rest = reader.sub(reader.start + 6, reader.limit - reader.start - 6) else { return nil }
      tiff = rest
    }
    return readTIFF(tiff)
  }

  /// Parses a block that starts exactly at the TIFF header; offsets are relative to it.
  static func readTIFF(_ block: ByteReader) -> EXIFInfo? {
    let base = block.start
    let littleEndian: Bool
    if block.matches(base, [0x49, 0x49, 0x2A, 0x00]) {
      littleEndian = true
    } else if block.matches(base, [0x4D, 0x4D, 0x00, 0x2A]) {
      littleEndian = false
    } else {
      return nil
    }
    let r = block.with(littleEndian: littleEndian)
    var info = EXIFInfo()
    info.byteCount = r.limit - base
    guard let ifd0Offset = r.u32(base + 4) else { return info }
    var nextIFD: UInt32 = 0
    forEachEntry(r, base: base, ifdOffset: ifd0Offset, next: &nextIFD) { tag, type, count, valueOffset in
      switch tag {
      case 0x0112:
        // SHORT (3) is the standard type; some writers use LONG (4). Either way the value is inline.
        if type == 3, count >= 1, let v = r.u16(valueOffset) {
          info.rawOrientation = Int(v)
        } else if type == 4, count >= 1, let v = r.u32(valueOffset) {
          info.rawOrientation = Int(clamping: v)
        } else {
          info.rawOrientation = 0
        }
      case 0x8825: info.hasGPS = true
      case 0x8769:
        info.hasExifIFD = true
        if let exifIFD = r.u32(valueOffset) {
          info.appleContentIdentifier = appleContentIdentifier(r, base: base, exifIFD: exifIFD)
        }
      case 0x013B, 0x8298: info.hasPersonalNames = true
      default: break
      }
    }
    if nextIFD != 0 {
      var ignored: UInt32 = 0
      forEachEntry(r, base: base, ifdOffset: nextIFD, next: &ignored) { tag, _, _, _ in
        if tag == 0x0201 || tag == 0x0111 { info.hasThumbnail = true }
      }
    }
    return info
  }

  static let appleMakerNotePrefix: [UInt8] = Array("Apple iOS\0".utf8)

  /// Tag 0x0011 of an Apple MakerNote found in the Exif IFD. Apple's MakerNote is "Apple iOS\0",
  /// a version, a byte-order mark and an IFD at 14 whose offsets count from the MakerNote's own
  /// start (exiftool's Apple.pm reads it the same way).
  private static func appleContentIdentifier(_ r: ByteReader, base: Int, exifIFD: UInt32) -> String? {
    var identifier: String?
    var ignored: UInt32 = 0
    forEachEntry(r, base: base, ifdOffset: exifIFD, next: &ignored) { tag, type, count, valueOffset in
      guard tag == 0x927C, type == 7, count > 14, let offset = r.u32(valueOffset) else { return }
      let note = base + Int(offset)
      guard r.has(note, Int(count)), r.matches(note, appleMakerNotePrefix),
        let noteReader = r.sub(note, Int(count))
      else { return }
      let littleEndian = noteReader.matches(note + 12, Array("II".utf8))
      let n = noteReader.with(littleEndian: littleEndian)
      var next: UInt32 = 0
      forEachEntry(n, base: note, ifdOffset: 14, next: &next) { tag, type, count, valueOffset in
        guard tag == 0x0011, type == 2, count > 0, count <= 256 else { return }
        let at = count <= 4 ? valueOffset : note + Int(n.u32(valueOffset) ?? 0)
        guard let bytes = n.slice(at, Int(count)) else { return }
        identifier = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
      }
    }
    return identifier
  }

  /// Calls `body(tag, type, count, absoluteOffsetOfValueField)` for each entry of one IFD.
  private static func forEachEntry(
    _ r: ByteReader, base: Int, ifdOffset: UInt32, next: inout UInt32,
    _ body: (UInt16, UInt16, UInt32, Int) -> Void
  ) {
    let start = base + Int(ifdOffset)
    guard let count = r.u16(start) else { return }
    let entries = min(Int(count), maxEntries)
    for i in 0..<entries {
      let entry = start + 2 + i * 12
      guard let tag = r.u16(entry), let type = r.u16(entry + 2), let n = r.u32(entry + 4),
        r.has(entry + 8, 4)
      else { return }
      body(tag, type, n, entry + 8)
    }
    next = r.u32(start + 2 + entries * 12) ?? 0
  }
}
