import FuzzSupport
import ImagePipeline

/// Small limits and a small output keep each run fast: the decoders must bound their work by
/// them (a header that claims a huge picture is refused before anything is allocated).
let pipeline: Pipeline = {
  var configuration = Pipeline.Configuration()
  configuration.maxEdge = 256
  configuration.limits.maxPixels = 4 << 20
  configuration.limits.maxDimension = 4096
  configuration.limits.maxHEIFItems = 256
  configuration.limits.maxHEIFTiles = 64
  configuration.limits.maxInputBytes = 1 << 20
  configuration.memoryBudget = MemoryBudget(capacity: 1 << 30)
  return try! Pipeline(configuration: configuration)
}()

/// One mutated HEIF through the whole pipeline — box reader, path rule, libavcodec tile decodes,
/// the strip resampler, colour, encode, verify — whenever the path rule sends it to the HEVC
/// path (files it sends to libheif are skipped: this target is about our decode). It must end
/// in a JPEG inside the size limit or a `PipelineError`; never a crash, a hang or a leak.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = [UInt8](UnsafeRawBufferPointer(start: data, count: size))
  let limits = pipeline.configuration.limits
  guard let info = try? HEIFBoxReader.read(bytes, limits: limits), info.plan?.path == .hevc else { return 0 }
  guard let result = try? pipeline.process(bytes) else { return 0 }
  precondition(!result.jpeg.isEmpty, "an empty JPEG")
  precondition(result.width >= 1 && result.height >= 1, "an empty picture")
  precondition(max(result.width, result.height) <= 256, "output larger than maxEdge")
  return 0
}

@_cdecl("FuzzHEIFDecode_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
  runLibFuzzer(argc, argv, testOneInput)
}
