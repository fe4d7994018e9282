import Foundation
import ImagePipeline
import MovieContainers
import TestSupport
import Testing
import VideoPipeline

#if canImport(Glibc)
  import Glibc
#endif

/// The MP4 rendition of the fixtures: it decodes without error in `ffmpeg`, and `ffprobe` finds
/// H.264 High 8-bit 4:2:0, upright pixels with no display matrix, within 1280 px, a constant
/// frame rate of at most 30, AAC-LC stereo when the source had decodable audio, `moov` before
/// `mdat`, no tags; and no planted byte survives anywhere in it.
@Suite(.enabled(if: ToneMapReferenceTests.ffmpeg != nil, "skipped: no ffmpeg"))
struct VideoRenditionTests {
  static let ffprobe = ["/usr/bin/ffprobe", "/usr/local/bin/ffprobe"].first {
    FileManager.default.isExecutableFile(atPath: $0)
  }

  func rendition(_ name: String) throws -> [UInt8] {
    let bytes = try VideoFixtures.bytes(name)
    return try bytes.withUnsafeBytes { try VideoRenditionMaker.make($0) }
  }

  /// Runs a tool on `bytes` written to a scratch file; its standard output and error.
  func run(_ tool: String, _ arguments: [String], on bytes: [UInt8]) throws -> (
    out: String, err: String, status: Int32
  ) {
    let path = try ScratchSpace.directory("attachd-rendition") + "/\(UUID().uuidString).mp4"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments.map { $0 == "FILE" ? path : $0 }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (output, errors, process.terminationStatus)
  }

  func probe(_ bytes: [UInt8]) throws -> String {
    try run(
      try #require(Self.ffprobe),
      [
        "-v", "error", "-show_entries",
        "stream=codec_name,profile,pix_fmt,width,height,r_frame_rate,avg_frame_rate,sample_rate,channels,"
          + "color_transfer:stream_side_data:stream_tags:format_tags",
        "-of", "default=noprint_wrappers=1", "FILE",
      ], on: bytes
    ).out
  }

  @Test(arguments: [
    ("h264-aac.mp4", 192, 108, true), ("hevc-rot90.mov", 108, 192, true),
    ("hevc-rot90-mirror.mov", 108, 192, true),
    ("hevc-hlg-10bit.mov", 192, 108, true), ("hevc-dolby-vision-84.mov", 192, 108, true),
    ("h264-vfr.mp4", 192, 108, true), ("only-audio-apac.mov", 192, 108, false),
    ("h264-no-audio.mp4", 192, 108, false),
    ("iphone-metadata.mov", 192, 108, true), ("android-metadata.mp4", 192, 108, true),
    ("vp9-opus.webm", 192, 108, true), ("vp8-live-tags.webm", 192, 108, true),
  ])
  func meetsEveryConstraint(name: String, width: Int, height: Int, audio: Bool) throws {
    let mp4 = try rendition(name)
    let info = try probe(mp4)
    #expect(info.contains("codec_name=h264"), "\(info)")
    #expect(info.contains("profile=High\n"))
    #expect(info.contains("pix_fmt=yuv420p\n"))
    #expect(info.contains("width=\(width)\nheight=\(height)\n"), "\(info)")
    #expect(!info.contains("side_data"), "a display matrix or other side data: \(info)")
    // Tags: only what the sample entries and handlers hold as fixed values.
    let tags = info.split(separator: "\n").filter { $0.hasPrefix("TAG:") }
    for tag in tags {
      #expect(
        [
          "TAG:handler_name=VideoHandler", "TAG:handler_name=SoundHandler", "TAG:language=und",
          "TAG:vendor_id=[0][0][0][0]", "TAG:major_brand=isom", "TAG:minor_version=512",
          "TAG:compatible_brands=isomiso2avc1mp41",
        ].contains(String(tag)), "\(tag)")
    }
    #expect(info.contains("codec_name=aac") == audio, "\(info)")
    if audio {
      #expect(info.contains("sample_rate=48000") && info.contains("channels=2"))
    }
    // Constant frame rate, at most 30.
    let rates = info.split(separator: "\n").filter {
      $0.hasPrefix("r_frame_rate=") || $0.hasPrefix("avg_frame_rate=")
    }
    #expect(rates.contains("r_frame_rate=10/1"), "\(rates)")
    // Decodes without a single error.
    let decode = try run(
      try #require(ToneMapReferenceTests.ffmpeg), ["-v", "error", "-i", "FILE", "-f", "null", "-"], on: mp4)
    #expect(decode.status == 0 && decode.err.isEmpty, "\(decode.err)")
    // moov before mdat.
    let moov = try #require(mp4.firstRange(of: Array("moov".utf8))).lowerBound
    let mdat = try #require(mp4.firstRange(of: Array("mdat".utf8))).lowerBound
    #expect(moov < mdat)
    for planted in VideoFixtures.planted + ["x264", "Lavf", "Lavc"] {
      #expect(mp4.firstRange(of: Array(planted.utf8)) == nil, "\(planted) in the rendition of \(name)")
      _ = planted
    }
  }

  /// The rendition's pixels are upright: the first frame of the portrait and the mirrored
  /// portrait fixtures has the quadrants where the stills have them.
  @Test(arguments: [
    ("hevc-rot90.mov", [VideoStillsTests.Colour.blue, .red, .yellow, .green]),
    ("hevc-rot90-mirror.mov", [.red, .blue, .green, .yellow]),
    ("hevc-rot180.mov", [.yellow, .blue, .green, .red]),
  ])
  func renditionIsUpright(name: String, expected: [VideoStillsTests.Colour]) throws {
    let mp4 = try rendition(name)
    let path = try ScratchSpace.directory("attachd-rendition") + "/\(UUID().uuidString).mp4"
    try Data(mp4).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try #require(ToneMapReferenceTests.ffmpeg))
    process.arguments = [
      "-v", "error", "-i", path, "-frames:v", "1", "-c:v", "mjpeg", "-q:v", "2", "-f", "image2pipe", "-",
    ]
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let jpeg = [UInt8](out.fileHandleForReading.readDataToEndOfFile())
    process.waitUntilExit()
    #expect(try VideoStillsTests().quadrants(jpeg) == expected)
  }
}

/// A movie read from a mapping of its file gives its pages back behind the demuxer
/// (`inputIsMapped`): what it makes is byte for byte what it makes from memory, and the pages
/// of the file the process holds at the end are a few MiB, not the file.
@Suite(.enabled(if: ToneMapReferenceTests.ffmpeg != nil, "skipped: no ffmpeg"))
struct MappedVideoInputTests {
  /// Two seconds of lossless noise with audio: ~20 MB, past the 12 MiB the release starts at.
  static func largeMovie() throws -> String {
    let path = try ScratchSpace.directory("attachd-mapped-video") + "/noise.mp4"
    if FileManager.default.fileExists(atPath: path) { return path }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try #require(ToneMapReferenceTests.ffmpeg))
    process.arguments = [
      "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=30:d=2",
      "-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-vf", "noise=alls=100:allf=t",
      "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", path + ".part.mp4",
    ]
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    try FileManager.default.moveItem(atPath: path + ".part.mp4", toPath: path)
    return path
  }

  /// The resident size in KiB of the mapping that starts at `base`, from /proc/self/smaps.
  static func residentKiB(of base: UnsafeMutableRawPointer) throws -> Int {
    // (Read to its end: /proc's files say they are empty.)
    let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
    defer { try? handle.close() }
    let smaps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
    let start = String(UInt(bitPattern: base), radix: 16)
    var inMapping = false
    for line in smaps.split(separator: "\n") {
      if let dash = line.firstIndex(of: "-"), line[..<dash].allSatisfy(\.isHexDigit) {
        inMapping = line[..<dash].drop { $0 == "0" } == start.drop { $0 == "0" }
      } else if inMapping, line.hasPrefix("Rss:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
      }
    }
    return -1
  }

  /// Maps `path` read-only as the sandbox's child maps its input, and runs `body` over it.
  static func withMapping<T>(
    _ path: String, residentAfter: inout [Int], _ body: (UnsafeRawBufferPointer) throws -> T
  ) throws -> T {
    let fd = open(path, O_RDONLY)
    #expect(fd >= 0)
    defer { close(fd) }
    var info = stat()
    #expect(fstat(fd, &info) == 0)
    let size = Int(info.st_size)
    let base = try #require(mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0))
    #expect(base != MAP_FAILED)
    defer { munmap(base, size) }
    let result = try body(UnsafeRawBufferPointer(start: base, count: size))
    // The mapping's pages in this process's page table (its Rss in smaps; the page cache keeps
    // the file either way).
    let kept = try Self.residentKiB(of: base)
    print("MappedVideoInput: \(kept >> 10) MiB of the \(size >> 20) MiB file resident after the read")
    residentAfter.append(kept)
    return result
  }

  @Test func aMappedInputMakesTheSameRenditionAndStillsAndGivesItsPagesBack() throws {
    let path = try Self.largeMovie()
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    #expect(bytes.count > 16 << 20, "the movie is only \(bytes.count) bytes")
    let fromMemory = try bytes.withUnsafeBytes { try VideoRenditionMaker.make($0) }
    var resident: [Int] = []
    let fromMapping = try Self.withMapping(path, residentAfter: &resident) {
      try VideoRenditionMaker.make($0, inputIsMapped: true)
    }
    #expect(fromMemory == fromMapping)
    let pipeline = try Pipeline()
    let stillsFromMemory = try bytes.withUnsafeBytes { try VideoStillsMaker.make($0, pipeline: pipeline) }
    let stillsFromMapping = try Self.withMapping(path, residentAfter: &resident) {
      try VideoStillsMaker.make($0, pipeline: pipeline, inputIsMapped: true)
    }
    #expect(stillsFromMemory.poster.jpeg == stillsFromMapping.poster.jpeg)
    #expect(stillsFromMemory.frames.map(\.jpeg) == stillsFromMapping.frames.map(\.jpeg))
    // The rendition read the whole file: at most the 2 MiB kept behind, a step and the
    // demuxer's buffer stay resident (without the release, all of it: checked by making the
    // rendition with it off).
    #expect(resident.count == 2 && resident[0] >= 0 && resident[0] <= 4 << 10, "\(resident) KiB")
    var withoutRelease: [Int] = []
    _ = try Self.withMapping(path, residentAfter: &withoutRelease) { try VideoRenditionMaker.make($0) }
    #expect(withoutRelease.first ?? 0 > 16 << 10, "\(withoutRelease) KiB")
  }
}
