import Synchronization

/// A small Prometheus registry: counters, gauges and histograms with labels, rendered in the
/// text exposition format 0.0.4.
///
/// Hot paths never take a registry-wide lock: each metric family has its own lock for finding
/// a labelled child, counters and gauges are atomics, and each histogram child has its own
/// lock. Callers that update one label set often can keep the child and skip the lookup.
public final class MetricsRegistry: Sendable {
  /// `Content-Type` of `render()`'s text.
  public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

  private let families = Mutex<[any RenderableFamily]>([])
  private let collectHooks = Mutex<[@Sendable () -> Void]>([])

  public init() {}

  /// A counter family; `labels(...)` gives one counter per label set.
  public func counter(name: String, help: String, labelNames: [String]) -> MetricFamily<Counter> {
    register(MetricFamily(name: name, help: help, type: "counter", labelNames: labelNames) { Counter() })
  }

  /// A counter with no labels.
  public func counter(name: String, help: String) -> Counter {
    counter(name: name, help: help, labelNames: []).labels()
  }

  /// A gauge family; `labels(...)` gives one gauge per label set.
  public func gauge(name: String, help: String, labelNames: [String]) -> MetricFamily<Gauge> {
    register(MetricFamily(name: name, help: help, type: "gauge", labelNames: labelNames) { Gauge() })
  }

  /// A gauge with no labels.
  public func gauge(name: String, help: String) -> Gauge {
    gauge(name: name, help: help, labelNames: []).labels()
  }

  /// A histogram family with fixed, increasing upper bounds (`+Inf` is added).
  public func histogram(name: String, help: String, labelNames: [String], buckets: [Double])
    -> MetricFamily<Histogram>
  {
    let bounds = buckets.filter { $0 != .infinity }
    precondition(
      !bounds.isEmpty && zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "buckets must increase")
    precondition(!labelNames.contains("le"), "le is the bucket label")
    return register(
      MetricFamily(name: name, help: help, type: "histogram", labelNames: labelNames) {
        Histogram(upperBounds: bounds)
      })
  }

  /// Runs `hook` at the start of every `render()`, e.g. to set gauges read from elsewhere.
  public func onCollect(_ hook: @escaping @Sendable () -> Void) {
    collectHooks.withLock { $0.append(hook) }
  }

  /// Every metric in the text exposition format 0.0.4, families in registration order,
  /// children sorted by label values.
  public func render() -> String {
    for hook in collectHooks.withLock({ $0 }) { hook() }
    var out = ""
    out.reserveCapacity(4096)
    for family in families.withLock({ $0 }) { family.render(into: &out) }
    return out
  }

  private func register<Child>(_ family: MetricFamily<Child>) -> MetricFamily<Child> {
    precondition(Self.isValidName(family.name), "invalid metric name \(family.name)")
    precondition(family.labelNames.allSatisfy(Self.isValidLabelName), "invalid label name in \(family.name)")
    families.withLock { list in
      precondition(!list.contains { $0.name == family.name }, "metric \(family.name) registered twice")
      list.append(family)
    }
    return family
  }

  /// `[a-zA-Z_:][a-zA-Z0-9_:]*`
  static func isValidName(_ name: String) -> Bool {
    guard let first = name.utf8.first, !(0x30...0x39).contains(first) else { return false }
    return name.utf8.allSatisfy { $0.isNameCharacter || $0 == UInt8(ascii: ":") }
  }

  /// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved).
  static func isValidLabelName(_ name: String) -> Bool {
    guard let first = name.utf8.first, !(0x30...0x39).contains(first), !name.hasPrefix("__") else {
      return false
    }
    return name.utf8.allSatisfy { $0.isNameCharacter }
  }
}

extension UInt8 {
  fileprivate var isNameCharacter: Bool {
    switch self {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
      true
    default: false
    }
  }
}

/// A family as the registry renders it.
protocol RenderableFamily: Sendable {
  var name: String { get }
  func render(into out: inout String)
}

/// One value (or histogram) per label set, rendered under one family name.
public protocol MetricChild: AnyObject, Sendable {
  /// Appends the sample lines; `labels` is the rendered `k="v",…` list (may be empty).
  func render(name: String, labels: String, into out: inout String)
}

/// All children of one metric: one per distinct list of label values.
public final class MetricFamily<Child: MetricChild>: RenderableFamily, Sendable {
  /// Metric name, e.g. `attachd_http_requests_total`.
  public let name: String
  /// One-line description (`# HELP`).
  public let help: String
  /// `counter`, `gauge` or `histogram`.
  public let type: String
  /// Label names, in the order `labels(...)` takes values.
  public let labelNames: [String]
  /// Distinct label sets kept at most; further ones share one child labelled `_overflow`, so a
  /// client-chosen value can never grow memory without bound.
  public let maxChildren: Int

  private let make: @Sendable () -> Child
  private let children = Mutex<[[String]: Child]>([:])

  init(
    name: String, help: String, type: String, labelNames: [String], maxChildren: Int = 1000,
    make: @escaping @Sendable () -> Child
  ) {
    self.name = name
    self.help = help
    self.type = type
    self.labelNames = labelNames
    self.maxChildren = maxChildren
    self.make = make
  }

  /// The child for these label values (as many as `labelNames`), created on first use.
  public func labels(_ values: String...) -> Child { labels(values) }

  /// The child for these label values (as many as `labelNames`), created on first use.
  public func labels(_ values: [String]) -> Child {
    precondition(values.count == labelNames.count, "\(name) takes \(labelNames.count) label values")
    return children.withLock { table in
      if let child = table[values] { return child }
      let key = table.count < maxChildren ? values : Array(repeating: "_overflow", count: values.count)
      if let child = table[key] { return child }
      let child = make()
      table[key] = child
      return child
    }
  }

  func render(into out: inout String) {
    out += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(type)\n"
    let sorted = children.withLock { $0.map { ($0.key, $0.value) } }.sorted {
      $0.0.lexicographicallyPrecedes($1.0)
    }
    for (values, child) in sorted {
      var labels = ""
      for (index, (labelName, value)) in zip(labelNames, values).enumerated() {
        if index > 0 { labels += "," }
        labels += "\(labelName)=\"\(Self.escapeLabelValue(value))\""
      }
      child.render(name: name, labels: labels, into: &out)
    }
  }

  /// `\` → `\\`, line feed → `\n` (HELP text).
  static func escapeHelp(_ text: String) -> String {
    var out = ""
    for character in text.unicodeScalars {
      switch character {
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      default: out.unicodeScalars.append(character)
      }
    }
    return out
  }

  /// `\` → `\\`, `"` → `\"`, line feed → `\n` (label values).
  static func escapeLabelValue(_ text: String) -> String {
    var out = ""
    for character in text.unicodeScalars {
      switch character {
      case "\\": out += "\\\\"
      case "\"": out += "\\\""
      case "\n": out += "\\n"
      default: out.unicodeScalars.append(character)
      }
    }
    return out
  }
}

/// Formats a sample value as Prometheus reads it: integers without a fraction, `+Inf`, `NaN`.
func formatSampleValue(_ value: Double) -> String {
  if value.isNaN { return "NaN" }
  if value == .infinity { return "+Inf" }
  if value == -.infinity { return "-Inf" }
  if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
  return String(value)
}

/// `name{labels} value` or `name value`.
func appendSample(_ name: String, _ suffix: String, labels: String, value: String, to out: inout String) {
  out += name
  out += suffix
  if !labels.isEmpty {
    out += "{"
    out += labels
    out += "}"
  }
  out += " "
  out += value
  out += "\n"
}
