import MovieContainers
import TestSupport
import Testing

/// The check every rendition passes before it is stored: a clean MP4 passes, and each way a
/// movie can carry private or identifying bytes is refused with the place it was found.
@Suite struct MovieOutputCheckTests {
  func finding(_ name: String) throws -> MovieOutputCheck.Finding? {
    do {
      try MovieOutputCheck.verify(try VideoFixtures.bytes(name))
      return nil
    } catch let finding as MovieOutputCheck.Finding {
      return finding
    }
  }

  @Test func cleanRenditionPasses() throws {
    #expect(try finding("clean-rendition.mp4") == nil)
    let bytes = try VideoFixtures.bytes("clean-rendition.mp4")
    for planted in VideoFixtures.planted {
      #expect(!bytes.contains(planted), "\(planted)")
    }
  }

  @Test(arguments: [
    // ffmpeg's own files: the first finding in file order (x264's name in the sample entry
    // comes before udta's location and encoder), QuickTime's `wide`, fragments.
    (
      "h264-aac.mp4",
      MovieOutputCheck.Finding.textNotAllowed("moov/trak/mdia/minf/stbl/stsd/avc1 compressor name")
    ),
    ("android-metadata.mp4", .textNotAllowed("moov/trak/mdia/minf/stbl/stsd/avc1 compressor name")),
    ("iphone-metadata.mov", .boxNotAllowed("wide")),
    ("fragmented-no-duration.mp4", .textNotAllowed("moov/trak/mdia/minf/stbl/stsd/avc1 compressor name")),
  ])
  func refused(name: String, expected: MovieOutputCheck.Finding) throws {
    let found = try finding(name)
    #expect(found == expected, "found \(String(describing: found))")
  }

  /// Each carrier planted alone in the clean file is found.
  @Test func eachCarrierAloneIsFound() throws {
    let clean = try VideoFixtures.bytes("clean-rendition.mp4")
    // A top-level uuid (XMP) after the movie.
    let uuid = box("uuid", Array(repeating: 0xBE, count: 16) + Array("<x:xmpmeta/>".utf8))
    #expect(throws: MovieOutputCheck.Finding.boxNotAllowed("uuid")) {
      try MovieOutputCheck.verify(clean + uuid)
    }
    // A top-level meta.
    #expect(throws: MovieOutputCheck.Finding.boxNotAllowed("meta")) {
      try MovieOutputCheck.verify(clean + box("meta", [0, 0, 0, 0]))
    }
  }

  /// The clean file with x264's SEI left in its samples: refused for the SEI alone.
  @Test func encoderSEIIsFound() throws {
    var bytes = try VideoFixtures.bytes("clean-rendition.mp4")
    // Turn the first NAL unit of the first video sample into an SEI (type 6), as x264's is.
    let sample = try #require(firstVideoSample(bytes))
    bytes[sample + 4] = (bytes[sample + 4] & 0xE0) | 6
    #expect(throws: MovieOutputCheck.Finding.seiInSample(track: 0)) { try MovieOutputCheck.verify(bytes) }
  }

  /// The first chunk offset of the first track (`stco`), where its first sample starts.
  func firstVideoSample(_ bytes: [UInt8]) -> Int? {
    guard let stco = bytes.firstRange(of: Array("stco".utf8))?.lowerBound else { return nil }
    let at = stco + 12
    return Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
  }

  func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
    let size = UInt32(8 + payload.count)
    return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
      + Array(type.utf8) + payload
  }
}

extension Array where Element == UInt8 {
  func contains(_ text: String) -> Bool {
    let needle = Array(text.utf8)
    guard needle.count <= count else { return false }
    for start in 0...(count - needle.count) where self[start] == needle[0] {
      if Array(self[start..<(start + needle.count)]) == needle { return true }
    }
    return false
  }
}
