import Foundation
import ImageCodecs
import MovieContainers
import TestSupport
import Testing

/// The built `attachd stills` command: a video's stills made in the sandbox, written into a
/// directory; a refused video leaves nothing and says why in one line.
@Suite(.enabled(if: ServeBinaryTests.binary != nil, "attachd binary not built")) struct StillsBinaryTests {
  @Test func aPortraitHDRVideoGivesUprightToneMappedStills() throws {
    let directory = try ScratchSpace.directory("attachd-stills") + "/out"
    let input = VideoFixtures.folder.directory.appendingPathComponent("hevc-hlg-10bit.mov").path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try #require(ServeBinaryTests.binary))
    process.arguments = ["stills", input, directory, "--frames", "4-8"]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    #expect(text.contains("\"tone_mapped\":true"), "\(text)")
    let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    #expect(names == ["frame-01.jpg", "frame-02.jpg", "frame-03.jpg", "frame-04.jpg", "poster.jpg"])
    let poster = try JPEGCodec.decode(
      [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/poster.jpg"))))
    #expect((poster.width, poster.height) == (192, 108))
  }

  @Test func aRefusedVideoWritesNothing() throws {
    let directory = try ScratchSpace.directory("attachd-stills") + "/refused"
    let input = VideoFixtures.folder.directory.appendingPathComponent("lie-long.mp4").path
    let result = try ProcessBinaryTests.run(["stills", input, directory])
    #expect(result.status == 65)
    #expect(result.stderr == "attachd: video_too_long: the video is 7200 s long, longer than allowed\n")
    #expect(!FileManager.default.fileExists(atPath: directory))
  }

  /// `attachd rendition`: a portrait HEVC movie becomes an upright H.264 MP4 in the sandbox; a
  /// file with no video leaves nothing and says why.
  @Test func renditionMakesAnUprightMP4OrNothing() throws {
    let directory = try ScratchSpace.directory("attachd-rendition")
    let input = VideoFixtures.folder.directory.appendingPathComponent("hevc-rot90.mov").path
    let made = try ProcessBinaryTests.run(["rendition", input, directory + "/out.mp4"])
    #expect(made.status == 0, "\(made.stderr)")
    let mp4 = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/out.mp4")))
    try MovieOutputCheck.verify(mp4)
    let video = try #require(try MovieOutlineReader.read(mp4).videoTrack)
    #expect(
      video.codec == .h264 && (video.codedWidth, video.codedHeight) == (108, 192) && video.orientation == .up)
    let audioOnly = VideoFixtures.folder.directory.appendingPathComponent("audio-only.m4a").path
    let refused = try ProcessBinaryTests.run(["rendition", audioOnly, directory + "/none.mp4"])
    #expect(refused.status == 65)
    #expect(refused.stderr.hasPrefix("attachd: video_no_video_track: "))
    #expect(!FileManager.default.fileExists(atPath: directory + "/none.mp4"))
  }
}
