import Foundation
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
    weak var writer: BufferedUploadWriter?
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

  /// Runs `attempt` under the upload's lock once its in-process writer has been stopped (its
  /// bytes committed), again every poll interval while it returns nil (a holder in another
  /// process has been asked to let go), until the takeover wait is over (`.inProgress`).
  ///
  /// The stopped writer's `onPreempted` runs after the lock is released, also when `attempt` throws.
  func takingOver<Result>(
    _ id: String, configuration: UploadStoreConfiguration, _ attempt: (inout Holder) throws -> Result?
  ) throws -> Result {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: .milliseconds(Int64(configuration.takeoverTimeout * 1000)))
    while true {
      var callback: (@Sendable () -> Void)?
      let result: Result?
      do {
        result = try withLock(id) { holder in
          callback = holder.writer?.preempt(persist: true, holder: &holder)
          return try attempt(&holder)
        }
      } catch {
        callback?()
        throw error
      }
      callback?()
      if let result { return result }
      guard clock.now < deadline else {
        throw StorageError(.inProgress, "upload \(id) is held by another process past the takeover wait")
      }
      Thread.sleep(forTimeInterval: configuration.takeoverPollInterval)
    }
  }

  /// How many uploads have a slot now (tests check that nothing leaks).
  var count: Int { table.withLock { $0.count } }
}
