import Foundation
import ImageContainers
import Testing

@testable import ImagePipeline

@Suite(.enabled(if: corpusPresent, "skipped: corpus not present"))
struct HEIFBoxReaderTests {
  @Test func iPhoneXSHasMIAFIrotAndExifSix() throws {
    let info = try HEIFBoxReader.read(try corpusBytes("heic-iphonexs-irot-exif6-gps.heic"))
    #expect(info.hasMIAFBrand && info.primaryItemType == FourCC("grid"))
    #expect(info.width == 4032 && info.height == 3024 && info.rotationCCW == 270)
    #expect(info.exif?.orientationValue == 6 && info.exif?.hasGPS == true)
    #expect(info.tileCount == 48 && info.thumbnailCount == 1)
    #expect(info.iccProfile != nil)
  }

  @Test func iPhone7PlusHasNoMIAFNoIrotAndExifSix() throws {
    let info = try HEIFBoxReader.read(try corpusBytes("heic-iphone7plus-exif6-no-irot.heic"))
    #expect(!info.hasMIAFBrand && !info.hasRotationOrMirror && info.exif?.orientationValue == 6)
  }

  @Test func nokiaHasNoMIAFWithIrotAndExifOne() throws {
    let info = try HEIFBoxReader.read(try corpusBytes("heic-nokia83-irot-exif1-gps.heif"))
    #expect(!info.hasMIAFBrand && info.rotationCCW == 270 && info.exif?.rawOrientation == 1)
    #expect(info.iccProfile == nil)
  }

  @Test func iPhone16MultiTargetReferencesAreFoundAndPatchedInPlace() throws {
    let bytes = try corpusBytes("heic-iphone16-hdr-gainmap-gps.heic")
    let info = try HEIFBoxReader.read(bytes)
    #expect(!info.multiTargetReferenceOffsets.isEmpty)
    let patched = try #require(HEIFReferencePatch.apply(to: bytes, info: info))
    #expect(patched.count == bytes.count)
    let differing = zip(bytes, patched).filter { $0 != $1 }.count
    #expect(differing > 0 && differing <= 4 * info.multiTargetReferenceOffsets.count)
    let again = try HEIFBoxReader.read(patched)
    #expect(again.multiTargetReferenceOffsets.isEmpty)
    #expect(again.width == info.width && again.exif?.orientationValue == 6)
  }

  @Test func avifBombDeclaresItsSize() throws {
    let info = try HEIFBoxReader.read(try corpusBytes("avif-bomb-17000x17000.avif"))
    #expect(info.width == 17000 && info.height == 17000)
  }

  @Test func avifTransformsAreRead() throws {
    let info = try HEIFBoxReader.read(try corpusBytes("avif-irot-imir-clap.avif"))
    #expect(info.rotationCCW == 90 && info.mirrorAxis == 0)
    #expect(info.cleanAperture?.width == 330 && info.cleanAperture?.height == 385)
    #expect(info.transformedSize == (385, 330))
  }

  @Test func alphaAuxiliaryIsRecognised() throws {
    #expect(try HEIFBoxReader.read(try corpusBytes("heic-alpha-8bit.heif")).hasAlpha)
    #expect(try HEIFBoxReader.read(try corpusBytes("avif-10bit-alpha.avif")).hasAlpha)
  }

  @Test func primaryOfMultiImageFileIsItemSix() throws {
    let info = try HEIFBoxReader.read(try corpusBytes("heic-multi-image-thumbnails.heic"))
    #expect(info.primaryItemID == 6 && info.width == 64 && info.height == 64 && info.iccProfile == nil)
  }

  @Test func samsungSizesAndTiles() throws {
    let info = try HEIFBoxReader.read(try corpusBytes("heic-samsung-200mp-irot.heic"))
    #expect(info.width == 16320 && info.height == 12240 && info.exif?.orientationValue == 6)
    #expect(info.tileCount > 0)
  }
}

@Suite struct HEIFSyntheticSeedTests {
  /// The fuzz seed built by hand (Fuzz/seeds/FuzzHEIFBoxes/synthetic-grid-auxl-exif.heif): a grid
  /// primary with irot 3, imir 1, clap, nclx, pixi, an alpha `auxl` pointing at two items and an
  /// Exif item in `idat` with Orientation 6 and a GPS pointer.
  @Test func handBuiltSeedReadsAsDesigned() throws {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent(
        "Fuzz/seeds/FuzzHEIFBoxes/synthetic-grid-auxl-exif.heif")
    let bytes = [UInt8](try Data(contentsOf: url))
    let info = try HEIFBoxReader.read(bytes)
    #expect(info.primaryItemType == FourCC("grid") && info.tileCount == 2 && info.itemCount == 5)
    #expect(info.width == 4032 && info.rotationCCW == 270 && info.mirrorAxis == 1)
    #expect(info.cleanAperture?.width == 4000 && info.bitDepth == 8)
    #expect(info.nclx?.primaries == 12 && info.hasAlpha && info.thumbnailCount == 1)
    #expect(info.exif?.orientationValue == 6 && info.exif?.hasGPS == true)
    #expect(info.multiTargetReferenceOffsets.count == 1)
    let patched = try #require(HEIFReferencePatch.apply(to: bytes, info: info))
    #expect(try HEIFBoxReader.read(patched).multiTargetReferenceOffsets.isEmpty)
  }
}
