import ImageContainers

/// Reads a movie's outline from its boxes: `ftyp`, `moov` with its tracks' headers, sample
/// descriptions and sample tables, and where metadata sits. Bounded by the input like the HEIF
/// reader: every box must fit in its parent, every count is checked against the bytes that
/// remain, and the work is bounded by `maxTracks` and `maxMovieBoxBytes` however the file lies.
/// It reads in place (a spooled upload's mapping; `mdat` is never touched).
public enum MovieOutlineReader {
  public enum Failure: Error, Equatable, Sendable {
    /// No `ftyp` first, or the brands are an image file's (HEIF/AVIF).
    case notAMovie
    /// A top-level box runs past the end of the file: the upload was cut.
    case truncated
    /// The structure is fine but there is no `moov` (lost after a cut `mdat`, or never written).
    case noMovieBox
    /// A box inside `moov` does not fit its parent.
    case badBox(String)
    /// More tracks than `maxTracks`.
    case tooManyTracks(Int)
    /// A `moov` larger than `maxMovieBoxBytes`.
    case movieBoxTooLarge(Int)
  }

  /// Tracks read at the most: phones write 2–6; hundreds only make the reader work.
  public static let maxTracks = 32
  /// The largest `moov` read: a 5-minute 240 fps 4K video's sample tables take a few MB.
  public static let maxMovieBoxBytes = 64 << 20

  public static func read(_ bytes: [UInt8]) throws(Failure) -> MovieOutline {
    try bytes.withBytes { bytes throws(Failure) in try read(bytes) }
  }

  /// Reads the outline of the movie in `bytes`, read in place.
  public static func read(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> MovieOutline {
    if WebMOutlineReader.isEBML(bytes) { return try WebMOutlineReader.read(bytes) }
    let r = ByteReader(bytes)
    guard r.fourCC(4) == FourCC("ftyp") else { throw .notAMovie }
    var top: [ISOBox] = []
    var offset = 0
    var cut = false
    while offset < bytes.count {
      guard let box = try? ISOBoxes.box(r, at: offset, parentEnd: bytes.count) else {
        cut = true
        break
      }
      top.append(box)
      offset = box.end
    }
    guard let ftyp = top.first, ftyp.end - ftyp.body >= 8, let major = r.fourCC(ftyp.body) else {
      throw .notAMovie
    }
    var outline = MovieOutline(majorBrand: major, fileSize: bytes.count)
    var brandOffset = ftyp.body + 8
    while brandOffset + 4 <= ftyp.end, let brand = r.fourCC(brandOffset) {
      outline.compatibleBrands.append(brand)
      brandOffset += 4
    }
    guard let moov = top.first(where: { $0.type == FourCC("moov") }) else {
      // An image file (HEIF/AVIF) has `meta` and no `moov`; a cut movie has neither after `mdat`.
      if cut { throw .truncated }
      throw top.contains(where: { $0.type == FourCC("meta") }) ? .notAMovie : .noMovieBox
    }
    if cut { throw .truncated }
    guard moov.end - moov.offset <= maxMovieBoxBytes else { throw .movieBoxTooLarge(moov.end - moov.offset) }
    for box in top
    where box.type == FourCC("uuid") || box.type == FourCC("meta") || box.type == FourCC("udta") {
      outline.metadataCarriers.append(box.type == FourCC("uuid") ? "uuid" : "\(box.type)")
    }
    try readMovie(r, moov, into: &outline)
    return outline
  }

  private static func children(_ r: ByteReader, _ box: ISOBox, skip: Int = 0) throws(Failure) -> [ISOBox] {
    do {
      return try ISOBoxes.children(r, from: box.body + skip, to: box.end)
    } catch {
      throw .badBox(error.reason)
    }
  }

  private static func readMovie(_ r: ByteReader, _ moov: ISOBox, into outline: inout MovieOutline)
    throws(Failure)
  {
    var timescale: UInt32 = 0
    var duration: UInt64 = 0
    for box in try children(r, moov) {
      switch box.type.description {
      case "mvhd":
        (timescale, duration) = timing(r, box)
      case "mvex":
        outline.isFragmented = true
        if let mehd = try children(r, box).first(where: { $0.type == FourCC("mehd") }) {
          let version = r.u8(mehd.body) ?? 0
          duration = (version == 1 ? r.u64(mehd.body + 4) : r.u32(mehd.body + 4).map(UInt64.init)) ?? 0
        }
      case "trak":
        guard outline.tracks.count < maxTracks else {
          throw .tooManyTracks(try children(r, moov).filter { $0.type == FourCC("trak") }.count)
        }
        let index = outline.tracks.count
        let track = try readTrack(r, box, index: index, carriers: &outline.metadataCarriers)
        outline.tracks.append(track)
      case "udta":
        for child in try children(r, box) {
          outline.metadataCarriers.append("moov/udta/\(child.type)")
        }
      case "meta":
        outline.metadataCarriers.append("moov/meta")
        outline.contentIdentifier = QuickTimeKeys.value(
          r, meta: box, key: "com.apple.quicktime.content.identifier")
      default:
        break
      }
    }
    if timescale > 0 && duration > 0 {
      outline.duration = Double(duration) / Double(timescale)
    }
  }

  /// (time scale, duration) of an `mvhd` or `mdhd` (version 0: 32-bit times, 1: 64-bit).
  private static func timing(_ r: ByteReader, _ box: ISOBox) -> (UInt32, UInt64) {
    if r.u8(box.body) == 1 {
      return (r.u32(box.body + 20) ?? 0, r.u64(box.body + 24) ?? 0)
    }
    return (r.u32(box.body + 12) ?? 0, r.u32(box.body + 16).map(UInt64.init) ?? 0)
  }

  private static func readTrack(_ r: ByteReader, _ trak: ISOBox, index: Int, carriers: inout [String])
    throws(Failure) -> MovieTrack
  {
    var track = MovieTrack()
    for box in try children(r, trak) {
      switch box.type.description {
      case "tkhd": readTrackHeader(r, box, into: &track)
      case "mdia": try readMedia(r, box, into: &track)
      case "udta":
        for child in try children(r, box) { carriers.append("trak[\(index)]/udta/\(child.type)") }
      case "meta": carriers.append("trak[\(index)]/meta")
      default: break
      }
    }
    switch track.handler.description {
    case "vide": track.kind = .video
    case "soun": track.kind = .audio
    case "meta":
      track.kind = .timedMetadata
      carriers.append("trak[\(index)]:\(track.format)")
    case "tmcd": track.kind = .timecode
    case "text", "sbtl", "subt", "clcp":
      track.kind = .text
      carriers.append("trak[\(index)]:\(track.format)")
    default: track.kind = .other
    }
    return track
  }

  private static func readTrackHeader(_ r: ByteReader, _ tkhd: ISOBox, into track: inout MovieTrack) {
    let version = r.u8(tkhd.body) ?? 0
    track.enabled = (r.u24(tkhd.body + 1) ?? 1) & 1 != 0
    track.id = r.u32(tkhd.body + (version == 1 ? 20 : 12)) ?? 0
    // version/flags, times and id, reserved, duration, reserved[2], layer, group, volume, reserved.
    let matrix = tkhd.body + 4 + (version == 1 ? 32 : 20) + 16
    if let a = r.u32(matrix), let b = r.u32(matrix + 4), let c = r.u32(matrix + 12),
      let d = r.u32(matrix + 16)
    {
      track.orientation = MovieOrientation(
        a: Int32(bitPattern: a), b: Int32(bitPattern: b), c: Int32(bitPattern: c), d: Int32(bitPattern: d))
    }
  }

  private static func readMedia(_ r: ByteReader, _ mdia: ISOBox, into track: inout MovieTrack) throws(Failure)
  {
    for box in try children(r, mdia) {
      switch box.type.description {
      case "mdhd": (track.timescale, track.mediaDuration) = timing(r, box)
      case "hdlr": track.handler = r.fourCC(box.body + 8) ?? track.handler
      case "minf":
        for inner in try children(r, box) {
          if inner.type == FourCC("stbl") { try readSampleTable(r, inner, into: &track) }
          if inner.type == FourCC("dinf") { try readDataReferences(r, inner, into: &track) }
        }
      default: break
      }
    }
  }

  /// A data reference is in this file when its flags have bit 0 set; any other entry (a URL, a
  /// URN, a QuickTime alias) points elsewhere and the track is not self-contained.
  private static func readDataReferences(_ r: ByteReader, _ dinf: ISOBox, into track: inout MovieTrack)
    throws(Failure)
  {
    guard let dref = try children(r, dinf).first(where: { $0.type == FourCC("dref") }) else { return }
    for entry in try children(r, dref, skip: 8) where (r.u24(entry.body + 1) ?? 0) & 1 == 0 {
      track.selfContained = false
    }
  }

  private static func readSampleTable(_ r: ByteReader, _ stbl: ISOBox, into track: inout MovieTrack)
    throws(Failure)
  {
    for box in try children(r, stbl) {
      switch box.type.description {
      case "stsd": try readSampleDescription(r, box, into: &track)
      case "stsz", "stz2": track.sampleCount = Int(r.u32(box.body + 8) ?? 0)
      case "stss": track.syncSampleCount = Int(r.u32(box.body + 4) ?? 0)
      case "stts": readTimeToSample(r, box, into: &track)
      default: break
      }
    }
  }

  /// The most common sample duration, whether durations vary, and whether one is so large that,
  /// read as signed (as demuxers read it), time runs backwards.
  private static func readTimeToSample(_ r: ByteReader, _ stts: ISOBox, into track: inout MovieTrack) {
    let count = Int(r.u32(stts.body + 4) ?? 0)
    // A box too short for its header has no entries (not a negative count).
    let entries = max(0, min(count, (stts.end - stts.body - 8) / 8))
    var samplesByDelta: [UInt32: UInt64] = [:]
    for i in 0..<entries {
      guard let samples = r.u32(stts.body + 8 + 8 * i), let delta = r.u32(stts.body + 12 + 8 * i) else {
        break
      }
      if delta >= 1 << 31 { track.timeRunsBackwards = true }
      // The last entry is often one odd sample (the final frame's duration is a guess).
      if i == entries - 1 && samples == 1 && entries > 1 { continue }
      samplesByDelta[delta, default: 0] += UInt64(samples)
    }
    track.variableFrameRate = samplesByDelta.count > 1
    track.commonSampleDelta =
      samplesByDelta.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }?
      .key ?? 0
  }

  private static func readSampleDescription(_ r: ByteReader, _ stsd: ISOBox, into track: inout MovieTrack)
    throws(Failure)
  {
    guard let entry = try children(r, stsd, skip: 8).first else { return }
    track.format = entry.type
    // A VisualSampleEntry: 6 reserved, data reference index, 16 bytes pre-defined and reserved,
    // width, height, resolutions, reserved, frame count, compressor name (32), depth, pre-defined:
    // 78 bytes, then its boxes.
    guard track.handler == FourCC("vide") else { return }
    track.codedWidth = Int(r.u16(entry.body + 24) ?? 0)
    track.codedHeight = Int(r.u16(entry.body + 26) ?? 0)
    guard entry.body + 78 <= entry.end else { return }
    let boxes: [ISOBox]
    do {
      boxes = try ISOBoxes.children(r, from: entry.body + 78, to: entry.end)
    } catch {
      throw .badBox(error.reason)
    }
    for box in boxes {
      switch box.type.description {
      case "colr":
        let kind = r.fourCC(box.body)
        if kind == FourCC("nclx") || kind == FourCC("nclc"), let p = r.u16(box.body + 4),
          let t = r.u16(box.body + 6), let m = r.u16(box.body + 8)
        {
          let full = kind == FourCC("nclx") && (r.u8(box.body + 10) ?? 0) & 0x80 != 0
          track.colour = MovieColour(primaries: p, transfer: t, matrix: m, fullRange: full)
        }
      case "dvcC", "dvvC", "dvwC":
        if let profileByte = r.u8(box.body + 2), let compat = r.u8(box.body + 4) {
          track.dolbyVision = MovieDolbyVision(profile: profileByte >> 1, compatibility: compat >> 4)
        }
      case "lhvC":
        track.hasMultiviewLayer = true
      default: break
      }
    }
  }
}
