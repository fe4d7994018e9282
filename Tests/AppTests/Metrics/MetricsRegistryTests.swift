import Dispatch
import Testing

@testable import App

@Suite struct MetricsRegistryTests {
  @Test func aSmallRegistryRendersExactlyInTheTextFormat() {
    let registry = MetricsRegistry()
    let requests = registry.counter(
      name: "app_requests_total", help: "Requests.", labelNames: ["route", "status"])
    let depth = registry.gauge(name: "app_queue_depth", help: "Queue depth.")
    let latency = registry.histogram(
      name: "app_seconds", help: "Latency\\in \"s\"\nsecond line.", labelNames: ["stage"],
      buckets: [0.1, 1, 2.5])
    requests.labels("/v1/a", "201").increment()
    requests.labels("/v1/a", "201").increment(by: 2)
    requests.labels("/healthz", "200").increment()
    depth.set(7)
    depth.decrement()
    latency.labels("decode").observe(0.05)
    latency.labels("decode").observe(0.1)
    latency.labels("decode").observe(2)
    latency.labels("decode").observe(30)
    let expected = """
      # HELP app_requests_total Requests.
      # TYPE app_requests_total counter
      app_requests_total{route="/healthz",status="200"} 1
      app_requests_total{route="/v1/a",status="201"} 3
      # HELP app_queue_depth Queue depth.
      # TYPE app_queue_depth gauge
      app_queue_depth 6
      # HELP app_seconds Latency\\\\in "s"\\nsecond line.
      # TYPE app_seconds histogram
      app_seconds_bucket{stage="decode",le="0.1"} 2
      app_seconds_bucket{stage="decode",le="1"} 2
      app_seconds_bucket{stage="decode",le="2.5"} 3
      app_seconds_bucket{stage="decode",le="+Inf"} 4
      app_seconds_sum{stage="decode"} 32.15
      app_seconds_count{stage="decode"} 4

      """
    #expect(registry.render() == expected)
  }

  @Test func labelValuesAreEscaped() {
    let registry = MetricsRegistry()
    registry.counter(name: "x_total", help: "X.", labelNames: ["v"]).labels("a\\b\"c\nd").increment()
    #expect(registry.render().contains(#"x_total{v="a\\b\"c\nd"} 1"#))
  }

  @Test func everyRenderedLineParsesBack() throws {
    let metrics = AttachdMetrics()
    metrics.recordRequest(
      route: "/v1/attachments", method: "POST", status: 201, requestBytes: 1000, responseBytes: 300)
    metrics.recordRequest(
      route: "/v1/attachments/{id}", method: "BREW", status: 405, requestBytes: 0, responseBytes: 90)
    metrics.recordStage("decode", seconds: 0.012)
    metrics.recordStage("encode", seconds: 0.2)
    metrics.recordInputFormat("heic")
    metrics.recordRejection(code: "unsupported_format")
    metrics.workerQueueDepth.set(3)
    metrics.storedObjects.set(10)
    metrics.storedBytes.set(123_456)
    metrics.uploadsInFlight.increment()
    metrics.memoryBudgetBytesInUse.set(1 << 20)
    metrics.sandboxDecodes.labels("ok").increment()
    metrics.sandboxForkSeconds.observe(0.0004)
    metrics.sandboxUp.set(1)
    metrics.dataVolumeFreeBytes.set(5 << 30)
    let samples = try PrometheusText.parse(metrics.render())
    // The twelve families of the service, and the decode sandbox's three.
    #expect(samples.types.count == 15)
    #expect(samples.value("attachd_data_volume_free_bytes", [:]) == Double(5 << 30))
    #expect(samples.value("attachd_sandbox_decodes_total", ["outcome": "ok"]) == 1)
    #expect(samples.value("attachd_sandbox_up", [:]) == 1)
    #expect(
      samples.value(
        "attachd_http_requests_total", ["route": "/v1/attachments", "method": "POST", "status": "201"]) == 1)
    #expect(
      samples.value(
        "attachd_http_requests_total", ["route": "/v1/attachments/{id}", "method": "other", "status": "405"])
        == 1)
    #expect(samples.value("attachd_http_request_bytes_total", [:]) == 1000)
    #expect(samples.value("attachd_http_response_bytes_total", [:]) == 390)
    #expect(samples.value("attachd_pipeline_stage_seconds_bucket", ["stage": "decode", "le": "0.01"]) == 0)
    #expect(samples.value("attachd_pipeline_stage_seconds_bucket", ["stage": "decode", "le": "0.025"]) == 1)
    #expect(samples.value("attachd_pipeline_stage_seconds_bucket", ["stage": "encode", "le": "+Inf"]) == 1)
    #expect(samples.value("attachd_pipeline_stage_seconds_count", ["stage": "encode"]) == 1)
    #expect(samples.value("attachd_pipeline_stage_seconds_sum", ["stage": "encode"]) == 0.2)
    #expect(samples.value("attachd_input_format_total", ["format": "heic"]) == 1)
    #expect(samples.value("attachd_rejections_total", ["code": "unsupported_format"]) == 1)
    #expect(samples.value("attachd_worker_queue_depth", [:]) == 3)
    #expect(samples.value("attachd_memory_budget_bytes_in_use", [:]) == 1_048_576)
    #expect(samples.value("attachd_stored_objects", [:]) == 10)
    #expect(samples.value("attachd_stored_bytes", [:]) == 123_456)
    #expect(samples.value("attachd_uploads_in_flight", [:]) == 1)
    #expect(samples.types["attachd_pipeline_stage_seconds"] == "histogram")
    #expect(samples.types["attachd_stored_bytes"] == "gauge")
    #expect(samples.types["attachd_rejections_total"] == "counter")
  }

  @Test func histogramBucketsAreCumulativeAndEndWithTheCount() throws {
    let registry = MetricsRegistry()
    let h = registry.histogram(name: "h", help: "H.", labelNames: [], buckets: AttachdMetrics.stageBuckets)
      .labels()
    for i in 0..<1000 { h.observe(Double(i) / 100) }
    let samples = try PrometheusText.parse(registry.render())
    let buckets = samples.lines.filter { $0.name == "h_bucket" }
    #expect(buckets.count == AttachdMetrics.stageBuckets.count + 1)
    #expect(zip(buckets, buckets.dropFirst()).allSatisfy { $0.value <= $1.value })
    #expect(buckets.last?.labels["le"] == "+Inf")
    #expect(buckets.last?.value == 1000)
    #expect(samples.value("h_count", [:]) == 1000)
    #expect(samples.value("h_bucket", ["le": "1"]) == 101)  // 0.00 … 1.00
  }

  @Test func collectHooksRunBeforeRendering() {
    let registry = MetricsRegistry()
    let gauge = registry.gauge(name: "g", help: "G.")
    registry.onCollect { gauge.set(42) }
    #expect(registry.render().contains("\ng 42\n"))
  }

  @Test func tooManyLabelSetsShareOneOverflowSeries() {
    let registry = MetricsRegistry()
    let family = registry.counter(name: "c_total", help: "C.", labelNames: ["v"])
    for i in 0..<(family.maxChildren + 500) { family.labels("v\(i)").increment() }
    let text = registry.render()
    #expect(text.split(separator: "\n").count == family.maxChildren + 1 + 2)
    #expect(text.contains(#"c_total{v="_overflow"} 500"#))
  }

  @Test func concurrentUpdatesAreAllCounted() throws {
    let metrics = AttachdMetrics()
    let threads = 8
    let perThread = 20_000
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
      let counter = metrics.httpRequests.labels("/v1/attachments", "POST", "201")
      for i in 0..<perThread {
        counter.increment()
        metrics.recordRequest(
          route: "/healthz", method: "GET", status: 200, requestBytes: 1, responseBytes: 2)
        metrics.uploadsInFlight.increment()
        metrics.uploadsInFlight.decrement()
        metrics.recordStage(thread % 2 == 0 ? "decode" : "encode", seconds: Double(i % 4) * 0.25)
      }
    }
    let samples = try PrometheusText.parse(metrics.render())
    let total = Double(threads * perThread)
    #expect(
      samples.value(
        "attachd_http_requests_total", ["route": "/v1/attachments", "method": "POST", "status": "201"])
        == total)
    #expect(
      samples.value("attachd_http_requests_total", ["route": "/healthz", "method": "GET", "status": "200"])
        == total)
    #expect(samples.value("attachd_http_request_bytes_total", [:]) == total)
    #expect(samples.value("attachd_http_response_bytes_total", [:]) == 2 * total)
    #expect(samples.value("attachd_uploads_in_flight", [:]) == 0)
    let half = total / 2
    #expect(samples.value("attachd_pipeline_stage_seconds_count", ["stage": "decode"]) == half)
    #expect(
      samples.value("attachd_pipeline_stage_seconds_sum", ["stage": "decode"]) == half / 4
        * (0 + 0.25 + 0.5 + 0.75))
  }

  @Test func invalidNamesAreRecognised() {
    #expect(MetricsRegistry.isValidName("attachd_stored_bytes"))
    #expect(MetricsRegistry.isValidName("a:b_c"))
    #expect(!MetricsRegistry.isValidName("1abc"))
    #expect(!MetricsRegistry.isValidName("a-b"))
    #expect(!MetricsRegistry.isValidName(""))
    #expect(MetricsRegistry.isValidLabelName("route"))
    #expect(!MetricsRegistry.isValidLabelName("__name"))
    #expect(!MetricsRegistry.isValidLabelName("a:b"))
  }
}
