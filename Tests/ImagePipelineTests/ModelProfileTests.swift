import Foundation
import ImageCodecs
import TestSupport
import Testing

@testable import ImagePipeline

@Suite struct ModelProfileTests {
  /// Published examples (and edge cases) of each provider's token formula.
  struct TokenCase: CustomTestStringConvertible, Sendable {
    let profile: ModelProfile
    let width: Int
    let height: Int
    let tokens: Int?
    var testDescription: String { "\(profile) \(width)x\(height)" }
  }

  static let tokenTable: [TokenCase] = [
    // Anthropic's table: 200×200 ~54, 1000×1000 ~1334, 1092×1092 ~1590 (tokens = w·h / 750).
    TokenCase(profile: .anthropic, width: 200, height: 200, tokens: 54),
    TokenCase(profile: .anthropic, width: 1000, height: 1000, tokens: 1334),
    TokenCase(profile: .anthropic, width: 1092, height: 1092, tokens: 1590),
    TokenCase(profile: .anthropic, width: 750, height: 1, tokens: 1),
    // OpenAI's examples, after its scaling: 1024×1024 → 768×768 = 4 tiles → 765; 2048×4096 →
    // 768×1536 = 6 tiles → 1105; one tile → 255.
    TokenCase(profile: .openai, width: 768, height: 768, tokens: 765),
    TokenCase(profile: .openai, width: 768, height: 1536, tokens: 1105),
    TokenCase(profile: .openai, width: 512, height: 512, tokens: 255),
    TokenCase(profile: .openai, width: 513, height: 512, tokens: 425),
    // Gemini: both sides ≤ 384 → 258; else 258 per 768×768 tile.
    TokenCase(profile: .gemini, width: 384, height: 384, tokens: 258),
    TokenCase(profile: .gemini, width: 385, height: 100, tokens: 258),
    TokenCase(profile: .gemini, width: 768, height: 768, tokens: 258),
    TokenCase(profile: .gemini, width: 1536, height: 1152, tokens: 1032),
    TokenCase(profile: .gemini, width: 769, height: 768, tokens: 516),
    TokenCase(profile: .default, width: 2048, height: 1536, tokens: nil),
  ]

  @Test(arguments: tokenTable)
  func estimatedTokensFollowThePublishedFormula(_ item: TokenCase) {
    #expect(item.profile.estimatedTokens(width: item.width, height: item.height) == item.tokens)
  }

  @Test func openAIScalesTheGuideExamplesAsTheGuideDoes() {
    // The guide's own walk-throughs, from the size each is sent at.
    #expect(ModelProfile.openai.size(ofStored: 1024, 1024) == (768, 768))
    #expect(ModelProfile.openai.size(ofStored: 1024, 2048) == (768, 1536))
    // An image already small is not scaled up.
    #expect(ModelProfile.openai.size(ofStored: 600, 400) == (600, 400))
  }

  @Test func anthropicKeepsBothTheLongEdgeAndThePixelBudget() {
    #expect(ModelProfile.anthropic.size(ofStored: 2048, 1536) == (1238, 928))
    #expect(ModelProfile.anthropic.size(ofStored: 2048, 512) == (1568, 392))
    #expect(ModelProfile.anthropic.size(ofStored: 1000, 1000) == (1000, 1000))
    #expect(ModelProfile.anthropic.size(ofStored: 1, 2048) == (1, 1568))
  }

  @Test func everyProfileSizeObeysItsRuleAndNeverGrows() {
    var sizes: [(Int, Int)] = [(1, 1), (2048, 2048), (2048, 1), (1, 2048), (300, 5000), (65_000, 40)]
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    for _ in 0..<2000 {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      sizes.append((Int(state >> 33) % 4096 + 1, Int(state >> 11) % 4096 + 1))
    }
    for (width, height) in sizes {
      for profile in ModelProfile.allCases {
        let size = profile.size(ofStored: width, height)
        #expect(
          profile.accepts(width: size.width, height: size.height), "\(profile) \(width)x\(height) → \(size)")
        #expect(size.width <= width && size.height <= height && size.width >= 1 && size.height >= 1)
      }
    }
  }

  /// Each provider profile's rendition of an accepted upload obeys that provider's rule (the
  /// corpus test calls this for every accepted file); a profile with no rendition is one the
  /// stored image already satisfies.
  static func checkRenditions(of result: ProcessedImage, file: String) throws {
    var seen: Set<ModelProfile> = []
    for rendition in result.renditions {
      seen.insert(rendition.profile)
      let header = try JPEGCodec.readHeader(rendition.jpeg)
      #expect((header.width, header.height) == (rendition.width, rendition.height))
      #expect(
        rendition.profile.accepts(width: header.width, height: header.height),
        "\(file) \(rendition.profile): \(header.width)x\(header.height)")
      #expect(
        (rendition.width, rendition.height) == rendition.profile.size(ofStored: result.width, result.height))
      try JPEGOutputVerifier.verify(rendition.jpeg)
    }
    for profile in ModelProfile.allCases where !seen.contains(profile) {
      #expect(profile.size(ofStored: result.width, result.height) == (result.width, result.height))
      #expect(profile.accepts(width: result.width, height: result.height), "\(file) \(profile)")
    }
  }

  @Test func renditionsOfAStoredImageHaveTheProfileSizes() throws {
    let pixels = PixelBuffer(
      width: 2000, height: 1500, layout: .rgb,
      bytes: (0..<(2000 * 1500 * 3)).map { UInt8(truncatingIfNeeded: $0 / 7) })
    let stored = try JPEGCodec.encode(pixels, quality: 85)
    let renditions = try Pipeline().renditions(ofStored: stored, profiles: ModelProfile.allCases)
    #expect(renditions.map(\.profile) == [.anthropic, .openai, .gemini])
    for rendition in renditions {
      let header = try JPEGCodec.readHeader(rendition.jpeg)
      let expected = rendition.profile.size(ofStored: 2000, 1500)
      #expect((header.width, header.height) == expected)
      try JPEGOutputVerifier.verify(rendition.jpeg)
    }
  }
}
