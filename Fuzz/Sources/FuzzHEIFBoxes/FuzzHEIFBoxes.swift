import FuzzSupport
import ImagePipeline

/// One input: must never crash, hang or leak, whatever the bytes.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = [UInt8](UnsafeRawBufferPointer(start: data, count: size))
  guard let info = try? HEIFBoxReader.read(bytes) else { return 0 }
  // The iref patch renames in place: same size, and the renamed entries are gone on re-reading.
  if let patched = HEIFReferencePatch.apply(to: bytes, info: info) {
    precondition(patched.count == bytes.count, "the patch changed the size")
    let again = try? HEIFBoxReader.read(patched)
    precondition(again != nil, "the patched file no longer reads")
    precondition(again?.multiTargetReferenceOffsets.isEmpty == true, "multi-target references left")
    precondition(again?.width == info.width && again?.height == info.height, "the patch changed the size")
  }
  return 0
}

@_cdecl("FuzzHEIFBoxes_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
  runLibFuzzer(argc, argv, testOneInput)
}
