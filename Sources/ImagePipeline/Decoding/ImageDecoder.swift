import ImageCodecs

/// The one seam between the pipeline and the code that turns bytes into samples.
///
/// A decoder is given the input and what the headers said (`DecodeRequest`) and returns either
/// Y′CbCr planes (with their subsampling, matrix, range and siting) or RGB(A) pixels, plus the
/// one colour description of what it returns (`DecodedImage`). It may shrink on load (JPEG's DCT
/// scaling) or resample as it decodes (a tile decoder feeding `PlanesResampler`), but never
/// below `request.target`. `DecodeStep.decoder(for:configuration:)` is the only place that
/// chooses one. Decoders that work in tiles or strips call `request.checkpoint.check()`
/// between them, so a cancelled or overdue request stops there.
protocol ImageDecoder: Sendable {
  /// The size `decode` will return, from the headers alone (for the memory reservation and to
  /// hold the decoder to what the headers promised).
  func plannedSize(_ request: DecodeRequest) -> (width: Int, height: Int)
  /// Whether a decoded `width` × `height` is what the headers promised (a lying header must
  /// not slip through); by default exactly `plannedSize`.
  func accepts(width: Int, height: Int, for request: DecodeRequest) -> Bool
  /// Decodes the image; codec failures come back as `PipelineError`s.
  func decode(_ request: DecodeRequest) throws(PipelineError) -> DecodedImage
  /// The most memory the decode and the steps after it will hold, from the headers (what the
  /// run reserves from the memory budget); by default `MemoryEstimate`'s.
  func estimatedBytes(_ request: DecodeRequest, output: (width: Int, height: Int)) -> Int
}

extension ImageDecoder {
  func accepts(width: Int, height: Int, for request: DecodeRequest) -> Bool {
    (width, height) == plannedSize(request)
  }

  func estimatedBytes(_ request: DecodeRequest, output: (width: Int, height: Int)) -> Int {
    MemoryEstimate.bytes(
      for: request.header, decodeSize: plannedSize(request), output: output,
      heifAppliesTransforms: !request.orientation.ignoreHEIFTransformations)
  }
}

/// What a decoder is given. Not `Sendable`: `input` is borrowed for the decode.
struct DecodeRequest {
  /// The upload, read in place (valid while the pipeline runs).
  var input: UnsafeRawBufferPointer
  /// What the headers said (format, stored size, container facts).
  var header: ImageHeader
  /// The colour the container declares (`ColourDescription.declared(by:)`).
  var declaredColour: ColourDescription
  /// The output size in stored orientation: decoding may stop shrinking here, not below.
  var target: (width: Int, height: Int)
  /// How the image will be made upright (libheif applies HEIF transforms itself unless told not to).
  var orientation: OrientationDecision
  var configuration: Pipeline.Configuration
  /// Where a decoder working in tiles or strips asks whether to go on.
  var checkpoint: Checkpoint
}

/// What a decoder returns.
struct DecodedImage: Sendable {
  /// Samples as they came out of the decoder.
  enum Content: Sendable {
    /// Y′CbCr planes (JPEG, HEVC): resized and oriented as planes, RGB only at output size.
    case planes(YCbCrPlanes)
    /// Interleaved gray, RGB or RGBA pixels.
    case pixels(PixelBuffer)
  }

  var content: Content
  /// The colour space of `content`, after anything the decoder applied itself (a CMYK
  /// profile): what the colour step converts from.
  var colour: ColourDescription
  /// What still makes `content` upright, when the decoder decided it rather than the
  /// orientation policy: the HEVC path applies a HEIF file's transforms itself, as a crop while
  /// decoding and this orientation afterwards. Nil: the policy's orientation stands.
  var orientation: Orientation? = nil
  /// The orientation the decoder has already applied: `content` is the planned size turned by
  /// it (the HEVC path writes its planes upright as it resamples them).
  var applied: Orientation = .up

  /// The decoded size (the luma's for planes).
  var size: (width: Int, height: Int) {
    switch content {
    case .planes(let planes): (planes.width, planes.height)
    case .pixels(let pixels): (pixels.width, pixels.height)
    }
  }
}

extension PipelineError {
  /// `body`'s codec errors as pipeline errors (the library's message in `detail` only).
  static func decoding<T>(_ body: () throws -> T) throws(PipelineError) -> T {
    do {
      return try body()
    } catch let error as PipelineError {
      throw error
    } catch {
      throw PipelineError(error, while: "decoding")
    }
  }
}
