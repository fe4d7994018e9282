import ImageCodecs
import TestSupport
import Testing

@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct WebPCodecTests {
  @Test func lossyWithMetadataDecodesAndExposesICCAndEXIF() throws {
    let data = try Fixtures.corpus("webp-lossy-icc-exif-xmp.webp")
    let info = try WebPCodec.readHeader(data)
    #expect(info.width == 300 && info.height == 225 && !info.isLossless && !info.isAnimated)
    let buffer = try WebPCodec.decode(data)
    #expect(buffer.layout == .rgb && buffer.width == 300 && buffer.height == 225)
    let metadata = try WebPCodec.metadata(data)
    let icc = try #require(metadata.iccProfile)
    #expect(ColourTransform.describe(iccProfile: icc)?.description.contains("sRGB") == true)
    let exif = try #require(metadata.exif)
    #expect(exif.count > 8)
  }

  @Test func exifChunkIsFoundOnASimpleLossyFile() throws {
    let metadata = try WebPCodec.metadata(Fixtures.corpus("webp-exif-orient-6.webp"))
    #expect(metadata.exif != nil && metadata.iccProfile == nil)
  }

  @Test func lossyAlphaDecodesToStraightRGBA() throws {
    let buffer = try WebPCodec.decode(Fixtures.corpus("webp-lossy-alpha.webp"))
    #expect(buffer.layout == .rgba && buffer.width == 200 && buffer.height == 150 && !buffer.premultiplied)
    let alphas = stride(from: 3, to: buffer.bytes.count, by: 4).map { buffer.bytes[$0] }
    #expect(alphas.min()! < 50 && alphas.max()! == 255)
  }

  @Test func losslessIsReportedAsSuch() throws {
    let data = try Fixtures.corpus("webp-lossless-alpha.webp")
    let info = try WebPCodec.readHeader(data)
    #expect(info.isLossless && info.hasAlpha)
    let buffer = try WebPCodec.decode(data)
    #expect(buffer.width == 2048 && buffer.height == 1536 && buffer.layout == .rgba)
  }

  @Test func animationGivesItsFirstFrame() throws {
    let data = try Fixtures.corpus("webp-animated-lossy-alpha.webp")
    #expect(try WebPCodec.readHeader(data).isAnimated)
    let buffer = try WebPCodec.decode(data)
    #expect(buffer.width == 80 && buffer.height == 80 && buffer.layout == .rgba)
    let alphas = stride(from: 3, to: buffer.bytes.count, by: 4).map { buffer.bytes[$0] }
    #expect(alphas.contains(0) && alphas.contains(255))
  }

  @Test func truncatedFileFails() throws {
    let data = try Fixtures.corpus("webp-truncated.webp")
    let error = try #require(throws: CodecError.self) { try WebPCodec.decode(data) }
    #expect(error.kind == .truncated)
    let metadata = try #require(throws: CodecError.self) { try WebPCodec.metadata(data) }
    #expect(metadata.kind == .truncated)
  }

  @Test func nonWebPFails() throws {
    #expect(throws: CodecError.self) { try WebPCodec.decode(Fixtures.corpus("png-rgba16.png")) }
    #expect(throws: CodecError.self) { try WebPCodec.decode([]) }
  }
}
