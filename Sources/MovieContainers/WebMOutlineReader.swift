import ImageContainers

/// Reads the outline of a WebM (or Matroska) movie from its EBML elements: the header's doc
/// type, `Info` (time scale, duration, title), `Tracks` (codec, frame size, colour, frame
/// duration) and the `Cluster`s' block headers, whose times give the duration and frame counts
/// that a live recorder's file (a browser's MediaRecorder: sizes unknown, no duration, no cues)
/// does not state. Block payloads are skipped, never read. Bounded like the ISO reader: every
/// element must fit its parent, only `Segment` and `Cluster` may have an unknown size, and at
/// most `maxElements` element headers are read however the file lies.
enum WebMOutlineReader {
  typealias Failure = MovieOutlineReader.Failure

  /// Element headers read at the most: a 5-minute 60 fps clip with audio has ~35 000 blocks.
  static let maxElements = 2_000_000

  /// The EBML magic every WebM and Matroska file starts with.
  static func isEBML(_ bytes: UnsafeRawBufferPointer) -> Bool {
    bytes.count >= 4 && bytes[0] == 0x1A && bytes[1] == 0x45 && bytes[2] == 0xDF && bytes[3] == 0xA3
  }

  // Element IDs (Matroska specification), with their length markers.
  private enum ID {
    static let ebml: UInt32 = 0x1A45_DFA3
    static let docType: UInt32 = 0x4282
    static let segment: UInt32 = 0x1853_8067
    static let info: UInt32 = 0x1549_A966
    static let timecodeScale: UInt32 = 0x2A_D7B1
    static let duration: UInt32 = 0x4489
    static let title: UInt32 = 0x7BA9
    static let tracks: UInt32 = 0x1654_AE6B
    static let trackEntry: UInt32 = 0xAE
    static let trackNumber: UInt32 = 0xD7
    static let trackType: UInt32 = 0x83
    static let flagEnabled: UInt32 = 0xB9
    static let codecID: UInt32 = 0x86
    static let defaultDuration: UInt32 = 0x23_E383
    static let trackName: UInt32 = 0x536E
    static let video: UInt32 = 0xE0
    static let pixelWidth: UInt32 = 0xB0
    static let pixelHeight: UInt32 = 0xBA
    static let colour: UInt32 = 0x55B0
    static let matrixCoefficients: UInt32 = 0x55B1
    static let range: UInt32 = 0x55B9
    static let transferCharacteristics: UInt32 = 0x55BA
    static let primaries: UInt32 = 0x55BB
    static let cluster: UInt32 = 0x1F43_B675
    static let clusterTimecode: UInt32 = 0xE7
    static let simpleBlock: UInt32 = 0xA3
    static let blockGroup: UInt32 = 0xA0
    static let block: UInt32 = 0xA1
    static let tags: UInt32 = 0x1254_C367
    static let attachments: UInt32 = 0x1941_A469
    static let chapters: UInt32 = 0x1043_A770
    /// Level-1 elements: where an unknown-size cluster ends.
    static let topLevel: Set<UInt32> = [
      info, tracks, cluster, tags, attachments, chapters, 0x114D_9B74, 0x1C53_BB6B,
    ]
  }

  /// One element header: its ID, where its data starts and ends (the parent's end when the
  /// size is unknown).
  private struct Element {
    var id: UInt32
    var body: Int
    var end: Int
    var unknownSize: Bool
  }

  /// The blocks seen for one track: how many, and the first and last times (in time-scale
  /// units).
  private struct Blocks {
    var count = 0
    var first: Int64?
    var last: Int64 = 0
  }

  static func read(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> MovieOutline {
    var budget = maxElements
    guard let header = try element(bytes, at: 0, parentEnd: bytes.count, budget: &budget),
      header.id == ID.ebml
    else { throw .notAMovie }
    var docType = "matroska"
    for child in try children(bytes, header, budget: &budget) where child.id == ID.docType {
      docType = string(bytes, child)
    }
    guard docType == "webm" || docType == "matroska" else { throw .notAMovie }
    var outline = MovieOutline(
      majorBrand: docType == "webm" ? FourCC("webm") : FourCC("mkv "), fileSize: bytes.count)
    guard let segment = try element(bytes, at: header.end, parentEnd: bytes.count, budget: &budget),
      segment.id == ID.segment
    else { throw header.end >= bytes.count ? .truncated : .notAMovie }

    var timecodeScale: Int64 = 1_000_000  // nanoseconds per time-scale unit
    var statedDuration: Double?
    var numbers: [UInt64] = []
    var blocks: [UInt64: Blocks] = [:]
    var clusterTime: Int64?
    var sawTracks = false
    var offset = segment.body
    while offset < segment.end {
      let next: Element?
      do {
        next = try element(bytes, at: offset, parentEnd: segment.end, budget: &budget)
      } catch {
        // A recording cut after its tracks: the clusters read so far stand.
        if sawTracks, error == .truncated { break }
        throw error
      }
      guard let child = next else { break }
      switch child.id {
      case ID.info:
        for field in try children(bytes, child, budget: &budget) {
          switch field.id {
          case ID.timecodeScale: timecodeScale = Int64(clamping: unsigned(bytes, field))
          case ID.duration: statedDuration = float(bytes, field)
          case ID.title: outline.metadataCarriers.append("Info/Title")
          default: break
          }
        }
      case ID.tracks:
        sawTracks = true
        for entry in try children(bytes, child, budget: &budget) where entry.id == ID.trackEntry {
          guard outline.tracks.count < MovieOutlineReader.maxTracks else {
            throw .tooManyTracks(outline.tracks.count + 1)
          }
          let (track, number) = try readTrack(bytes, entry, index: outline.tracks.count, budget: &budget)
          if track.kind == .timedMetadata || track.kind == .text {
            outline.metadataCarriers.append("Tracks/\(outline.tracks.count)")
          }
          outline.tracks.append(track)
          numbers.append(number)
        }
      case ID.cluster:
        var inner = child.body
        while inner < child.end {
          // A cluster of unknown size ends where the next level-1 element begins.
          if child.unknownSize, let (id, _) = vint(bytes, inner, end: child.end, keepMarker: true),
            ID.topLevel.contains(UInt32(clamping: id))
          {
            break
          }
          // A block cut by the end of the file ends the cluster.
          guard let field = try? element(bytes, at: inner, parentEnd: child.end, budget: &budget) else {
            inner = child.end
            break
          }
          switch field.id {
          case ID.clusterTimecode:
            let time = Int64(clamping: unsigned(bytes, field))
            if let previous = clusterTime, time < previous {
              for index in outline.tracks.indices { outline.tracks[index].timeRunsBackwards = true }
            }
            clusterTime = time
          case ID.simpleBlock:
            count(bytes, field.body, end: field.end, clusterTime: clusterTime, into: &blocks)
          case ID.blockGroup:
            for part in try children(bytes, field, budget: &budget) where part.id == ID.block {
              count(bytes, part.body, end: part.end, clusterTime: clusterTime, into: &blocks)
            }
          default: break
          }
          inner = field.end
        }
        offset = child.unknownSize ? inner : child.end
        continue
      case ID.tags: outline.metadataCarriers.append("Tags")
      case ID.attachments: outline.metadataCarriers.append("Attachments")
      case ID.chapters: outline.metadataCarriers.append("Chapters")
      default: break
      }
      offset = child.end
    }
    guard sawTracks else { throw offset >= bytes.count ? .truncated : .noMovieBox }

    // Times in microseconds: `MovieTrack`'s time scale.
    let microsecondsPerUnit = Double(timecodeScale) / 1_000
    for (index, number) in numbers.enumerated() {
      let seen = blocks[number] ?? Blocks()
      outline.tracks[index].sampleCount = seen.count
      if let first = seen.first {
        // In doubles: the difference of two extreme times overflows an Int64.
        let span = (Double(seen.last) - Double(first)) * microsecondsPerUnit
        // The last frame lasts one frame duration (or as long as the average one).
        let frame =
          outline.tracks[index].commonSampleDelta > 0
          ? Double(outline.tracks[index].commonSampleDelta)
          : (seen.count > 1 ? span / Double(seen.count - 1) : 0)
        // Capped far below UInt64.max (a hostile time scale makes any span): admission
        // refuses such a length as too long.
        outline.tracks[index].mediaDuration = UInt64(min(max(0, span + frame), 0x1p62).rounded())
      }
    }
    if let statedDuration, statedDuration > 0, statedDuration.isFinite {
      outline.duration = statedDuration * Double(timecodeScale) / 1_000_000_000
    } else {
      // A live recording states none: the longest track's blocks say it.
      let longest = outline.tracks.compactMap(\.seconds).max()
      outline.duration = longest.flatMap { $0 > 0 ? $0 : nil }
    }
    return outline
  }

  /// One `TrackEntry` as a `MovieTrack` (the codec ID mapped to the ISO sample entry name the
  /// rest of attachd knows), and its track number.
  private static func readTrack(
    _ bytes: UnsafeRawBufferPointer, _ entry: Element, index: Int, budget: inout Int
  ) throws(Failure) -> (MovieTrack, UInt64) {
    var track = MovieTrack()
    track.id = UInt32(index + 1)
    track.timescale = 1_000_000
    var number: UInt64 = 0
    var type: UInt64 = 0
    var codec = ""
    for field in try children(bytes, entry, budget: &budget) {
      switch field.id {
      case ID.trackNumber: number = unsigned(bytes, field)
      case ID.trackType: type = unsigned(bytes, field)
      case ID.flagEnabled: track.enabled = unsigned(bytes, field) != 0
      case ID.codecID: codec = string(bytes, field)
      case ID.defaultDuration:
        track.commonSampleDelta = UInt32(clamping: unsigned(bytes, field) / 1_000)
      case ID.video:
        var colour = MovieColour(primaries: 2, transfer: 2, matrix: 2, fullRange: false)
        var hasColour = false
        for part in try children(bytes, field, budget: &budget) {
          switch part.id {
          case ID.pixelWidth: track.codedWidth = Int(clamping: unsigned(bytes, part))
          case ID.pixelHeight: track.codedHeight = Int(clamping: unsigned(bytes, part))
          case ID.colour:
            hasColour = true
            for value in try children(bytes, part, budget: &budget) {
              let code = UInt16(clamping: unsigned(bytes, value))
              switch value.id {
              case ID.matrixCoefficients: colour.matrix = code
              case ID.transferCharacteristics: colour.transfer = code
              case ID.primaries: colour.primaries = code
              case ID.range: colour.fullRange = code == 2
              default: break
              }
            }
          default: break
          }
        }
        if hasColour { track.colour = colour }
      default: break
      }
    }
    track.kind =
      switch type {
      case 1: .video
      case 2: .audio
      case 0x11: .text
      case 0x21: .timedMetadata
      default: .other
      }
    let formats: [String: FourCC] = [
      "V_VP9": FourCC("vp09"), "V_VP8": FourCC("vp08"), "V_AV1": FourCC("av01"),
      "V_MPEG4/ISO/AVC": FourCC("avc1"), "V_MPEGH/ISO/HEVC": FourCC("hvc1"),
      "A_OPUS": FourCC("Opus"), "A_VORBIS": FourCC("vorb"), "A_AAC": FourCC("mp4a"), "A_FLAC": FourCC("fLaC"),
    ]
    track.format = formats[codec] ?? FourCC(0, 0, 0, 0)
    return (track, number)
  }

  /// Counts a block for its track: the track number (a vint), then the time relative to the
  /// cluster (signed 16 bits).
  private static func count(
    _ bytes: UnsafeRawBufferPointer, _ at: Int, end: Int, clusterTime: Int64?,
    into blocks: inout [UInt64: Blocks]
  ) {
    guard let (number, length) = vint(bytes, at, end: end, keepMarker: false), at + length + 2 <= end else {
      return
    }
    let relative = Int16(bitPattern: UInt16(bytes[at + length]) << 8 | UInt16(bytes[at + length + 1]))
    // A cluster time is a free-sized integer: one near Int64.max plus the block's offset would
    // overflow, and such a block is not counted.
    let (time, overflow) = (clusterTime ?? 0).addingReportingOverflow(Int64(relative))
    guard !overflow else { return }
    var seen = blocks[number] ?? Blocks()
    seen.count += 1
    seen.last = seen.first == nil ? time : max(seen.last, time)
    seen.first = min(seen.first ?? time, time)
    blocks[number] = seen
  }

  /// The element header at `offset`, or nil at `parentEnd`. An element that runs past its parent
  /// is cut (the file ends inside it: truncated) unless it is the file's last, partly written
  /// cluster content, which the callers stop at.
  private static func element(
    _ bytes: UnsafeRawBufferPointer, at offset: Int, parentEnd: Int, budget: inout Int
  ) throws(Failure) -> Element? {
    guard offset < parentEnd else { return nil }
    budget -= 1
    guard budget > 0 else { throw .badBox("more than \(maxElements) EBML elements") }
    guard let (id, idLength) = vint(bytes, offset, end: parentEnd, keepMarker: true), idLength <= 4,
      let (size, sizeLength) = vint(bytes, offset + idLength, end: parentEnd, keepMarker: false)
    else { throw .truncated }
    let body = offset + idLength + sizeLength
    let unknown = size == (UInt64(1) << (7 * UInt64(sizeLength))) - 1
    if unknown {
      guard id == UInt64(ID.segment) || id == UInt64(ID.cluster) else {
        throw .badBox("EBML element \(String(id, radix: 16)) of unknown size")
      }
      return Element(id: UInt32(id), body: body, end: parentEnd, unknownSize: true)
    }
    guard size <= UInt64(parentEnd - body) else {
      // Cut at the end of the file: what was read so far stands for a cluster (a recording
      // stopped mid-write); anything else is a truncated file.
      if parentEnd == bytes.count && (id == UInt64(ID.cluster) || id == UInt64(ID.simpleBlock)) {
        return Element(id: UInt32(id), body: body, end: parentEnd, unknownSize: false)
      }
      throw parentEnd == bytes.count
        ? .truncated : .badBox("EBML element \(String(id, radix: 16)) overruns its parent")
    }
    return Element(id: UInt32(id), body: body, end: body + Int(size), unknownSize: false)
  }

  private static func children(
    _ bytes: UnsafeRawBufferPointer, _ parent: Element, budget: inout Int
  ) throws(Failure) -> [Element] {
    var result: [Element] = []
    var offset = parent.body
    while let child = try element(bytes, at: offset, parentEnd: parent.end, budget: &budget) {
      result.append(child)
      offset = child.end
    }
    return result
  }

  /// An EBML variable-length integer at `offset`: its value (with the length marker kept for
  /// IDs, removed for sizes) and its length in bytes.
  private static func vint(
    _ bytes: UnsafeRawBufferPointer, _ offset: Int, end: Int, keepMarker: Bool
  ) -> (UInt64, Int)? {
    guard offset < end else { return nil }
    let first = bytes[offset]
    guard first != 0 else { return nil }
    let length = first.leadingZeroBitCount + 1
    guard offset + length <= end else { return nil }
    var value = UInt64(keepMarker ? first : first & (0xFF >> UInt8(length)))
    for index in 1..<length { value = value << 8 | UInt64(bytes[offset + index]) }
    return (value, length)
  }

  private static func unsigned(_ bytes: UnsafeRawBufferPointer, _ element: Element) -> UInt64 {
    guard element.end - element.body <= 8 else { return 0 }
    var value: UInt64 = 0
    for index in element.body..<element.end { value = value << 8 | UInt64(bytes[index]) }
    return value
  }

  private static func float(_ bytes: UnsafeRawBufferPointer, _ element: Element) -> Double? {
    let value = unsigned(bytes, element)
    switch element.end - element.body {
    case 4: return Double(Float(bitPattern: UInt32(truncatingIfNeeded: value)))
    case 8: return Double(bitPattern: value)
    default: return nil
    }
  }

  private static func string(_ bytes: UnsafeRawBufferPointer, _ element: Element) -> String {
    let slice = UnsafeRawBufferPointer(rebasing: bytes[element.body..<min(element.end, element.body + 64)])
    return String(decoding: slice.prefix { $0 != 0 }, as: UTF8.self)
  }
}
