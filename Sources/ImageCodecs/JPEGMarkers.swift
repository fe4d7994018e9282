import ImageContainers

/// The few facts TurboJPEG 2.1 does not report, from a JPEG's marker segments before the first
/// SOS: sample precision, coding process, the Adobe APP14 marker and the APP2 ICC profile chunks.
struct JPEGMarkers {
  /// Sample precision from the SOF segment (8 or 12), nil when no SOF was found.
  var precision: Int?
  /// The SOF marker byte (0xC0 baseline, 0xC2 progressive, 0xC9 arithmetic, …).
  var frameMarker: UInt8?
  /// Whether an Adobe APP14 segment is present (its CMYK samples are stored inverted).
  var hasAdobeMarker = false
  /// ICC_PROFILE chunks as (sequence number, byte range in the file).
  var iccChunks: [(sequence: UInt8, range: Range<Int>)] = []

  /// Reads what it can; a malformed or cut segment ends the walk with the facts found so far.
  init(_ data: UnsafeRawBufferPointer) {
    guard var markers = JPEGMarkerReader(data) else { return }
    while true {
      // Stray bytes between segments are skipped as libjpeg skips them.
      markers.skipExtraneousBytes()
      guard let marker = try? markers.nextMarker() else { return }
      // A repeated SOI is skipped like the standalone markers.
      if marker == 0xD8 || JPEGMarkerReader.isStandalone(marker) { continue }
      if marker == 0xDA || marker == 0xD9 { return }
      guard let body = try? markers.segmentBody() else { return }
      inspect(marker: marker, data, body)
    }
  }

  private mutating func inspect(marker: UInt8, _ data: UnsafeRawBufferPointer, _ body: Range<Int>) {
    switch marker {
    case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
      if frameMarker == nil, !body.isEmpty {
        frameMarker = marker
        precision = Int(data[body.lowerBound])
      }
    case 0xEE:
      let adobe: [UInt8] = Array("Adobe".utf8)
      if body.count >= 12, Array(data[body.lowerBound..<body.lowerBound + 5]) == adobe {
        hasAdobeMarker = true
      }
    case 0xE2:
      let tag: [UInt8] = Array("ICC_PROFILE".utf8) + [0]
      let head = body.lowerBound
      if body.count > 14, Array(data[head..<head + 12]) == tag {
        iccChunks.append((data[head + 12], head + 14..<body.upperBound))
      }
    default:
      break
    }
  }

  /// The ICC profile reassembled from its APP2 chunks in sequence order, nil when absent.
  func iccProfile(_ data: UnsafeRawBufferPointer) -> [UInt8]? {
    guard !iccChunks.isEmpty else { return nil }
    var profile: [UInt8] = []
    profile.reserveCapacity(iccChunks.reduce(0) { $0 + $1.range.count })
    for chunk in iccChunks.sorted(by: { $0.sequence < $1.sequence }) {
      profile.append(contentsOf: data[chunk.range])
    }
    return profile
  }
}
