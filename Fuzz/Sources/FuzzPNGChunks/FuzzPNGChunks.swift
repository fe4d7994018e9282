import FuzzSupport
import ImageContainers

/// One input: must never crash, hang or leak, whatever the bytes.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = [UInt8](UnsafeRawBufferPointer(start: data, count: size))
  if let info = try? PNGChunkWalker.read(bytes, checkCRC: true) {
    precondition(info.width > 0 && info.height > 0, "IHDR accepted a zero size")
    precondition(info.textBytes >= 0 && info.crcErrors >= 0, "negative counts")
  }
  return 0
}

@_cdecl("FuzzPNGChunks_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
  runLibFuzzer(argc, argv, testOneInput)
}
