import FuzzSupport
import ImageContainers

/// One input: must never crash, hang or leak, whatever the bytes.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = [UInt8](UnsafeRawBufferPointer(start: data, count: size))
  if let info = EXIFReader.read(bytes) {
    precondition((1...8).contains(info.orientationValue), "orientation outside 1…8")
    precondition(info.byteCount <= bytes.count)
  }
  return 0
}

@_cdecl("FuzzEXIF_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
  runLibFuzzer(argc, argv, testOneInput)
}
