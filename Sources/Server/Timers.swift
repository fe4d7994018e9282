import Glibc

/// A point on the monotonic clock, in nanoseconds. The state machine never reads the clock: the
/// caller passes `now` in, so tests drive time by hand.
struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
  var nanoseconds: UInt64

  init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

  /// The monotonic clock (CLOCK_MONOTONIC).
  static func now() -> Instant {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Instant(nanoseconds: UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
  }

  static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

  static func + (lhs: Instant, rhs: Duration) -> Instant {
    Instant(nanoseconds: lhs.nanoseconds &+ rhs.nanoseconds)
  }

  /// Time from `earlier` to self (zero when `earlier` is later).
  func since(_ earlier: Instant) -> Duration {
    .nanoseconds(Int64(nanoseconds > earlier.nanoseconds ? nanoseconds - earlier.nanoseconds : 0))
  }

  var description: String { "\(Double(nanoseconds) / 1e9)s" }
}

extension Duration {
  /// Whole nanoseconds (negative durations count as zero).
  var nanoseconds: UInt64 {
    let (seconds, attoseconds) = components
    if seconds < 0 { return 0 }
    return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
  }
}

/// A binary min-heap of deadlines, one per event loop. Entries are never removed early: a
/// connection whose deadline moved later simply re-arms when its stale entry pops, so the
/// common case (activity pushes a timeout back) costs nothing.
struct TimerHeap<Element> {
  private var storage: [(deadline: Instant, element: Element)] = []

  var isEmpty: Bool { storage.isEmpty }
  var count: Int { storage.count }
  /// The earliest deadline, if any.
  var nextDeadline: Instant? { storage.first?.deadline }

  mutating func push(_ deadline: Instant, _ element: Element) {
    storage.append((deadline, element))
    var child = storage.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      if storage[parent].deadline <= storage[child].deadline { break }
      storage.swapAt(parent, child)
      child = parent
    }
  }

  /// Removes and returns the earliest entry if it is due at `now`.
  mutating func popDue(now: Instant) -> (deadline: Instant, element: Element)? {
    guard let first = storage.first, first.deadline <= now else { return nil }
    let last = storage.removeLast()
    if !storage.isEmpty {
      storage[0] = last
      var parent = 0
      while true {
        let left = 2 * parent + 1
        let right = left + 1
        var smallest = parent
        if left < storage.count && storage[left].deadline < storage[smallest].deadline { smallest = left }
        if right < storage.count && storage[right].deadline < storage[smallest].deadline { smallest = right }
        if smallest == parent { break }
        storage.swapAt(parent, smallest)
        parent = smallest
      }
    }
    return first
  }

  mutating func removeAll() { storage.removeAll() }
}
