import FuzzSupport
import ImagePipeline

/// One input: must never crash, hang or leak, whatever the bytes. Drives the box reader, the
/// decode plan and the path rule, and checks what a plan promises: every byte range lies in the
/// input, grids have one tile per cell covering the output, geometry stays inside the image.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = [UInt8](UnsafeRawBufferPointer(start: data, count: size))
  var limits = Limits()
  // Small limits keep each run fast; the reader must bound its work by them.
  limits.maxHEIFItems = 256
  limits.maxHEIFTiles = 64
  guard let info = try? HEIFBoxReader.read(bytes, limits: limits) else { return 0 }
  precondition((info.plan == nil) != (info.refusal == nil), "a plan or a refusal, never both or neither")
  if let plan = info.plan { check(plan, bytes.count) }
  _ = info.transformedSize
  // The libheif patch renames in place: same size, and the renamed entries are gone on re-reading.
  if let patched = HEIFReferencePatch.apply(to: bytes, info: info) {
    precondition(patched.count == bytes.count, "the patch changed the size")
    let again = try? HEIFBoxReader.read(patched, limits: limits)
    precondition(again != nil, "the patched file no longer reads")
    precondition(again?.multiTargetReferenceOffsets.isEmpty == true, "multi-target references left")
    precondition(again?.libheifRenames.isEmpty == true, "data-less items left")
    precondition(again?.width == info.width && again?.height == info.height, "the patch changed the size")
  }
  return 0
}

func check(_ plan: HEIFDecodePlan, _ count: Int) {
  for image in [plan.image] + (plan.alpha.map { [$0.image] } ?? []) {
    for item in image.codedItems {
      for range in item.data {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "extent outside")
      }
      if let hevc = item.hevc {
        precondition(hevc.record.upperBound <= count && [1, 2, 4].contains(hevc.lengthSize), "hvcC")
        for array in hevc.nalArrays { for unit in array.units { precondition(unit.upperBound <= count) } }
      }
    }
    if let grid = image.grid {
      precondition(grid.tiles.count == grid.rows * grid.columns && grid.tiles.count <= 64, "grid tiles")
      precondition(grid.tileSize.width * grid.columns >= grid.outputSize.width, "grid coverage")
      precondition(grid.tileSize.height * grid.rows >= grid.outputSize.height, "grid coverage")
      let last = grid.placement(ofTile: grid.tiles.count - 1)
      precondition(last.width >= 0 && last.height >= 0, "placement")
    }
  }
  let size = plan.storedSize
  let geometry = plan.geometry(width: size.width, height: size.height)
  let c = geometry.crop
  precondition(c.x >= 0 && c.y >= 0 && c.width > 0 && c.height > 0, "empty crop")
  precondition(c.x + c.width <= size.width && c.y + c.height <= size.height, "crop outside the image")
  let shown = (geometry.displaySize.width, geometry.displaySize.height)
  precondition(shown == (c.width, c.height) || shown == (c.height, c.width), "display size")
  _ = HEIFPathRule.decide(plan)
  _ = plan.path.description
}

@_cdecl("FuzzHEIFBoxes_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
  runLibFuzzer(argc, argv, testOneInput)
}
