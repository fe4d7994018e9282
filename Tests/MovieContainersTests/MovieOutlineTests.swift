import ImageContainers
import MovieContainers
import TestSupport
import Testing

/// The outline of every fixture Scripts/make-video-fixtures makes, read as the server reads it
/// before decoding, and the header check's verdict on it.
@Suite struct MovieOutlineTests {
  func outline(_ name: String) throws -> MovieOutline {
    try MovieOutlineReader.read(try VideoFixtures.bytes(name))
  }

  func admit(_ name: String, limits: MovieLimits = MovieLimits()) throws -> Result<MovieOutline, MovieRefusal>
  {
    let bytes = try VideoFixtures.bytes(name)
    return bytes.withUnsafeBytes { raw in
      do throws(MovieRefusal) {
        return .success(try MovieAdmission.admit(raw, limits: limits))
      } catch {
        return .failure(error)
      }
    }
  }

  @Test func plainH264WithAudio() throws {
    let movie = try outline("h264-aac.mp4")
    #expect(!movie.isQuickTime)
    #expect(movie.duration == 3)
    let video = try #require(movie.videoTrack)
    #expect(video.codec == .h264)
    #expect(video.format == FourCC("avc1"))
    #expect((video.codedWidth, video.codedHeight) == (192, 108))
    #expect(video.orientation == .up)
    #expect(video.sampleCount == 30)
    #expect(video.nominalFrameRate == 10)
    #expect(video.averageFrameRate == 10)
    #expect(!video.variableFrameRate)
    #expect(video.syncSampleCount == 3)
    #expect(video.hdr == MovieTrack.HDR.none)
    #expect(movie.audioTrack?.format == FourCC("mp4a"))
    #expect(movie.metadataCarriers == ["moov/udta/meta"])
  }

  @Test func quickTimeHEVC() throws {
    let movie = try outline("hevc-aac.mov")
    #expect(movie.isQuickTime)
    #expect(movie.videoTrack?.codec == .hevc)
    #expect(movie.videoTrack?.format == FourCC("hvc1"))
  }

  @Test(arguments: [
    ("hevc-rot90.mov", MovieOrientation.right, 108, 192),
    ("hevc-rot180.mov", .down, 192, 108),
    ("hevc-rot270.mov", .left, 108, 192),
    ("hevc-mirror.mov", .upMirrored, 192, 108),
    ("hevc-rot90-mirror.mov", .leftMirrored, 108, 192),
  ])
  func displayMatrix(name: String, orientation: MovieOrientation, width: Int, height: Int) throws {
    let video = try #require(try outline(name).videoTrack)
    #expect(video.orientation == orientation)
    #expect((video.displayWidth, video.displayHeight) == (width, height))
    #expect((video.codedWidth, video.codedHeight) == (192, 108))
  }

  @Test func everyQuarterTurnAndMirrorFromItsMatrix() {
    let one: Int32 = 1 << 16
    #expect(MovieOrientation(a: one, b: 0, c: 0, d: one) == .up)
    #expect(MovieOrientation(a: -one, b: 0, c: 0, d: one) == .upMirrored)
    #expect(MovieOrientation(a: -one, b: 0, c: 0, d: -one) == .down)
    #expect(MovieOrientation(a: one, b: 0, c: 0, d: -one) == .downMirrored)
    #expect(MovieOrientation(a: 0, b: one, c: one, d: 0) == .leftMirrored)
    #expect(MovieOrientation(a: 0, b: one, c: -one, d: 0) == .right)
    #expect(MovieOrientation(a: 0, b: -one, c: -one, d: 0) == .rightMirrored)
    #expect(MovieOrientation(a: 0, b: -one, c: one, d: 0) == .left)
    // 80° (not a quarter turn) reads as the nearest one, 90°.
    #expect(MovieOrientation(a: 11_380, b: 64_540, c: -64_540, d: 11_380) == .right)
  }

  @Test func hdrKinds() throws {
    let hlg = try #require(try outline("hevc-hlg-10bit.mov").videoTrack)
    #expect(hlg.hdr == .hlg)
    #expect(hlg.colour == MovieColour(primaries: 9, transfer: 18, matrix: 9, fullRange: false))
    #expect(try outline("hevc-pq-10bit.mp4").videoTrack?.hdr == .pq)
    let dolby = try #require(try outline("hevc-dolby-vision-84.mov").videoTrack)
    #expect(dolby.format == FourCC("dvh1"))
    #expect(dolby.codec == .hevc)
    #expect(dolby.dolbyVision == MovieDolbyVision(profile: 8, compatibility: 4))
    #expect(dolby.hdr == .dolbyVisionHLG)
  }

  @Test func variableFrameRate() throws {
    let video = try #require(try outline("h264-vfr.mp4").videoTrack)
    #expect(video.variableFrameRate)
    // Most frames are 0.1 s apart (every third of 30 fps), some closer.
    #expect(video.nominalFrameRate == 10)
    let average = try #require(video.averageFrameRate)
    #expect(average > 10 && average < 20)
  }

  @Test func webMWithItsDuration() throws {
    let movie = try outline("vp9-opus.webm")
    #expect(movie.majorBrand == FourCC("webm"))
    #expect(movie.tracks.map(\.kind) == [.video, .audio])
    let video = try #require(movie.videoTrack)
    #expect(video.codec == .vp9 && video.codedWidth == 192 && video.codedHeight == 108)
    #expect(video.sampleCount == 30)
    #expect(movie.audioTrack?.format == FourCC("Opus"))
    let duration = try #require(movie.duration)
    #expect(abs(duration - 3) < 0.1, "\(duration)")
  }

  /// A live recorder's file (a browser's MediaRecorder): the segment and its size unknown, no
  /// duration, no cues. The blocks' times give the duration; the tags are carriers.
  @Test func webMFromALiveRecorder() throws {
    let movie = try outline("vp8-live-tags.webm")
    let video = try #require(movie.videoTrack)
    #expect(video.codec == .vp8 && video.sampleCount == 30)
    let duration = try #require(movie.duration)
    #expect(abs(duration - 3) < 0.15, "\(duration)")
    let rate = try #require(video.averageFrameRate)
    #expect(abs(rate - 10) < 0.5, "\(rate)")
    #expect(movie.metadataCarriers.contains("Tags"))
    #expect(try admit("vp8-live-tags.webm").get().videoTrack?.codec == .vp8)
  }

  /// Cut anywhere after its tracks, a recording keeps what was read; cut before them it is
  /// truncated; a byte changed in a size never makes the reader leave the file.
  @Test func webMCutAndDamaged() throws {
    let bytes = try VideoFixtures.bytes("vp8-live-tags.webm")
    for cut in stride(from: 0, to: bytes.count, by: 97) {
      let prefix = Array(bytes.prefix(cut))
      switch Result(catching: { () throws(MovieOutlineReader.Failure) in try MovieOutlineReader.read(prefix) }
      ) {
      case .success(let movie): #expect(movie.tracks.count == 2)
      case .failure(let failure):
        #expect([.truncated, .notAMovie, .noMovieBox].contains(failure), "\(failure) at \(cut)")
      }
    }
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<2000 {
      var damaged = bytes
      damaged[Int.random(in: 0..<min(600, damaged.count), using: &generator)] = UInt8.random(
        in: 0...255, using: &generator)
      _ = try? MovieOutlineReader.read(damaged)
    }
  }

  @Test func iPhoneCarriersAndTracks() throws {
    let movie = try outline("iphone-metadata.mov")
    #expect(movie.metadataCarriers.contains("moov/meta"))
    #expect(movie.contentIdentifier == "5E1C0A7D-PLANTED-CONTENT-ID")
    #expect(movie.metadataCarriers.contains { $0.hasSuffix(":mebx") })
    #expect(movie.tracks.map(\.kind) == [.video, .audio, .audio, .timedMetadata])
    // The decodable audio is the AAC track, not the apac one.
    #expect(movie.audioTrack?.format == FourCC("mp4a"))
    #expect(movie.tracks[2].format == FourCC("apac"))
    #expect(try outline("only-audio-apac.mov").audioTrack == nil)
  }

  @Test func androidCarriers() throws {
    let movie = try outline("android-metadata.mp4")
    for carrier in ["moov/udta/©xyz", "moov/udta/©mak", "moov/udta/©mod", "moov/udta/loci", "uuid"] {
      #expect(movie.metadataCarriers.contains(carrier), "\(carrier) in \(movie.metadataCarriers)")
    }
    #expect(movie.metadataCarriers.contains { $0.hasSuffix(":gpmd") })
  }

  @Test func timecodeTrackIsIgnored() throws {
    let movie = try outline("timecode.mov")
    #expect(movie.tracks.contains { $0.kind == .timecode })
    #expect(try admit("timecode.mov").get().videoTrack?.codec == .hevc)
  }

  @Test(arguments: [
    "h264-aac.mp4", "hevc-aac.mov", "hevc-rot90.mov", "hevc-hlg-10bit.mov", "hevc-pq-10bit.mp4",
    "hevc-dolby-vision-84.mov", "h264-vfr.mp4", "h264-no-audio.mp4", "iphone-metadata.mov",
    "android-metadata.mp4", "only-audio-apac.mov", "timecode.mov", "vp9-opus.webm", "vp8-live-tags.webm",
  ])
  func admitted(name: String) throws {
    let movie = try admit(name).get()
    #expect(movie.videoTrack != nil)
  }

  @Test(arguments: [
    ("audio-only.m4a", "video_no_video_track", 415),
    ("truncated-half.mp4", "truncated", 422),
    ("truncated-no-moov.mov", "truncated", 422),
    ("fragmented-no-duration.mp4", "video_duration_unknown", 422),
    ("backwards-timestamps.mp4", "video_timestamps_backwards", 422),
    ("external-dref.mov", "video_external_reference", 422),
    ("lie-8k.mp4", "video_frame_too_large", 413),
    ("lie-long.mp4", "video_too_long", 413),
  ])
  func refusedBeforeDecoding(name: String, code: String, status: Int) throws {
    guard case .failure(let refusal) = try admit(name) else {
      Issue.record("\(name) was admitted")
      return
    }
    #expect(refusal.code == code)
    #expect(refusal.status == status)
  }

  @Test func limitsAreTheConfiguredOnes() throws {
    var limits = MovieLimits()
    limits.maxDuration = 2
    #expect(throws: MovieRefusal.tooLong(3)) { try admit("h264-aac.mp4", limits: limits).get() }
    limits = MovieLimits()
    limits.maxBytes = 1000
    guard case .failure(.tooLargeBytes) = try admit("h264-aac.mp4", limits: limits) else {
      Issue.record("not refused by size")
      return
    }
    limits = MovieLimits()
    limits.maxFrameRate = 9
    guard case .failure(.frameRateTooHigh(10)) = try admit("h264-aac.mp4", limits: limits) else {
      Issue.record("not refused by frame rate")
      return
    }
    limits = MovieLimits()
    limits.maxTracks = 3
    guard case .failure(.tooManyTracks(4)) = try admit("iphone-metadata.mov", limits: limits) else {
      Issue.record("not refused by tracks")
      return
    }
  }

  /// A WebM's pixel width and height are free-sized integers: two huge ones are refused as too
  /// large, not multiplied into an overflow (found by CI's 60 s FuzzMovieOutline run).
  @Test func aFrameSizeWhoseAreaOverflowsIsRefused() throws {
    var track = MovieTrack()
    track.kind = .video
    track.format = FourCC("vp08")
    track.timescale = 1000
    track.mediaDuration = 1000
    for (width, height) in [(Int.max, Int.max), (1 << 40, 1 << 40), (Int.max, 1), (1, Int.max)] {
      track.codedWidth = width
      track.codedHeight = height
      var outline = MovieOutline(majorBrand: FourCC("webm"), fileSize: 100)
      outline.duration = 1
      outline.tracks = [track]
      #expect(throws: MovieRefusal.frameTooLarge(width: width, height: height)) {
        try MovieAdmission.check(outline, limits: MovieLimits())
      }
    }
  }

  /// A cluster time at the end of Int64 (its blocks' offsets would overflow it) is read without a
  /// trap and the recording is refused, not admitted (found by CI's FuzzMovieOutline run).
  @Test func aClusterTimeAtTheEndOfTimeIsReadWithoutATrap() throws {
    var bytes = try VideoFixtures.bytes("vp8-live-tags.webm")
    // The first cluster (size 0x164B, a two-byte vint) starts with its time, E7 81 00: make
    // that an eight-byte Int64.max and the cluster seven bytes longer.
    let cluster = try #require(bytes.firstRange(of: [0x1F, 0x43, 0xB6, 0x75, 0x56, 0x4B, 0xE7, 0x81, 0x00]))
    bytes.replaceSubrange(
      cluster,
      with: [0x1F, 0x43, 0xB6, 0x75, 0x56, 0x52, 0xE7, 0x88, 0x7F] + [UInt8](repeating: 0xFF, count: 7))
    let movie = try MovieOutlineReader.read(bytes)
    #expect(movie.tracks.count == 2)
    let verdict = bytes.withUnsafeBytes { raw -> MovieRefusal? in
      do throws(MovieRefusal) {
        _ = try MovieAdmission.admit(raw, limits: MovieLimits())
        return nil
      } catch { return error }
    }
    #expect(verdict != nil)
  }

  /// Every prefix of a real file is refused cleanly or read; none traps (the reader is bounded).
  @Test func everyCutIsRefusedOrRead() throws {
    let bytes = try VideoFixtures.bytes("iphone-metadata.mov")
    for length in stride(from: 0, through: bytes.count, by: 97) {
      let prefix = Array(bytes[0..<length])
      _ = try? MovieOutlineReader.read(prefix)
    }
    let image = try DecoderFixtures.bytes("mono8-limited.heic")
    #expect(throws: MovieOutlineReader.Failure.notAMovie) { try MovieOutlineReader.read(image) }
  }
  /// Each sample-table box in turn cut to its bare 8-byte header (the rest of its space a `free` box,
  /// so every parent still adds up): the outline reader and the output check read or refuse it,
  /// never trap. Found by `Scripts/fuzz-sandbox --media video`: an `stts` shorter than its
  /// header made a negative entry count, and the server died on the range.
  @Test(arguments: ["stts", "stsz", "stco", "stsc", "stss"])
  func aSampleTableBoxShorterThanItsHeaderIsReadWithoutATrap(type: String) throws {
    for name in ["h264-aac.mp4", "clean-rendition.mp4", "hevc-aac.mov"] {
      var bytes = try VideoFixtures.bytes(name)
      let tag = Array(type.utf8)
      var at = 4
      var found = 0
      while at + 4 <= bytes.count {
        if Array(bytes[at..<(at + 4)]) == tag {
          let start = at - 4
          let size =
            Int(bytes[start]) << 24 | Int(bytes[start + 1]) << 16 | Int(bytes[start + 2]) << 8
            | Int(bytes[start + 3])
          if size >= 20 && start + size <= bytes.count {
            // The box: its 8-byte header alone (not even version and flags); then a free box.
            bytes.replaceSubrange(start..<(start + 4), with: [0, 0, 0, 8])
            let rest = size - 8
            bytes.replaceSubrange(
              (start + 8)..<(start + 16),
              with: [
                UInt8(rest >> 24 & 0xFF), UInt8(rest >> 16 & 0xFF), UInt8(rest >> 8 & 0xFF),
                UInt8(rest & 0xFF),
              ]
                + Array("free".utf8))
            found += 1
          }
        }
        at += 1
      }
      #expect(found > 0 || type == "stss", "\(name): no \(type)")
      _ = try? MovieOutlineReader.read(bytes)
      _ = bytes.withUnsafeBytes { try? MovieAdmission.admit($0, limits: MovieLimits()) }
      _ = try? MovieOutputCheck.verify(bytes)
    }
  }
}

/// The two halves of a Live Photo name the same content identifier: the still in its Apple
/// MakerNote, the movie in its `moov/meta` keys.
@Suite struct LivePhotoIdentifierTests {
  @Test func stillAndMovieCarryTheSameIdentifier() throws {
    let still = try #require(EXIFReader.read(jpegAPP1(try VideoFixtures.bytes("live-photo.jpg"))))
    let movie = try MovieOutlineReader.read(try VideoFixtures.bytes("live-photo.mov"))
    #expect(still.appleContentIdentifier == "5E1C0A7D-PLANTED-CONTENT-ID")
    #expect(movie.contentIdentifier == still.appleContentIdentifier)
    let other = try MovieOutlineReader.read(try VideoFixtures.bytes("live-photo-other.mov"))
    #expect(other.contentIdentifier == "0B0E0F0A-OTHER-CONTENT-ID")
    #expect(try MovieOutlineReader.read(try VideoFixtures.bytes("hevc-aac.mov")).contentIdentifier == nil)
  }

  /// The payload of the first APP1 segment of a JPEG.
  func jpegAPP1(_ jpeg: [UInt8]) throws -> [UInt8] {
    try #require(jpeg[2] == 0xFF && jpeg[3] == 0xE1)
    let length = Int(jpeg[4]) << 8 | Int(jpeg[5])
    return Array(jpeg[6..<(4 + length)])
  }
}
