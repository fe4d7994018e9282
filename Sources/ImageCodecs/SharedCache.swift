import Synchronization

/// A small process-wide cache of values that are costly to build and read by many threads
/// (colour transforms, resampling tables). Bounded crudely: when full it starts over, since
/// real traffic needs only a handful of entries (a few colour profiles, a few photo sizes).
public final class SharedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
  private let limit: Int
  private let entries = Mutex<[Key: Value]>([:])

  /// A cache that holds at most `limit` entries.
  public init(limit: Int) {
    precondition(limit > 0, "SharedCache: limit must be positive")
    self.limit = limit
  }

  /// The value stored for `key`, if any.
  public func value(for key: Key) -> Value? {
    entries.withLock { $0[key] }
  }

  /// Stores `value` for `key`, emptying the cache first when it is full.
  public func store(_ value: Value, for key: Key) {
    entries.withLock { entries in
      if entries.count >= limit { entries.removeAll() }
      entries[key] = value
    }
  }
}
