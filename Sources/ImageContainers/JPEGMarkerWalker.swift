/// What a JPEG's headers say, read before any pixel is decoded.
public struct JPEGMarkerInfo: Sendable {
  public var width = 0
  public var height = 0
  /// Sample precision of the frame (8 for nearly all files; 12 cannot be decoded here).
  public var precision = 0
  public var components = 0
  /// The SOF marker byte (0xC0…0xCF except C4, C8, CC).
  public var frameMarker: UInt8 = 0
  /// Horizontal and vertical sampling factors of each component, in frame order.
  public var sampling: [(h: Int, v: Int)] = []
  /// Transform flag of an Adobe APP14 segment (0 = none/CMYK, 1 = YCbCr, 2 = YCCK).
  public var adobeTransform: Int?
  public var hasJFIF = false
  /// The ICC profile reassembled from its APP2 chunks, when they form a complete sequence.
  public var iccProfile: [UInt8]?
  /// APP2 ICC chunks that could not be reassembled (missing or inconsistent sequence numbers).
  public var iccProfileBroken = false
  public var exif: EXIFInfo?
  public var metadata = MetadataInventory()
  /// Offset of the first SOS segment, if the walk got that far.
  public var firstScanOffset: Int?

  public var isProgressive: Bool { [0xC2, 0xC6, 0xCA, 0xCE].contains(frameMarker) }
  public var isArithmetic: Bool { frameMarker >= 0xC9 && frameMarker != 0xCC }
  public var isLossless: Bool { [0xC3, 0xC7, 0xCB, 0xCF].contains(frameMarker) }
  public var isHierarchical: Bool { [0xC5, 0xC6, 0xC7, 0xCD, 0xCE, 0xCF].contains(frameMarker) }
  /// Baseline or extended Huffman sequential: what `tjTransform` can copy without re-encoding.
  public var isHuffmanSequential: Bool { frameMarker == 0xC0 || frameMarker == 0xC1 }
}

/// Walks JPEG marker segments from SOI to the first SOS; never reads past the data it has.
public enum JPEGMarkerWalker {
  public enum Failure: Error, Equatable {
    case notJPEG
    case truncated
    case noFrame
    case badSegment
  }

  static let iccSignature: [UInt8] = Array("ICC_PROFILE\0".utf8)
  static let xmpSignature: [UInt8] = Array("http://ns.adobe.com/xap/1.0/".utf8)
  static let xmpExtendedSignature: [UInt8] = Array("http://ns.adobe.com/xmp/extension/".utf8)
  static let photoshopSignature: [UInt8] = Array("Photoshop 3.0\0".utf8)
  static let maxICCChunks = 255

  /// Reads the headers up to the first scan. Throws when there is no SOI, no frame header
  /// before the first scan, or a segment runs past the end of the data.
  public static func read(_ bytes: [UInt8]) throws(Failure) -> JPEGMarkerInfo {
    try bytes.withBytes { bytes throws(Failure) in try read(bytes) }
  }

  /// Walks the markers of bytes read in place.
  public static func read(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> JPEGMarkerInfo {
    guard var markers = JPEGMarkerReader(bytes) else { throw .notJPEG }
    var info = JPEGMarkerInfo()
    var iccChunks: [Int: [UInt8]] = [:]
    var iccCount: Int?
    while true {
      let marker: UInt8
      let range: Range<Int>
      do throws(JPEGMarkerReader.Stop) {
        // Stray bytes between segments: libjpeg skips them with a warning (`JPEGRecovery`).
        markers.skipExtraneousBytes()
        marker = try markers.nextMarker()
        // EOI before the first scan: the image was cut.
        if marker == 0xD9 { throw .ended }
        if JPEGMarkerReader.isStandalone(marker) { continue }
        range = try markers.segmentBody()
      } catch {
        throw failure(error, sawFrame: info.frameMarker != 0)
      }
      let body = range.lowerBound
      let bodyLength = range.count
      let segment = ByteReader(bytes, start: body, limit: body + bodyLength)
      switch marker {
      case 0xDA:
        guard info.frameMarker != 0 else { throw .noFrame }
        info.firstScanOffset = body - 4
        finishICC(&info, iccChunks, iccCount)
        return info
      case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
        guard info.frameMarker == 0 else { break }
        try readFrame(segment, marker: marker, into: &info)
      case 0xE0:
        if segment.matches(body, Array("JFIF\0".utf8)) { info.hasJFIF = true }
        if segment.matches(body, Array("JFXX\0".utf8)) { info.metadata.thumbnail = true }
      case 0xE1:
        if segment.matches(body, EXIFReader.exifPrefix) {
          info.metadata.exif = true
          // The first APP1 Exif segment is the one readers honour.
          if info.exif == nil, let exif = EXIFReader.read(segment) {
            info.exif = exif
            info.metadata.absorb(exif)
          }
        } else if segment.matches(body, xmpSignature) || segment.matches(body, xmpExtendedSignature) {
          info.metadata.xmp = true
        } else {
          info.metadata.otherSegments = true
        }
      case 0xE2:
        if segment.matches(body, iccSignature) {
          info.metadata.iccProfile = true
          let seq = Int(segment.u8(body + 12) ?? 0)
          let count = Int(segment.u8(body + 13) ?? 0)
          if seq == 0 || count == 0 || seq > count || (iccCount != nil && iccCount != count)
            || iccChunks[seq] != nil
          {
            info.iccProfileBroken = true
          } else {
            iccCount = count
            iccChunks[seq] = segment.slice(body + 14, bodyLength - 14)
          }
        } else if segment.matches(body, Array("MPF\0".utf8)) {
          info.metadata.mpf = true
        } else {
          info.metadata.otherSegments = true
        }
      case 0xED:
        if segment.matches(body, photoshopSignature) {
          info.metadata.iptc = true
        } else {
          info.metadata.otherSegments = true
        }
      case 0xEE:
        if segment.matches(body, Array("Adobe".utf8)), let t = segment.u8(body + 11) {
          info.adobeTransform = Int(t)
        }
      case 0xFE:
        info.metadata.comment = true
      case 0xE3...0xEF:
        info.metadata.otherSegments = true
      default:
        break
      }
    }
  }

  /// What a stop means here: before the frame header, no frame; after it, a cut or broken file.
  private static func failure(_ stop: JPEGMarkerReader.Stop, sawFrame: Bool) -> Failure {
    switch stop {
    case .notAMarker: sawFrame ? .badSegment : .noFrame
    case .ended: sawFrame ? .truncated : .noFrame
    case .badLength: .truncated
    }
  }

  private static func readFrame(_ s: ByteReader, marker: UInt8, into info: inout JPEGMarkerInfo)
    throws(Failure)
  {
    let p = s.start
    guard let precision = s.u8(p), let height = s.u16(p + 1), let width = s.u16(p + 3),
      let components = s.u8(p + 5)
    else { throw .badSegment }
    info.frameMarker = marker
    info.precision = Int(precision)
    info.height = Int(height)
    info.width = Int(width)
    info.components = Int(components)
    for i in 0..<Int(components) {
      guard let factors = s.u8(p + 6 + i * 3 + 1) else { throw .badSegment }
      info.sampling.append((Int(factors >> 4), Int(factors & 0x0F)))
    }
  }

  private static func finishICC(
    _ info: inout JPEGMarkerInfo, _ chunks: [Int: [UInt8]], _ count: Int?
  ) {
    guard let count, !info.iccProfileBroken else { return }
    guard chunks.count == count else {
      info.iccProfileBroken = true
      return
    }
    var profile: [UInt8] = []
    for seq in 1...count {
      guard let chunk = chunks[seq] else {
        info.iccProfileBroken = true
        return
      }
      profile.append(contentsOf: chunk)
    }
    info.iccProfile = profile
  }
}
