import FuzzSupport
import ImagePipeline

/// One input: must never crash, hang or leak, whatever the bytes.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let input = UnsafeRawBufferPointer(start: data, count: size)
  _ = input  // TODO(owner of ImagePipeline): feed `input` to the parser under test.
  return 0
}

@_cdecl("FuzzPNGChunks_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
  runLibFuzzer(argc, argv, testOneInput)
}
