import Foundation
import Testing

@testable import ImagePipeline

/// Inputs FuzzHEIFBoxes found (Tests/Fixtures/heif-fuzz), checked as the fuzz target checks
/// every input: a plan or a refusal, and a libheif patch that re-reads to the same image with
/// nothing left to patch.
@Suite struct HEIFFuzzRegressionTests {
  static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .appendingPathComponent("Fixtures/heif-fuzz")

  static var names: [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
  }

  @Test func everyFoundInputIsHere() {
    // patch-rereads-tmap.heif: a tmap primary whose `dimg` also lists a data-less item; the patch
    // once renamed that reference and left the primary without its base image.
    #expect(Self.names == ["patch-rereads-tmap.heif"])
  }

  @Test(arguments: names)
  func foundInputReadsAndPatchesConsistently(name: String) throws {
    let bytes = [UInt8](try Data(contentsOf: Self.directory.appendingPathComponent(name)))
    var limits = Limits()
    limits.maxHEIFItems = 256
    limits.maxHEIFTiles = 64
    guard let info = try? HEIFBoxReader.read(bytes, limits: limits) else { return }
    #expect((info.plan == nil) != (info.refusal == nil))
    guard let patched = HEIFReferencePatch.apply(to: bytes, info: info) else { return }
    let again = try HEIFBoxReader.read(patched, limits: limits)
    #expect(again.multiTargetReferenceOffsets.isEmpty && again.libheifRenames.isEmpty)
    #expect(again.width == info.width && again.height == info.height)
    #expect(again.plan?.image.itemID == info.plan?.image.itemID)
  }
}
