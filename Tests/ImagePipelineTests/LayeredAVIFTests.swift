import ImageCodecs
import TestSupport
import Testing

@testable import ImagePipeline

/// A layered AVIF (one AV1 stream of two spatial layers, from libaom's encoder API; see
/// Scripts/make-decoder-fixtures) shows the layer its `a1op`/`lsel` select, at that layer's size,
/// as libavif does; libheif 1.15 always decoded operating point 0 (the large layer), and the file
/// was refused as not matching its `ispe`.
@Suite(.timeLimit(.minutes(2)))
struct LayeredAVIFTests {
  @Test(arguments: [
    ("layered-a1op.avif", 64, 48, "layered-reference-op1.png"),
    ("layered-lsel.avif", 64, 48, "layered-reference-op1.png"),
    ("layered-full.avif", 128, 96, "layered-reference-op0.png"),
  ])
  func theSelectedLayerIsShownAtItsSize(name: String, width: Int, height: Int, reference: String) throws {
    let result = try Pipeline().process(DecoderFixtures.bytes(name))
    #expect((result.width, result.height) == (width, height))
    // The reference: the same stream decoded by ffmpeg's libdav1d at that operating point. Luma
    // only: the quadrants' hard colour edges make 4:2:0 chroma differ between any two decoders.
    let expected = Self.luma(try PNGCodec.decode(DecoderFixtures.bytes(reference)))
    let output = Self.luma(try JPEGCodec.decode(result.jpeg))
    let psnr = MonochromeOutputTests.psnr(output, expected)
    #expect(psnr >= 30, "\(name): \(psnr) dB")
  }

  @Test func theStreamHasTwoOperatingPointsAndTheSelectionIsWrittenAsTheFirst() throws {
    let bytes = try DecoderFixtures.bytes("layered-a1op.avif")
    let info = try HEIFBoxReader.read(bytes)
    let item = try #require(info.plan?.image.codedItems.first)
    let selection = try #require(item.layerSelection)
    #expect(selection.operatingPoint == 1 && selection.layer == nil && selection.idc == 0x101)
    #expect(!selection.writes.isEmpty)
    // Before: operating points 0x301 (both layers) and 0x101 (the base) in every sequence header
    // (the av1C's and the two in the data); after, operating point 0 is the base layer too.
    #expect(try Self.operatingPoints(bytes) == [[0x301, 0x101], [0x301, 0x101], [0x301, 0x101]])
    let patched = try #require(HEIFReferencePatch.apply(to: bytes, info: info))
    #expect(try Self.operatingPoints(patched) == [[0x101, 0x101], [0x101, 0x101], [0x101, 0x101]])
    #expect(info.plan?.notes.contains { $0.contains("operating point 1") } == true)
  }

  @Test func withoutASelectionNothingIsRewritten() throws {
    let info = try HEIFBoxReader.read(DecoderFixtures.bytes("layered-full.avif"))
    #expect(info.plan?.image.codedItems.first?.layerSelection == nil)
    #expect(info.plan?.layerSelectionWrites.isEmpty == true)
  }

  @Test(arguments: [
    ("a1op", [UInt8]([5]), "operating point 5"), ("lsel", [UInt8]([0, 2]), "layer 2"),
  ])
  func aSelectionTheStreamDoesNotHoldIsCorrupt(box: String, value: [UInt8], reason: String) throws {
    var bytes = try DecoderFixtures.bytes(box == "a1op" ? "layered-a1op.avif" : "layered-lsel.avif")
    let type = Array(box.utf8)
    let at = try #require((0..<bytes.count - 4).first { Array(bytes[$0..<$0 + 4]) == type }) + 4
    bytes.replaceSubrange(at..<at + value.count, with: value)
    let refusal = try #require(try HEIFBoxReader.read(bytes).refusal)
    #expect(refusal.kind == .corrupt && refusal.reason.contains(reason), "\(refusal)")
  }

  /// The operating point idcs of every sequence header of the file's primary AV1 item: its
  /// `av1C`'s, then its data's.
  static func operatingPoints(_ file: [UInt8]) throws -> [[Int]] {
    let item = try #require(try HEIFBoxReader.read(file).plan?.image.codedItems.first)
    let config = try #require(item.av1).configOBUs
    return file.withUnsafeBytes { bytes in
      func idcs(_ stream: UnsafeRawBufferPointer) -> [[Int]] {
        (AV1OBUs.sequenceHeaders(in: stream) ?? []).map {
          AV1SequenceHeader.read(UnsafeRawBufferPointer(rebasing: stream[$0]))?.operatingPointIDCs ?? []
        }
      }
      return idcs(UnsafeRawBufferPointer(rebasing: bytes[config])) + item.withBytes(in: bytes) { idcs($0) }
    }
  }

  /// The BT.601 luma of tightly packed RGB.
  static func luma(_ rgb: PixelBuffer) -> PixelBuffer {
    let count = rgb.width * rgb.height
    let bytes = (0..<count).map { i in
      let (r, g, b) = (Int(rgb.bytes[3 * i]), Int(rgb.bytes[3 * i + 1]), Int(rgb.bytes[3 * i + 2]))
      return UInt8((299 * r + 587 * g + 114 * b + 500) / 1000)
    }
    return PixelBuffer(width: rgb.width, height: rgb.height, layout: .gray, bytes: bytes)
  }
}
