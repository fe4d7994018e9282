import Foundation
import ImageCodecs
import ImagePipeline
import MovieContainers
import TestSupport
import Testing
import VideoPipeline

/// Stills of every fixture Scripts/make-video-fixtures makes: how many, upright for every
/// display matrix, tone-mapped for HDR, clean JPEGs with no planted byte, and the refusals.
@Suite struct VideoStillsTests {
  let pipeline = try! Pipeline()

  func stills(_ name: String, settings: VideoStillsSettings = VideoStillsSettings()) throws -> VideoStills {
    let bytes = try VideoFixtures.bytes(name)
    return try bytes.withUnsafeBytes { try VideoStillsMaker.make($0, pipeline: pipeline, settings: settings) }
  }

  /// The mean colour of a region of a decoded still, as (r, g, b).
  func mean(_ jpeg: [UInt8], x: ClosedRange<Double>, y: ClosedRange<Double>) throws -> (Int, Int, Int) {
    let image = try JPEGCodec.decode(jpeg)
    var sums = (0, 0, 0)
    var count = 0
    let x0 = Int(x.lowerBound * Double(image.width))
    let x1 = Int(x.upperBound * Double(image.width))
    let y0 = Int(y.lowerBound * Double(image.height))
    let y1 = Int(y.upperBound * Double(image.height))
    for row in y0..<y1 {
      for column in x0..<x1 {
        let at = row * image.rowBytes + column * image.layout.channels
        sums.0 += Int(image.bytes[at])
        sums.1 += Int(image.bytes[at + 1])
        sums.2 += Int(image.bytes[at + 2])
        count += 1
      }
    }
    return (sums.0 / count, sums.1 / count, sums.2 / count)
  }

  enum Colour { case red, green, blue, yellow }

  /// Which of the four fixture colours a mean is closest to.
  func colour(_ rgb: (Int, Int, Int)) -> Colour {
    let candidates: [(Colour, (Int, Int, Int))] = [
      (.red, (255, 0, 0)), (.green, (0, 128, 0)), (.blue, (0, 0, 255)), (.yellow, (255, 255, 0)),
    ]
    return candidates.min { a, b in distance(a.1, rgb) < distance(b.1, rgb) }!.0
  }

  func distance(_ a: (Int, Int, Int), _ b: (Int, Int, Int)) -> Int {
    (a.0 - b.0) * (a.0 - b.0) + (a.1 - b.1) * (a.1 - b.1) + (a.2 - b.2) * (a.2 - b.2)
  }

  /// The colours of the four quadrants: top-left, top-right, bottom-left, bottom-right.
  func quadrants(_ jpeg: [UInt8]) throws -> [Colour] {
    [
      colour(try mean(jpeg, x: 0.1...0.4, y: 0.1...0.4)), colour(try mean(jpeg, x: 0.6...0.9, y: 0.1...0.4)),
      colour(try mean(jpeg, x: 0.1...0.4, y: 0.6...0.8)), colour(try mean(jpeg, x: 0.6...0.9, y: 0.6...0.8)),
    ]
  }

  @Test func plainVideoGivesAPosterAndFourFrames() throws {
    let result = try stills("h264-aac.mp4")
    // 3 s: one a second, at least four.
    #expect(result.frames.count == 4)
    // The middles of four equal spans (0.375, 1.125, 1.875, 2.625 s): the keyframe (every second)
    // within half a span either side (1.0 and 2.0 for the middle two, decoded alone), else the
    // frame (0.1 s) at or after it.
    let times = result.frames.map(\.time)
    for (time, target) in zip(times, [0.375, 1.125, 1.875, 2.625]) {
      #expect(time >= target - 0.375 - 1e-6 && time <= target + 0.375 + 1e-6, "\(time) for \(target)")
    }
    #expect(abs(times[1] - 1.0) < 1e-6 && abs(times[2] - 2.0) < 1e-6, "\(times)")
    #expect((result.poster.width, result.poster.height) == (192, 108))
    #expect(try quadrants(result.poster.jpeg) == [.red, .green, .blue, .yellow])
    for still in result.frames + [result.poster] {
      try JPEGOutputVerifier.verify(still.jpeg)
    }
    // Frames are in time order and differ (the grey square moves).
    #expect(result.frames.map(\.time) == result.frames.map(\.time).sorted())
    #expect(Set(result.frames.map(\.jpeg)).count == result.frames.count, "\(result.frames.map(\.time))")
  }

  @Test(arguments: [
    ("hevc-aac.mov", [Colour.red, .green, .blue, .yellow], 192, 108),
    ("vp9-opus.webm", [.red, .green, .blue, .yellow], 192, 108),
    ("vp8-live-tags.webm", [.red, .green, .blue, .yellow], 192, 108),
    // Turned 90° clockwise: the left column (red over blue) becomes the top row, blue first.
    ("hevc-rot90.mov", [.blue, .red, .yellow, .green], 108, 192),
    ("hevc-rot180.mov", [.yellow, .blue, .green, .red], 192, 108),
    ("hevc-rot270.mov", [.green, .yellow, .red, .blue], 108, 192),
    ("hevc-mirror.mov", [.green, .red, .yellow, .blue], 192, 108),
    ("hevc-rot90-mirror.mov", [.red, .blue, .green, .yellow], 108, 192),
  ])
  func upright(name: String, expected: [Colour], width: Int, height: Int) throws {
    let result = try stills(name)
    #expect((result.poster.width, result.poster.height) == (width, height))
    #expect(try quadrants(result.poster.jpeg) == expected)
    #expect(!result.toneMapped)
  }

  @Test(arguments: ["hevc-hlg-10bit.mov", "hevc-pq-10bit.mp4", "hevc-dolby-vision-84.mov"])
  func hdrIsToneMapped(name: String) throws {
    let result = try stills(name)
    #expect(result.toneMapped)
    // Neither washed out nor dark: each quadrant is still its colour.
    #expect(try quadrants(result.poster.jpeg) == [.red, .green, .blue, .yellow])
  }

  @Test(arguments: [
    "h264-vfr.mp4", "h264-no-audio.mp4", "iphone-metadata.mov", "android-metadata.mp4", "only-audio-apac.mov",
    "timecode.mov", "live-photo.mov", "vp9-opus.webm", "vp8-live-tags.webm",
  ])
  func stillsHoldNoPlantedByte(name: String) throws {
    let result = try stills(name)
    #expect(result.frames.count >= 4)
    for still in result.frames + [result.poster] {
      try JPEGOutputVerifier.verify(still.jpeg)
      for planted in VideoFixtures.planted {
        #expect(!still.jpeg.contains(Array(planted.utf8)), "\(planted) in a still of \(name)")
      }
    }
  }

  @Test func sizeAndCountFollowTheSettings() throws {
    var settings = VideoStillsSettings()
    settings.maxEdge = 96
    settings.minimumFrames = 6
    let result = try stills("hevc-rot90.mov", settings: settings)
    #expect(result.frames.count == 6)
    #expect((result.poster.width, result.poster.height) == (54, 96))
  }

  @Test(arguments: [
    ("audio-only.m4a", "video_no_video_track"),
    ("truncated-half.mp4", "truncated"),
    ("truncated-no-moov.mov", "truncated"),
    ("external-dref.mov", "video_external_reference"),
    ("lie-8k.mp4", "video_frame_too_large"),
    ("lie-long.mp4", "video_too_long"),
  ])
  func refused(name: String, code: String) throws {
    do {
      _ = try stills(name)
      Issue.record("\(name) gave stills")
    } catch let error as VideoError {
      #expect(error.code == code)
    }
  }
}

extension Array where Element == UInt8 {
  func contains(_ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= count else { return false }
    return (0...(count - needle.count)).contains { start in
      self[start] == needle[0] && Array(self[start..<(start + needle.count)]) == needle
    }
  }
}

/// HDR stills against the `ffmpeg` command line doing the same tone map on the same frame:
/// within 30 dB PSNR (the still is a JPEG at quality 85; the reference is raw RGB).
@Suite struct ToneMapReferenceTests {
  static let ffmpeg = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first {
    FileManager.default.isExecutableFile(atPath: $0)
  }

  @Test(
    .enabled(if: ffmpeg != nil, "skipped: no ffmpeg"),
    arguments: [("hevc-hlg-10bit.mov", "arib-std-b67"), ("hevc-pq-10bit.mp4", "smpte2084")])
  func posterMatchesFFmpegsToneMap(name: String, transfer: String) throws {
    let bytes = try VideoFixtures.bytes(name)
    let stills = try bytes.withUnsafeBytes { try VideoStillsMaker.make($0, pipeline: try Pipeline()) }
    let ours = try JPEGCodec.decode(stills.poster.jpeg)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try #require(Self.ffmpeg))
    process.arguments = [
      "-v", "error", "-ss", "\(stills.poster.time)", "-i",
      VideoFixtures.folder.directory.appendingPathComponent(name).path,
      "-frames:v", "1", "-vf",
      "zscale=tin=\(transfer):pin=bt2020:min=bt2020nc:rin=tv:t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,"
        + "tonemap=tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p,format=rgb24",
      "-f", "rawvideo", "-",
    ]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let reference = [UInt8](output.fileHandleForReading.readDataToEndOfFile())
    process.waitUntilExit()
    try #require(reference.count == ours.width * ours.height * 3, "\(reference.count) bytes from ffmpeg")
    let psnr = ImageCompare.psnr(Array(ours.bytes.prefix(reference.count)), reference)
    #expect(psnr >= 30, "\(name): \(psnr) dB")
  }
}
