/// What the server learns of an input before anything decodes it: its format and size, that it
/// passed every limit, and the memory its decode will take. Made by Swift code alone (our own
/// container readers), so it is safe to run on untrusted bytes outside the decode sandbox.
public struct PipelineAdmission: Sendable, Equatable {
  /// `jpeg`, `png`, `gif`, `webp`, `heif` or `avif`.
  public var format: String
  /// Stored size.
  public var width: Int
  public var height: Int
  /// The decode's estimated peak memory, bytes (what the memory budget is asked for).
  public var estimatedBytes: Int
}

extension Pipeline {
  /// Sniffs `input`, reads and checks its headers against the limits, and estimates its
  /// decode's memory: the steps before any pixel is decoded, without the ones that hand the
  /// file's bytes to a C library (colour profiles). Throws the same refusals `process` would.
  public func admit(_ input: UnsafeRawBufferPointer) throws(PipelineError) -> PipelineAdmission {
    let checkpoint = Checkpoint(cancellation: nil, deadline: ContinuousClock.now + configuration.deadline)
    var context = PipelineContext(input: input, configuration: configuration, checkpoint: checkpoint)
    try SniffStep.run(&context)
    try HeaderStep.check(&context)
    let request = try context.decodeRequest()
    let decoder = DecodeStep.decoder(for: request.header, configuration: configuration)
    return PipelineAdmission(
      format: request.header.format.rawValue, width: request.header.width, height: request.header.height,
      estimatedBytes: decoder.estimatedBytes(request, output: context.outputSize))
  }
}
