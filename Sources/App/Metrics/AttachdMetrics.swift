/// Every metric attachd exports at `GET /metrics`, registered once at start-up.
///
/// No metric carries a tenant, key, id or file name: `/metrics` tells nothing about who
/// uploaded what. Label values come from closed sets (route templates, normalised methods,
/// status codes, format names, problem codes) so the number of series stays small.
public final class AttachdMetrics: Sendable {
  /// Upper bounds, in seconds, of the pipeline stage histogram (1 ms … 10 s).
  public static let stageBuckets: [Double] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
  ]
  /// Methods kept as they are; any other becomes `other`.
  public static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

  /// The registry `render()` reads.
  public let registry: MetricsRegistry

  /// `attachd_http_requests_total{route,method,status}`.
  public let httpRequests: MetricFamily<Counter>
  /// `attachd_http_request_bytes_total`: request body bytes received.
  public let httpRequestBytes: Counter
  /// `attachd_http_response_bytes_total`: response bytes sent (head and body).
  public let httpResponseBytes: Counter
  /// `attachd_pipeline_stage_seconds{stage}`.
  public let pipelineStageSeconds: MetricFamily<Histogram>
  /// `attachd_input_format_total{format}`: uploads by sniffed format.
  public let inputFormats: MetricFamily<Counter>
  /// `attachd_rejections_total{code}`: refused requests by problem code.
  public let rejections: MetricFamily<Counter>
  /// `attachd_worker_queue_depth`: jobs waiting for a worker.
  public let workerQueueDepth: Gauge
  /// `attachd_memory_budget_bytes_in_use`: bytes reserved by running decodes.
  public let memoryBudgetBytesInUse: Gauge
  /// `attachd_stored_objects`: attachments in storage.
  public let storedObjects: Gauge
  /// `attachd_stored_bytes`: bytes of stored blobs.
  public let storedBytes: Gauge
  /// `attachd_uploads_in_flight`: uploads being received or processed.
  public let uploadsInFlight: Gauge
  /// `attachd_sandbox_decodes_total{outcome}`: sandboxed decodes by how their child ended
  /// (`ok`, `refused`, `crashed`, `violation`, `killed`, `memory_limit`, `cpu_limit`, `stopped`).
  public let sandboxDecodes: MetricFamily<Counter>
  /// `attachd_sandbox_fork_seconds`: from the helper receiving a decode to its child running.
  public let sandboxForkSeconds: Histogram
  /// `attachd_sandbox_up`: 1 while a sandbox helper is in service.
  public let sandboxUp: Gauge
  /// `attachd_data_volume_free_bytes`: bytes still free on the data directory's volume.
  public let dataVolumeFreeBytes: Gauge

  /// Upper bounds, in seconds, of the sandbox fork histogram (50 µs … 100 ms).
  public static let forkBuckets: [Double] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1,
  ]

  /// Registers the attachd metric set in `registry` (a fresh one by default).
  public init(registry: MetricsRegistry = MetricsRegistry()) {
    self.registry = registry
    httpRequests = registry.counter(
      name: "attachd_http_requests_total",
      help: "HTTP requests answered, by route template, method and status.",
      labelNames: ["route", "method", "status"])
    httpRequestBytes = registry.counter(
      name: "attachd_http_request_bytes_total", help: "Request body bytes received.")
    httpResponseBytes = registry.counter(
      name: "attachd_http_response_bytes_total", help: "Response bytes sent.")
    pipelineStageSeconds = registry.histogram(
      name: "attachd_pipeline_stage_seconds", help: "Time spent in each image pipeline stage.",
      labelNames: ["stage"], buckets: Self.stageBuckets)
    inputFormats = registry.counter(
      name: "attachd_input_format_total", help: "Uploaded images by detected input format.",
      labelNames: ["format"])
    rejections = registry.counter(
      name: "attachd_rejections_total", help: "Requests refused, by problem code.", labelNames: ["code"])
    workerQueueDepth = registry.gauge(
      name: "attachd_worker_queue_depth", help: "Image jobs waiting for a worker thread.")
    memoryBudgetBytesInUse = registry.gauge(
      name: "attachd_memory_budget_bytes_in_use", help: "Bytes of the decode memory budget in use.")
    storedObjects = registry.gauge(name: "attachd_stored_objects", help: "Attachments in storage.")
    storedBytes = registry.gauge(name: "attachd_stored_bytes", help: "Bytes of stored attachment blobs.")
    uploadsInFlight = registry.gauge(
      name: "attachd_uploads_in_flight", help: "Uploads being received or processed.")
    sandboxDecodes = registry.counter(
      name: "attachd_sandbox_decodes_total", help: "Sandboxed decodes, by how their child ended.",
      labelNames: ["outcome"])
    sandboxForkSeconds = registry.histogram(
      name: "attachd_sandbox_fork_seconds",
      help: "From the sandbox helper receiving a decode to its child running.",
      labelNames: [], buckets: Self.forkBuckets
    ).labels()
    sandboxUp = registry.gauge(
      name: "attachd_sandbox_up", help: "1 while a decode sandbox helper is in service.")
    dataVolumeFreeBytes = registry.gauge(
      name: "attachd_data_volume_free_bytes", help: "Bytes still free on the data directory's volume.")
  }

  /// Counts one answered request and its bytes. `route` must be a route template
  /// (`/v1/attachments/{id}`), never the raw path.
  public func recordRequest(route: String, method: String, status: Int, requestBytes: Int, responseBytes: Int)
  {
    let method = Self.knownMethods.contains(method) ? method : "other"
    httpRequests.labels(route, method, String(status)).increment()
    if requestBytes > 0 { httpRequestBytes.increment(by: UInt64(requestBytes)) }
    if responseBytes > 0 { httpResponseBytes.increment(by: UInt64(responseBytes)) }
  }

  /// Records how long one pipeline stage took.
  public func recordStage(_ stage: String, seconds: Double) {
    pipelineStageSeconds.labels(stage).observe(seconds)
  }

  /// Counts one refused request by its problem code (e.g. `unsupported_format`).
  public func recordRejection(code: String) {
    rejections.labels(code).increment()
  }

  /// Counts one upload by its sniffed format (e.g. `heic`).
  public func recordInputFormat(_ format: String) {
    inputFormats.labels(format).increment()
  }

  /// The exposition text for `GET /metrics` (`MetricsRegistry.contentType`).
  public func render() -> String { registry.render() }
}
