import FuzzSupport
import MovieContainers

/// One input: the movie outline reader (ISO boxes and WebM's EBML) and the header check run in
/// the server process, before any sandbox: they must never crash, hang or leak, whatever the
/// bytes, and what they admit must be within the limits.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = UnsafeRawBufferPointer(start: data, count: size)
  let limits = MovieLimits()
  if let outline = try? MovieAdmission.admit(bytes, limits: limits) {
    let video = outline.videoTrack
    precondition(video != nil, "admitted without a video track")
    precondition(outline.tracks.count <= limits.maxTracks, "admitted too many tracks")
    precondition((outline.duration ?? video?.seconds ?? 0) <= limits.maxDuration, "admitted too long")
  }
  return 0
}

@_cdecl("FuzzMovieOutline_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
  runLibFuzzer(argc, argv, testOneInput)
}
