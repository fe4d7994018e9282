/// Reserves the decode's estimated peak memory from the process-wide budget before decoding.
enum ReserveMemoryStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let header = try c.requireHeader()
    let estimate = MemoryEstimate.bytes(
      for: header, decodeSize: DecodeStep.decodeSize(c), output: c.outputSize,
      heifAppliesTransforms: !c.orientation.ignoreHEIFTransformations)
    c.reservation = try c.configuration.memoryBudget.reserve(estimate)
  }
}
