/// An output profile: the size a model provider reads an image at, and what the provider's
/// published formula says the image costs in tokens.
///
/// A profile's size is a function of the stored default image's size (upright, already fitted
/// into `maxEdge`): renditions are made from that image, never larger than it, and the record
/// can list every profile's size before any rendition exists. Each rule is the provider's
/// published one, quoted beside it; where a rule leaves a choice open, the comment says which
/// way it was decided and why.
public enum ModelProfile: String, CaseIterable, Sendable, Hashable {
  /// The stored image itself (`uploads.maxEdge`, 2048 px by default).
  case `default`
  /// Anthropic Claude.
  case anthropic
  /// OpenAI, `detail: "high"`.
  case openai
  /// Google Gemini.
  case gemini

  // Anthropic, "Vision" guide (docs.claude.com/en/docs/build-with-claude/vision, "Evaluate image
  // size"): "If your image's long edge is more than 1568 pixels, or your image is more than
  // ~1,600 tokens, it will first be scaled down, preserving aspect ratio"; "we recommend
  // resizing images to no more than 1.15 megapixels (and within 1568 pixels in both
  // dimensions)"; cost: "tokens = (width px * height px)/750".
  //
  // Decided: the budget is the recommended 1.15 MP = 1 150 000 pixels, not the ~1,600-token
  // ceiling (1.2 MP) at which Claude itself rescales: an image at the ceiling may still be
  // rescaled by a rounding, one under the recommendation never is.
  static let anthropicLongEdge = 1568
  static let anthropicPixels = 1_150_000

  // OpenAI, "Images and vision" guide, "Calculating costs" (platform.openai.com/docs/guides/
  // vision#calculating-costs): "detail: high images are first scaled to fit within a 2048 x
  // 2048 square, maintaining their aspect ratio. Then, they are scaled such that the shortest
  // side of the image is 768px long. Finally, we count how many 512px squares the image
  // consists of. Each of those squares costs 170 tokens. Another 85 tokens are always added to
  // the final total." (1024 × 1024 → 765 tokens; 2048 × 4096 → 1105.)
  //
  // Decided: an image whose shortest side is already under 768 px is not scaled up (the
  // guide's examples only ever scale down, and an upscaled copy adds tokens, not detail).
  // Newer OpenAI models that count 32 px patches are not this profile.
  static let openAIBox = 2048
  static let openAIShortSide = 768

  // Google, "Understand and count tokens" (ai.google.dev/gemini-api/docs/tokens, image
  // section): "With Gemini 2.0, image inputs with both dimensions <=384 pixels are counted as
  // 258 tokens. Images larger in one or both dimensions are cropped and scaled as needed into
  // tiles of 768x768 pixels, each counted as 258 tokens."
  //
  // Decided, where the rule is silent: (1) Gemini publishes no size it scales down to, so the
  // rendition is fitted inside 1536 × 1536, two whole tiles each way: at most 4 tiles = 1032
  // tokens, about the budget Gemini 3's default `media_resolution` gives an image (1120), with
  // no tile wasted on a sliver; (2) "cropped and scaled as needed" does not say how many
  // tiles, so they are counted as ⌈width / 768⌉ × ⌈height / 768⌉, as Google's own Gemini by
  // Example token calculator does. Gemini 3 models with `media_resolution` set charge a fixed
  // budget per image instead; the estimate is the size-based rule.
  static let geminiBox = 1536
  static let geminiSmall = 384
  static let geminiTile = 768
  static let geminiTileTokens = 258

  /// The profile of a query value (`?profile=anthropic`), or nil for an unknown name.
  public init?(name: some StringProtocol) {
    self.init(rawValue: String(name))
  }

  /// The size of this profile's rendition of a stored image of `width` × `height` (upright,
  /// already within `maxEdge`); never larger than it.
  public func size(ofStored width: Int, _ height: Int) -> (width: Int, height: Int) {
    precondition(width > 0 && height > 0, "profile sizes need a positive size")
    switch self {
    case .default:
      return (width, height)
    case .anthropic:
      var size = Resampler.fitted(width: width, height: height, maxEdge: Self.anthropicLongEdge)
      if size.width * size.height > Self.anthropicPixels {
        // Scaled by √(budget / area), each side rounded down, so the product stays within the
        // budget (rounding to nearest could pass it by a row).
        let scale = (Double(Self.anthropicPixels) / Double(size.width * size.height)).squareRoot()
        size = (max(1, Int(Double(size.width) * scale)), max(1, Int(Double(size.height) * scale)))
        while size.width * size.height > Self.anthropicPixels {
          if size.width >= size.height { size.width -= 1 } else { size.height -= 1 }
        }
      }
      return size
    case .openai:
      let boxed = Resampler.fitted(width: width, height: height, maxEdge: Self.openAIBox)
      let short = min(boxed.width, boxed.height)
      guard short > Self.openAIShortSide else { return boxed }
      let long = max(boxed.width, boxed.height)
      // The short side becomes exactly 768; the long one is rounded to nearest.
      let scaledLong = max(Self.openAIShortSide, (long * Self.openAIShortSide + short / 2) / short)
      return boxed.width <= boxed.height
        ? (Self.openAIShortSide, scaledLong) : (scaledLong, Self.openAIShortSide)
    case .gemini:
      return Resampler.fitted(width: width, height: height, maxEdge: Self.geminiBox)
    }
  }

  /// What the provider's published formula charges for an image of `width` × `height` as sent
  /// (the rendition's own size); nil for `default`, which is no provider's.
  public func estimatedTokens(width: Int, height: Int) -> Int? {
    switch self {
    case .default:
      return nil
    case .anthropic:
      // Rounded up: Anthropic's own table does (1000 × 1000 → ~1334, 200 × 200 → ~54).
      return (width * height + 749) / 750
    case .openai:
      return 85 + 170 * Self.tiles(width, 512) * Self.tiles(height, 512)
    case .gemini:
      if width <= Self.geminiSmall && height <= Self.geminiSmall { return Self.geminiTileTokens }
      return Self.geminiTileTokens * Self.tiles(width, Self.geminiTile) * Self.tiles(height, Self.geminiTile)
    }
  }

  /// Whether an image of `width` × `height` obeys this provider's size rule (what the corpus
  /// test checks every rendition against); `default` holds any size.
  public func accepts(width: Int, height: Int) -> Bool {
    switch self {
    case .default: true
    case .anthropic: max(width, height) <= Self.anthropicLongEdge && width * height <= Self.anthropicPixels
    case .openai: max(width, height) <= Self.openAIBox && min(width, height) <= Self.openAIShortSide
    case .gemini: max(width, height) <= Self.geminiBox
    }
  }

  private static func tiles(_ length: Int, _ tile: Int) -> Int { (length + tile - 1) / tile }
}
