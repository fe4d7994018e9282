/// Reserves the decode's estimated peak memory from the process-wide budget before decoding.
enum ReserveMemoryStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let request = try c.decodeRequest()
    let decoder = DecodeStep.decoder(for: request.header, configuration: c.configuration)
    let estimate = decoder.estimatedBytes(request, output: c.outputSize)
    c.reservation = try c.configuration.memoryBudget.reserve(estimate)
  }
}
