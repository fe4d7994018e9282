/// Re-parses the output: only the JFIF structure may remain, or the pipeline fails.
enum VerifyStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    guard let output = c.output else { throw .internal("no output to verify") }
    do {
      try JPEGOutputVerifier.verify(output)
    } catch {
      throw .internal("the output JPEG failed verification", detail: "\(error)")
    }
  }
}
