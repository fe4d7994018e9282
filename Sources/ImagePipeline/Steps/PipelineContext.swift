import ImageCodecs

/// The state one input carries through the ordered steps of `Pipeline`.
struct PipelineContext {
  /// The upload, read in place: valid for the run of the pipeline (a spooled body's mapping is
  /// never copied; an array's storage is lent by `Pipeline.process`).
  let input: UnsafeRawBufferPointer
  let configuration: Pipeline.Configuration
  /// Where the run stops early (cancelled, past its deadline).
  let checkpoint: Checkpoint
  var format: SniffedFormat = .unknown
  var header: ImageHeader?
  /// What the encoder needs to know of the source (from the header, or from a video frame).
  var source = SourceShape()
  var orientation = OrientationDecision(
    apply: .up, reported: .up, source: .none, ignoreHEIFTransformations: false)
  /// Upright size of the input, and the output size (display size fitted into `maxEdge`).
  var displaySize = (width: 0, height: 0)
  var outputSize = (width: 0, height: 0)
  /// The colour the file declares (header step) and its description for the record.
  var declaredColour = ColourDescription.untagged
  var colourProfileDescription: String?
  /// The colour of the decoded samples, as their decoder reported it: what the colour step
  /// converts to sRGB from.
  var colour = ColourDescription.untagged
  var reservation: MemoryBudget.Reservation?
  var pixels: PixelBuffer?
  /// Y′CbCr planes, from decoding until `merge-planes` turns them into `pixels`.
  var planes: YCbCrPlanes?
  /// Set once the output exists; later pixel steps then have nothing to do.
  var output: [UInt8]?
  var losslessTransform = false
  /// Model profiles to make renditions for in this run, and the renditions made.
  var profiles: [ModelProfile] = []
  var renditions: [ProfileRendition] = []

  /// Keeps the bytes of a context made from an array alive; nil when the caller lends them.
  private var storage: InputStorage?

  init(input: UnsafeRawBufferPointer, configuration: Pipeline.Configuration, checkpoint: Checkpoint = .never)
  {
    self.input = input
    self.storage = nil
    self.configuration = configuration
    self.checkpoint = checkpoint
  }

  /// A context over a copy of `input` that it keeps (a caller holding an array, such as a
  /// test running steps one by one, has no loan to give that outlives the context).
  init(input: [UInt8], configuration: Pipeline.Configuration, checkpoint: Checkpoint = .never) {
    let storage = InputStorage(input)
    self.init(input: storage.bytes, configuration: configuration, checkpoint: checkpoint)
    self.storage = storage
  }

  /// The header, which every step after `header` may rely on.
  func requireHeader() throws(PipelineError) -> ImageHeader {
    guard let header else { throw .internal("step order: no header yet") }
    return header
  }

  func requirePixels() throws(PipelineError) -> PixelBuffer {
    guard let pixels else { throw .internal("step order: no pixels yet") }
    return pixels
  }

  /// What the decoder is given (after the header step).
  func decodeRequest() throws(PipelineError) -> DecodeRequest {
    DecodeRequest(
      input: input, header: try requireHeader(), declaredColour: declaredColour, target: storedOutputSize,
      orientation: orientation, configuration: configuration, checkpoint: checkpoint)
  }

  /// The output size in stored orientation: what decoding and resizing aim for before orienting.
  var storedOutputSize: (width: Int, height: Int) {
    orientation.apply.swapsDimensions ? (outputSize.height, outputSize.width) : outputSize
  }
}

/// A copy of an input that lives as long as the contexts that read it.
final class InputStorage {
  private let allocation: UnsafeMutableRawBufferPointer
  /// The copy.
  let bytes: UnsafeRawBufferPointer

  init(_ input: [UInt8]) {
    let allocation = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, input.count), alignment: 16)
    input.withUnsafeBytes { allocation.copyMemory(from: $0) }
    self.allocation = allocation
    bytes = UnsafeRawBufferPointer(rebasing: allocation[0..<input.count])
  }

  deinit { allocation.deallocate() }
}
