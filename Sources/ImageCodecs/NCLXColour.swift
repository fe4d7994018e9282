/// A HEIF/AVIF `nclx` colour description (ITU-T H.273 code points).
public struct NCLXColour: Sendable, Hashable {
  /// Colour primaries: 1 BT.709/sRGB, 9 BT.2020, 11 DCI-P3, 12 Display P3 (SMPTE EG 432), 2 unspecified.
  public var colourPrimaries: Int
  /// Transfer characteristics: 13 sRGB, 1/6/14/15 BT.709-like, 16 PQ, 18 HLG, 2 unspecified.
  public var transferCharacteristics: Int
  /// Matrix coefficients: how the coded Y′CbCr encodes RGB (see `ycbcrMatrix`).
  public var matrixCoefficients: Int
  /// Full-range (not video-range) samples.
  public var fullRange: Bool

  /// Creates an nclx description from H.273 code points.
  public init(colourPrimaries: Int, transferCharacteristics: Int, matrixCoefficients: Int, fullRange: Bool) {
    self.colourPrimaries = colourPrimaries
    self.transferCharacteristics = transferCharacteristics
    self.matrixCoefficients = matrixCoefficients
    self.fullRange = fullRange
  }

  /// The Y′CbCr matrix `matrixCoefficients` names, nil when it is not a Kr/Kb matrix.
  public var ycbcrMatrix: YCbCrMatrix? { YCbCrMatrix(h273: matrixCoefficients) }

  /// The sample range `fullRange` names.
  public var ycbcrRange: YCbCrRange { fullRange ? .full : .limited }
}
