import ImageContainers

/// The proof that an MP4 attachd made carries pictures, sound and the tables to play them, and
/// nothing else: run on every rendition before it is stored, as `JPEGMarkerWalker` is on every
/// still. A movie passes only if
/// - every box is on the allow-list below, at its place in the tree (no `udta`, `meta`, `uuid`,
///   chapters, data or timecode tracks, no box we did not expect);
/// - every creation and modification time is zero;
/// - handler names are the fixed ones muxers write, sample entries name no compressor;
/// - the only data reference is "this file";
/// - no H.264/HEVC sample holds an SEI message (x264 writes its version and settings in one).
public enum MovieOutputCheck {
  public enum Finding: Error, Equatable, Sendable {
    case unreadable(String)
    /// A box that is not on the allow-list at this path (`moov/udta`, `moov/trak/meta` …).
    case boxNotAllowed(String)
    /// A creation or modification time that is not zero, in the named box.
    case timeNotZero(String)
    /// Text where only fixed strings may be: a handler name, a compressor name.
    case textNotAllowed(String)
    /// A data reference that is not "this file".
    case externalReference
    /// An SEI message in a video sample (track index).
    case seiInSample(track: Int)
    /// A sample outside the file.
    case sampleOutOfBounds(track: Int)
  }

  /// The allowed children of each box type; a type absent from this table may have no children
  /// we look into (it is a leaf whose fields are checked below, or opaque codec configuration).
  static let tree: [String: Set<String>] = [
    "": ["ftyp", "moov", "mdat", "free"],
    "moov": ["mvhd", "trak", "iods"],
    "trak": ["tkhd", "edts", "mdia"],
    "edts": ["elst"],
    "mdia": ["mdhd", "hdlr", "minf"],
    "minf": ["vmhd", "smhd", "dinf", "stbl"],
    "dinf": ["dref"],
    "stbl": ["stsd", "stts", "stss", "ctts", "stsc", "stsz", "stco", "co64", "sgpd", "sbgp", "sdtp"],
  ]
  /// Sample entries allowed in `stsd`, and the boxes each may hold.
  static let sampleEntries: [String: Set<String>] = [
    "avc1": ["avcC", "pasp", "colr", "btrt"],
    "mp4a": ["esds", "btrt"],
  ]
  /// Handler names muxers write by themselves (FFmpeg's defaults); anything else is refused.
  static let handlerNames: Set<String> = ["", "VideoHandler", "SoundHandler"]

  public static func verify(_ bytes: [UInt8]) throws(Finding) {
    try bytes.withBytes { bytes throws(Finding) in try verify(bytes) }
  }

  public static func verify(_ bytes: UnsafeRawBufferPointer) throws(Finding) {
    let r = ByteReader(bytes)
    let top = try children(r, from: 0, to: bytes.count)
    try checkTree(r, top, path: "")
    guard let moov = top.first(where: { $0.type == FourCC("moov") }) else { throw .unreadable("no moov") }
    let traks = try children(r, from: moov.body, to: moov.end).filter { $0.type == FourCC("trak") }
    for (index, trak) in traks.enumerated() {
      try checkSamples(r, trak, index: index)
    }
  }

  private static func children(_ r: ByteReader, from: Int, to: Int) throws(Finding) -> [ISOBox] {
    do {
      return try ISOBoxes.children(r, from: from, to: to)
    } catch {
      throw .unreadable(error.reason)
    }
  }

  private static func checkTree(_ r: ByteReader, _ boxes: [ISOBox], path: String) throws(Finding) {
    let parent = String(path.split(separator: "/").last ?? "")
    let allowed = tree[parent] ?? []
    for box in boxes {
      let name = box.type.description
      let here = path.isEmpty ? name : "\(path)/\(name)"
      guard allowed.contains(name) else { throw .boxNotAllowed(here) }
      try checkFields(r, box, path: here)
      if tree[name] != nil {
        try checkTree(r, try children(r, from: box.body, to: box.end), path: here)
      }
    }
  }

  /// The fields of a leaf box that could carry a time or text.
  private static func checkFields(_ r: ByteReader, _ box: ISOBox, path: String) throws(Finding) {
    switch box.type.description {
    case "mvhd", "tkhd", "mdhd":
      // version 0: 32-bit creation and modification times; version 1: 64-bit.
      let version = r.u8(box.body) ?? 0
      let zero =
        version == 1
        ? r.u64(box.body + 4) == 0 && r.u64(box.body + 12) == 0
        : r.u32(box.body + 4) == 0 && r.u32(box.body + 8) == 0
      guard zero else { throw .timeNotZero(path) }
    case "hdlr":
      let nameStart = box.body + 24
      let end = r.nulTerminator(from: nameStart, end: box.end) ?? box.end
      let name = String(decoding: r.slice(nameStart, max(0, end - nameStart)) ?? [], as: UTF8.self)
      guard handlerNames.contains(name) else { throw .textNotAllowed("\(path) name \"\(name)\"") }
    case "dref":
      let entries = try children(r, from: box.body + 8, to: box.end)
      for entry in entries {
        guard entry.type == FourCC("url "), (r.u24(entry.body + 1) ?? 0) & 1 == 1, entry.end == entry.body + 4
        else {
          throw .externalReference
        }
      }
    case "stsd":
      for entry in try children(r, from: box.body + 8, to: box.end) {
        try checkSampleEntry(r, entry, path: path)
      }
    default:
      break
    }
  }

  private static func checkSampleEntry(_ r: ByteReader, _ entry: ISOBox, path: String) throws(Finding) {
    let name = entry.type.description
    guard let allowed = sampleEntries[name] else { throw .boxNotAllowed("\(path)/\(name)") }
    // Fixed fields before the entry's boxes: 78 bytes for video (with the compressor name at
    // 42, a length byte and 31 bytes), 28 for audio.
    let fixed = name == "avc1" ? 78 : 28
    if name == "avc1" {
      guard r.u8(entry.body + 42) == 0 else { throw .textNotAllowed("\(path)/\(name) compressor name") }
    }
    for box in try children(r, from: entry.body + fixed, to: entry.end)
    where !allowed.contains(box.type.description) {
      throw .boxNotAllowed("\(path)/\(name)/\(box.type)")
    }
  }

  /// Walks every sample of an `avc1` track and refuses SEI NAL units (type 6).
  private static func checkSamples(_ r: ByteReader, _ trak: ISOBox, index: Int) throws(Finding) {
    guard let table = try SampleTable(r, trak), table.format == FourCC("avc1") else { return }
    let lengthSize = table.nalLengthSize
    for (offset, size) in table.samples() {
      guard r.has(offset, size) else { throw .sampleOutOfBounds(track: index) }
      var at = offset
      while at + lengthSize <= offset + size {
        guard let length = r.uint(at, size: lengthSize), let header = r.u8(at + lengthSize) else { break }
        if header & 0x1F == 6 { throw .seiInSample(track: index) }
        at += lengthSize + Int(length)
      }
    }
  }
}

/// Where each sample of one track is: `stsz` sizes, `stco`/`co64` chunk offsets and `stsc`'s
/// samples per chunk, for walking an output's samples (the inputs' samples are only ever read
/// by libavformat in the sandbox).
struct SampleTable {
  var format = FourCC(0, 0, 0, 0)
  var nalLengthSize = 4
  var sizes: [Int] = []
  var chunkOffsets: [Int] = []
  /// (first chunk, 1-based; samples per chunk) runs.
  var runs: [(first: Int, samples: Int)] = []

  init?(_ r: ByteReader, _ trak: ISOBox) throws(MovieOutputCheck.Finding) {
    func find(_ box: ISOBox, _ path: [StaticString]) -> ISOBox? {
      var here = box
      for type in path {
        guard
          let next = (try? ISOBoxes.children(r, from: here.body, to: here.end))?.first(where: {
            $0.type == FourCC(type)
          })
        else { return nil }
        here = next
      }
      return here
    }
    guard let stbl = find(trak, ["mdia", "minf", "stbl"]),
      let all = try? ISOBoxes.children(r, from: stbl.body, to: stbl.end)
    else { return nil }
    for box in all {
      switch box.type.description {
      case "stsd":
        guard let entry = (try? ISOBoxes.children(r, from: box.body + 8, to: box.end))?.first else {
          return nil
        }
        format = entry.type
        if let avcC = (try? ISOBoxes.children(r, from: entry.body + 78, to: entry.end))?.first(where: {
          $0.type == FourCC("avcC")
        }), let byte = r.u8(avcC.body + 4) {
          nalLengthSize = Int(byte & 3) + 1
        }
      case "stsz":
        let fixed = Int(r.u32(box.body + 4) ?? 0)
        let count = Int(r.u32(box.body + 8) ?? 0)
        guard count <= (box.end - box.body) else { throw .unreadable("stsz count") }
        sizes =
          fixed != 0
          ? Array(repeating: fixed, count: count)
          : (0..<max(0, min(count, (box.end - box.body - 12) / 4))).map {
            Int(r.u32(box.body + 12 + 4 * $0) ?? 0)
          }
      case "stco", "co64":
        let wide = box.type == FourCC("co64")
        let count = max(0, min(Int(r.u32(box.body + 4) ?? 0), (box.end - box.body - 8) / (wide ? 8 : 4)))
        chunkOffsets = (0..<count).map {
          Int(
            clamping: (wide ? r.u64(box.body + 8 + 8 * $0) : r.u32(box.body + 8 + 4 * $0).map(UInt64.init))
              ?? 0)
        }
      case "stsc":
        let count = max(0, min(Int(r.u32(box.body + 4) ?? 0), (box.end - box.body - 8) / 12))
        runs = (0..<count).map {
          (Int(r.u32(box.body + 8 + 12 * $0) ?? 1), Int(r.u32(box.body + 12 + 12 * $0) ?? 0))
        }
      default: break
      }
    }
  }

  /// (offset, size) of every sample in file order of chunks.
  func samples() -> [(Int, Int)] {
    var result: [(Int, Int)] = []
    var sample = 0
    for (chunkIndex, chunkOffset) in chunkOffsets.enumerated() {
      let chunk = chunkIndex + 1
      let perChunk = runs.last(where: { $0.first <= chunk })?.samples ?? 0
      var offset = chunkOffset
      for _ in 0..<perChunk where sample < sizes.count {
        result.append((offset, sizes[sample]))
        // Wrapping: an offset near Int.max (a hostile child's co64) must not trap here; the
        // sample's bounds are checked where it is read.
        offset &+= sizes[sample]
        sample += 1
      }
    }
    return result
  }
}
