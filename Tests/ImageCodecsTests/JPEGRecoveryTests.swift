import TestSupport
import Testing

@testable import ImageCodecs

/// The JPEG recovery rule (`JPEGRecovery`) on the fixtures of Scripts/make-decoder-fixtures,
/// through each TurboJPEG call that reads a whole file: decode to RGB, decode to planes and the
/// lossless transform. Judged against the picture the files were made from, never by bytes.
@Suite struct JPEGRecoveryTests {
  static let accepted = [
    "jpeg-stray-bytes.jpg", "jpeg-extraneous-before-eoi.jpg", "jpeg-trailing-data.jpg",
    "jpeg-premature-last-row.jpg", "jpeg-progressive-trailing.jpg",
  ]

  static func reference() throws -> PixelBuffer {
    try PNGCodec.decode(DecoderFixtures.bytes("jpeg-reference.png"))
  }

  @Test(arguments: accepted + ["jpeg-clean.jpg"])
  func filesLibjpegOnlyWarnsAboutDecodeOnEveryCall(_ name: String) throws {
    let input = try DecoderFixtures.bytes(name)
    let rgb = try JPEGCodec.decode(input)
    #expect(Fixtures.psnr(rgb, try Self.reference()) >= 30, "\(name)")
    let planes = try #require(try JPEGCodec.decodePlanes(input, scaleToAtLeast: (48, 32)))
    #expect((planes.width, planes.height) == (48, 32))
    let transformed = try JPEGCodec.transform(input, operation: .none)
    #expect(Fixtures.psnr(try JPEGCodec.decode(transformed), try Self.reference()) >= 30, "\(name)")
  }

  @Test(arguments: ["jpeg-trailing-data.jpg", "jpeg-progressive-trailing.jpg", "jpeg-gray-trailing.jpg"])
  func bytesAfterEOIAreNeverCopiedByTheTransform(_ name: String) throws {
    let input = try DecoderFixtures.bytes(name)
    let transformed = try JPEGCodec.transform(input, operation: .none)
    #expect(transformed.suffix(2) == [0xFF, 0xD9])
    // The trailer starts like another JPEG: FF D8 FF E1, once, after the first EOI.
    #expect(!Self.contains(transformed, [0xFF, 0xD8, 0xFF, 0xE1]))
    #expect(try JPEGCodec.readHeader(transformed).subsampling == JPEGCodec.readHeader(input).subsampling)
  }

  @Test(arguments: [
    ("jpeg-scan-cut-early.jpg", CodecError.Kind.corrupt, "ends in MCU row"),
    ("jpeg-bad-huffman.jpg", .corrupt, "libjpeg warning"),
    ("jpeg-truncated.jpg", .truncated, "ends before EOI"),
  ])
  func damagedScansAreRefusedOnEveryCall(name: String, kind: CodecError.Kind, reason: String) throws {
    let input = try DecoderFixtures.bytes(name)
    let calls: [() throws -> Void] = [
      { _ = try JPEGCodec.decode(input) },
      { _ = try JPEGCodec.decodePlanes(input, scaleToAtLeast: (48, 32)) },
      { _ = try JPEGCodec.transform(input, operation: .none) },
    ]
    for call in calls {
      let error = try #require(throws: CodecError.self) { try call() }
      #expect(error.kind == kind && "\(error)".contains(reason), "\(name): \(error)")
    }
  }

  @Test func anAcceptedWarningDoesNotHideALaterRefusedOne() throws {
    // Stray bytes in the header (accepted), then the scan cut a third of the way in, then EOI:
    // TurboJPEG reports only the first warning; the rule reads them all.
    let stray = try DecoderFixtures.bytes("jpeg-stray-bytes.jpg")
    let cut = Array(stray[..<(stray.count * 2 / 3)]) + [0xFF, 0xD9]
    let error = try #require(throws: CodecError.self) { try JPEGCodec.decode(cut) }
    #expect(error.kind == .corrupt && "\(error)".contains("ends in MCU row"), "\(error)")
  }

  @Test func aScanEndingInTheLastMCURowIsAcceptedAndOneBeforeItIsNot() throws {
    // 96x64 4:2:0 has 4 MCU rows of 16. Cut 2 or 40 bytes before EOI: row 4; a third in: row 2.
    let clean = try DecoderFixtures.bytes("jpeg-clean.jpg")
    for cut in [2, 40] {
      let input = Array(clean[..<(clean.count - 2 - cut)]) + [0xFF, 0xD9]
      try input.withUnsafeBytes { try JPEGRecovery.judge($0, context: "test") }
    }
    let error = try #require(throws: CodecError.self) {
      try DecoderFixtures.bytes("jpeg-scan-cut-early.jpg").withUnsafeBytes {
        try JPEGRecovery.judge($0, context: "test")
      }
    }
    #expect("\(error)".contains("scan 1 ends in MCU row 2 of 4"), "\(error)")
  }

  @Test func cmykWithoutAnAdobeMarkerIsReadAsAdobeInverted() throws {
    let input = try DecoderFixtures.bytes("jpeg-cmyk-no-adobe.jpg")
    let info = try JPEGCodec.readHeader(input)
    #expect(info.colourSpace == .cmyk && !info.hasAdobeMarker)
    let psnr = Fixtures.psnr(try JPEGCodec.decode(input), try Self.reference())
    #expect(psnr >= 30, "\(psnr) dB")
  }

  static func contains(_ bytes: [UInt8], _ pattern: [UInt8]) -> Bool {
    bytes.count >= pattern.count
      && (0...(bytes.count - pattern.count)).contains { Array(bytes[$0..<$0 + pattern.count]) == pattern }
  }
}
