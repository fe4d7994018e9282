import Synchronization

/// One lock per upload id in this process, held across that upload's writes, fsyncs and index
/// commits, and the writer that currently holds its lease.
///
/// The lock is what orders a writer's flush, a takeover, a completion and a cancel of one
/// upload; the index lease is what tells other processes. Lock order: a slot's `io` lock, then a
/// writer's state lock, then the index; the table lock is taken alone or last.
final class UploadSlots: Sendable {
  /// The coordination point of one upload.
  final class Slot: Sendable {
    let io = Mutex(Holder())
  }

  /// What the slot lock guards besides the I/O itself.
  struct Holder {
    /// The live writer, if any. Weak: a writer dropped without `close` must not stay alive here.
    weak var writer: FileUploadWriter?
  }

  private struct Entry {
    let slot: Slot
    var users: Int
  }

  private let table = Mutex<[String: Entry]>([:])

  /// The slot of `id`, kept in the table until a matching `release`.
  func retain(_ id: String) -> Slot {
    table.withLock { table in
      if var entry = table[id] {
        entry.users += 1
        table[id] = entry
        return entry.slot
      }
      let slot = Slot()
      table[id] = Entry(slot: slot, users: 1)
      return slot
    }
  }

  /// Gives back one `retain`; the slot leaves the table with its last user.
  func release(_ id: String) {
    table.withLock { table in
      guard var entry = table[id] else { return }
      entry.users -= 1
      table[id] = entry.users > 0 ? entry : nil
    }
  }

  /// Runs `body` holding the upload's lock.
  func withLock<Result>(_ id: String, _ body: (inout Holder) throws -> Result) throws -> Result {
    let slot = retain(id)
    defer { release(id) }
    return try slot.io.withLock { holder in try body(&holder) }
  }

  /// How many uploads have a slot now (tests check that nothing leaks).
  var count: Int { table.withLock { $0.count } }
}
