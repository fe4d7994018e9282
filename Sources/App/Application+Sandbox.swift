import PipelineSandbox
import Sandbox

extension Application {
  /// Counts a sandboxed decode by how its child ended, and logs the ends that are the input's
  /// doing: a crash with its signal, a filter violation as a security event — each with the
  /// input's SHA-256, never its bytes (nor what the child wrote, which it controlled).
  static func record(_ report: DecodeReport, metrics: AttachdMetrics, eventLog: EventLog) {
    let outcome = report.outputRejected ? "violation" : report.refused ? "refused" : report.outcome.name
    metrics.sandboxDecodes.labels(outcome).increment()
    metrics.sandboxForkSeconds.observe(Double(report.exit.forkNanoseconds) / 1e9)
    var fields = [("job", report.job), ("outcome", outcome)]
    if let signal = report.exit.signal { fields.append(("signal", String(signal))) }
    if let hash = report.inputSHA256 { fields.append(("input_sha256", hash)) }
    switch report.outcome {
    case .violation: eventLog.warning("security: a decoder broke its sandbox's rules", fields: fields)
    case _ where report.outputRejected:
      eventLog.warning("security: a decoder's output was refused", fields: fields)
    case .crashed: eventLog.warning("a decoder crashed", fields: fields)
    case .killed, .memoryLimit, .cpuLimit: eventLog.info("a decoder was stopped", fields: fields)
    case .finished, .stopped: break
    }
  }
}
