import Foundation
import ImageCodecs
import TestSupport
import Testing

@Suite(.enabled(if: ProcessInfo.processInfo.environment["EXPLORE"] != nil))
struct Explore {
  @Test func heif() throws {
    for name in [
      "heic-iphone13pro-grid-depth-gps.heic", "heic-alpha-8bit.heif", "heic-alpha-10bit-odd-size.heif",
      "heic-sony-a7s3-10bit.hif", "avif-10bit-alpha.avif", "avif-irot-imir-clap.avif", "avif-irot-90cw.avif",
      "avif-10bit-icc.avif", "avif-iphone-gps-p3.avif", "heic-iphonexs-irot-exif6-gps.heic",
      "heic-nokia83-irot-exif1-gps.heif", "heic-multi-image-thumbnails.heic", "heic-misnamed-as.jpg",
      "heic-truncated.heic", "heic-corrupt-canon-10bit.hif", "heic-empty-0-bytes.heic", "avif-truncated.avif",
      "avif-bomb-17000x17000.avif", "avif-sequence-animated-alpha.avifs",
      "heic-iphone16-hdr-gainmap-gps.heic",
      "heic-xiaomi-large-exif-gps.heic", "heic-iphone7plus-exif6-no-irot.heic",
    ] {
      let data = try Fixtures.corpus(name)
      let start = ContinuousClock.now
      do {
        let info = try HEIFCodec.primaryInfo(data)
        let image = try HEIFCodec.decode(data)
        let p = image.pixels
        print(
          name, info.width, info.height, info.storedWidth, info.storedHeight, info.hasAlpha,
          info.premultipliedAlpha, info.bitDepth, info.topLevelImageCount,
          info.colour.iccProfile?.count ?? -1,
          info.colour.nclx.map { "\($0)" } ?? "-", "->", p.width, p.height, p.layout, p.premultiplied,
          Fixtures.pixel(p, p.width / 2, p.height / 2), ContinuousClock.now - start)
      } catch {
        print(name, "ERROR", error, ContinuousClock.now - start)
      }
    }
  }
}
