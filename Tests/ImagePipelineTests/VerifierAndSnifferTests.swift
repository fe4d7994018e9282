import ImageCodecs
import ImageContainers
import Testing

@testable import ImagePipeline

@Suite struct VerifierAndSnifferTests {
  static func cleanJPEG() throws -> [UInt8] {
    try JPEGCodec.encode(Fixtures.quadrants(width: 32, height: 16), quality: 85)
  }

  @Test func encoderOutputPassesTheVerifier() throws {
    try JPEGOutputVerifier.verify(try Self.cleanJPEG())
  }

  @Test func verifierRefusesMetadataSegmentsAndTrailingBytes() throws {
    let clean = try Self.cleanJPEG()
    let withExif = try Fixtures.jpeg(Fixtures.quadrants(width: 32, height: 16), orientation: 6)
    #expect(throws: JPEGOutputVerifier.Violation.forbiddenMarker(0xE1)) {
      try JPEGOutputVerifier.verify(withExif)
    }
    let comment: [UInt8] = [0xFF, 0xFE, 0x00, 0x05, 0x68, 0x69, 0x21]
    let commented = Array(clean[0..<2]) + comment + Array(clean[2...])
    #expect(throws: JPEGOutputVerifier.Violation.forbiddenMarker(0xFE)) {
      try JPEGOutputVerifier.verify(commented)
    }
    #expect(throws: JPEGOutputVerifier.Violation.bytesAfterEOI(3)) {
      try JPEGOutputVerifier.verify(clean + [1, 2, 3])
    }
    #expect(throws: JPEGOutputVerifier.Violation.truncated) {
      try JPEGOutputVerifier.verify(Array(clean.dropLast(2)))
    }
  }

  @Test func snifferUsesMagicBytesOnly() {
    func ftyp(_ major: String, _ compatible: [String]) -> [UInt8] {
      let brands = ([major, "\0\0\0\0"] + compatible).flatMap { Array($0.utf8) }
      return Fixtures.be32(UInt32(8 + brands.count)) + Array("ftyp".utf8) + brands
    }
    #expect(FormatSniffer.sniff([]) == .empty)
    #expect(FormatSniffer.sniff([0xFF]) == .unknown)
    #expect(FormatSniffer.sniff(ftyp("heic", ["mif1"])) == .heif)
    #expect(FormatSniffer.sniff(ftyp("mif1", ["avif"])) == .avif)
    #expect(FormatSniffer.sniff(ftyp("mif1", ["heic"])) == .heif)
    #expect(FormatSniffer.sniff(ftyp("avis", ["avif", "msf1"])) == .avifSequence)
    #expect(FormatSniffer.sniff(ftyp("isom", ["mp41"])) == .video)
    #expect(FormatSniffer.sniff(ftyp("qt  ", [])) == .video)
    // An EBML header (Matroska, WebM): the movie reader checks the doc type.
    #expect(FormatSniffer.sniff([0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81, 0x01]) == .video)
    #expect(FormatSniffer.sniff(Array("%PDF-1.7".utf8)) == .pdf)
    #expect(FormatSniffer.sniff(Array("\u{FEFF}  <?xml version=\"1.0\"?><svg width=\"1\"/>".utf8)) == .svg)
    #expect(FormatSniffer.sniff(Array("<!DOCTYPE html><html>".utf8)) == .html)
    #expect(FormatSniffer.sniff([0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0]) == .tiff)
  }

  @Test(.enabled(if: corpusPresent, "skipped: corpus not present"))
  func misnamedHEICIsSniffedAsHEIF() throws {
    #expect(FormatSniffer.sniff(try corpusBytes("heic-misnamed-as.jpg")) == .heif)
    #expect(FormatSniffer.sniff(try corpusBytes("not-image-svg-giant.jpg")) == .svg)
    #expect(FormatSniffer.sniff(try corpusBytes("not-image-html.jpg")) == .html)
    #expect(FormatSniffer.sniff(try corpusBytes("png-bad-signature.png")) == .unknown)
  }

  @Test func pngChunkLongerThanTheFileIsReadWithoutTrapping() {
    // Regression (FuzzPNGChunks): a zTXt chunk declaring 2062 bytes in a 60-byte file.
    var png = Fixtures.png(Fixtures.quadrants(width: 1, height: 1))
    png = Array(png[0..<33]) + Fixtures.be32(2062) + Array("zTXt".utf8) + [UInt8](repeating: 0, count: 20)
    let info = try? PNGChunkWalker.read(png, checkCRC: true)
    #expect(info?.textChunks == 1 && info?.hasIEND == false)
  }

  @Test func readersSurviveEveryTruncationOfRealHeaders() throws {
    let jpeg = try Fixtures.jpeg(Fixtures.quadrants(width: 16, height: 16), orientation: 6)
    let png = Fixtures.png(Fixtures.quadrants(width: 4, height: 4), orientation: 3)
    for n in 0...jpeg.count { _ = try? JPEGMarkerWalker.read(Array(jpeg.prefix(n))) }
    for n in 0...png.count { _ = try? PNGChunkWalker.read(Array(png.prefix(n)), checkCRC: true) }
    let exif = Fixtures.exifTIFF(orientation: 8)
    for n in 0...exif.count { _ = EXIFReader.read(Array(exif.prefix(n))) }
    #expect(EXIFReader.read(exif)?.orientationValue == 8)
  }
}
