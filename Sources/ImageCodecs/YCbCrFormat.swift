/// How Y′CbCr samples encode R′G′B′: the matrix of luma weights (`Kr`, `Kb`), after H.273.
public enum YCbCrMatrix: Sendable, Hashable {
  /// BT.601 (H.273 5 and 6): JFIF, and what libheif assumes when nothing is said.
  case bt601
  /// BT.709 (H.273 1).
  case bt709
  /// BT.2020 non-constant luminance (H.273 9).
  case bt2020NonConstant
  /// SMPTE 240M (H.273 7).
  case smpte240m
  /// US FCC Title 47 (H.273 4).
  case fcc

  /// The matrix for an H.273 `matrix_coefficients` code point; nil for those with no fixed
  /// Kr/Kb pair (identity/GBR 0, YCgCo 8, constant-luminance 10, chromaticity-derived 12–13,
  /// ICtCp 14). Unspecified (2) is BT.601, as libheif decodes it.
  public init?(h273 code: Int) {
    switch code {
    case 1: self = .bt709
    case 2, 5, 6: self = .bt601
    case 4: self = .fcc
    case 7: self = .smpte240m
    case 9: self = .bt2020NonConstant
    default: return nil
    }
  }

  /// The luma weights of red and blue (green's is `1 − kr − kb`).
  public var coefficients: (kr: Double, kb: Double) {
    switch self {
    case .bt601: (0.299, 0.114)
    case .bt709: (0.2126, 0.0722)
    case .bt2020NonConstant: (0.2627, 0.0593)
    case .smpte240m: (0.212, 0.087)
    case .fcc: (0.30, 0.11)
    }
  }
}

/// Whether 8-bit samples use the whole 0…255 range or video range (Y 16…235, C 16…240).
public enum YCbCrRange: Sendable, Hashable {
  case full
  case limited
}

/// Where a subsampled chroma sample sits among the luma samples it covers, on each axis.
///
/// JPEG centres chroma between its luma samples; HEVC and H.264 streams default to chroma
/// co-sited with the first luma column and centred vertically (H.273 chroma location 0).
public struct ChromaSiting: Sendable, Hashable {
  /// A chroma sample's place along one axis.
  public enum Position: Sendable, Hashable {
    /// Halfway across the luma samples it covers.
    case centred
    /// On the first luma sample it covers.
    case cosited
  }

  public var horizontal: Position
  public var vertical: Position

  /// Creates a siting from its two axes.
  public init(horizontal: Position, vertical: Position) {
    self.horizontal = horizontal
    self.vertical = vertical
  }

  /// Centred on both axes: JPEG/JFIF.
  public static let centred = ChromaSiting(horizontal: .centred, vertical: .centred)

  /// The siting of an H.273 `chroma_sample_loc_type` 0…3 (left, centre, top-left, top); nil for
  /// the bottom positions 4 and 5, which no camera writes.
  public init?(h273ChromaLocation type: Int) {
    switch type {
    case 0: self.init(horizontal: .cosited, vertical: .centred)
    case 1: self.init(horizontal: .centred, vertical: .centred)
    case 2: self.init(horizontal: .cosited, vertical: .cosited)
    case 3: self.init(horizontal: .centred, vertical: .cosited)
    default: return nil
    }
  }
}

extension ChromaSiting.Position {
  /// Where luma coordinate `l` falls in chroma coordinates is `l / factor + offset`, with pixel
  /// `i` covering `[i, i + 1)` on both grids: 0 when centred, `(factor − 1) / (2 × factor)`
  /// when co-sited (chroma sample 0's centre is then luma pixel 0's centre, 0.5).
  public func offset(factor: Int) -> Double {
    switch self {
    case .centred: 0
    case .cosited: 0.5 - 0.5 / Double(factor)
    }
  }
}
