import Synchronization

/// A monotonically increasing count (requests, bytes), one atomic add per update.
public final class Counter: MetricChild {
  private let value = Atomic<UInt64>(0)

  init() {}

  /// Adds `amount` (default 1).
  public func increment(by amount: UInt64 = 1) {
    value.wrappingAdd(amount, ordering: .relaxed)
  }

  /// The current count.
  public var count: UInt64 { value.load(ordering: .relaxed) }

  public func render(name: String, labels: String, into out: inout String) {
    appendSample(name, "", labels: labels, value: String(count), to: &out)
  }
}

/// A value that goes up and down (queue depth, bytes in use), one atomic per update.
public final class Gauge: MetricChild {
  private let value = Atomic<Int64>(0)

  init() {}

  /// Sets the value.
  public func set(_ newValue: Int64) { value.store(newValue, ordering: .relaxed) }

  /// Sets the value from an `Int`.
  public func set(_ newValue: Int) { set(Int64(newValue)) }

  /// Adds `amount` (which may be negative).
  public func add(_ amount: Int64) { value.wrappingAdd(amount, ordering: .relaxed) }

  /// Adds one.
  public func increment() { add(1) }

  /// Subtracts one.
  public func decrement() { add(-1) }

  /// The current value.
  public var current: Int64 { value.load(ordering: .relaxed) }

  public func render(name: String, labels: String, into out: inout String) {
    appendSample(name, "", labels: labels, value: String(current), to: &out)
  }
}

/// Observations counted into fixed buckets, with their sum and count.
public final class Histogram: MetricChild {
  struct State {
    var counts: [UInt64]  // per bucket, not cumulative; last = above every bound
    var sum: Double = 0
    var count: UInt64 = 0
  }

  /// Upper bounds of the buckets, increasing, without `+Inf`.
  public let upperBounds: [Double]
  private let state: Mutex<State>

  init(upperBounds: [Double]) {
    self.upperBounds = upperBounds
    self.state = Mutex(State(counts: Array(repeating: 0, count: upperBounds.count + 1)))
  }

  /// Records one observation (e.g. seconds); the bucket is found before taking the lock.
  public func observe(_ value: Double) {
    var index = upperBounds.count
    for (i, bound) in upperBounds.enumerated() where value <= bound {
      index = i
      break
    }
    state.withLock { state in
      state.counts[index] += 1
      state.sum += value
      state.count += 1
    }
  }

  /// Observations so far.
  public var count: UInt64 { state.withLock { $0.count } }

  /// Sum of the observations so far.
  public var sum: Double { state.withLock { $0.sum } }

  public func render(name: String, labels: String, into out: inout String) {
    let snapshot = state.withLock { $0 }
    let prefix = labels.isEmpty ? "" : labels + ","
    var cumulative: UInt64 = 0
    for (bound, count) in zip(upperBounds, snapshot.counts) {
      cumulative += count
      appendSample(
        name, "_bucket", labels: prefix + "le=\"\(formatSampleValue(bound))\"", value: String(cumulative),
        to: &out)
    }
    appendSample(name, "_bucket", labels: prefix + "le=\"+Inf\"", value: String(snapshot.count), to: &out)
    appendSample(name, "_sum", labels: labels, value: formatSampleValue(snapshot.sum), to: &out)
    appendSample(name, "_count", labels: labels, value: String(snapshot.count), to: &out)
  }
}
