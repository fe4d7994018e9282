import Foundation
import Synchronization

/// Node liveness, so that a node that died frees its uploads at once rather than after its
/// writer leases lapse (`uploads.leaseDuration`, a minute by default).
///
/// Each node holds, for as long as its process lives, a session-level advisory lock named after
/// its node name on a connection of its own. PostgreSQL releases such a lock when the session
/// ends — the process was killed, ran out of memory, lost its host — so another node asking
/// `pg_try_advisory_lock` for that name gets it exactly when the holder is gone (and gives it
/// back at once). A node that is alive but cut off or frozen keeps its session, its lock and so
/// its leases until they lapse: the lease stays the bound for those, and a takeover after a
/// lapse is fenced as before (the stale holder's next commit finds its token gone).
///
/// The session is checked every second and opened again (and the lock taken again) when it
/// broke; while it is down, other nodes may take this node's uploads over, which only makes its
/// requests answer as pre-empted.
extension PostgresIndex {
  /// The two keys of a node's advisory lock: attachd's namespace and 32 bits of the index's
  /// schema and the node's name.
  func livenessKeys(_ node: String) -> (Int32, Int32) {
    var hash: UInt32 = 2_166_136_261
    for byte in (livenessScope + "/" + node).utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
    return (0x6174_7464, Int32(bitPattern: hash))  // "attd"
  }

  /// Starts holding `node`'s liveness lock (once; later calls do nothing). Its running
  /// idempotency claims carry the name from then on.
  public func holdLiveness(node: String) {
    liveness.withLock { current in
      guard current == nil else { return }
      current = NodeLiveness(node: node, keys: livenessKeys(node), connect: connect)
    }
  }

  /// The node name `holdLiveness` was given, if it was.
  var nodeName: String? { liveness.withLock { $0?.node } }

  /// Whether the node named `node` holds its liveness lock now. True also when the database
  /// cannot say: a lease is then left to lapse, never broken on a guess.
  func isInstanceAlive(_ node: String) -> Bool {
    let (namespace, key) = livenessKeys(node)
    let taken = try? pool.withConnection { connection -> Bool in
      let got =
        try connection.execute("SELECT pg_try_advisory_lock(\(namespace), \(key))").first?.text(0) == "t"
      if got { _ = try connection.execute("SELECT pg_advisory_unlock(\(namespace), \(key))") }
      return got
    }
    return taken != true
  }
}

/// The session that holds this node's liveness lock, on a thread of its own.
final class NodeLiveness: Sendable {
  final class State: Sendable {
    let running = Atomic<Bool>(true)
    /// Whether the lock is held now (tests).
    let held = Atomic<Bool>(false)
  }

  let state = State()
  let node: String

  init(node: String, keys: (Int32, Int32), connect: @escaping @Sendable () throws -> PostgresConnection) {
    self.node = node
    let (namespace, key) = keys
    let thread = Thread { [state] in
      var session: PostgresConnection?
      while state.running.load(ordering: .relaxed) {
        do {
          if session == nil {
            let opened = try connect()
            // Not the blocking form: a leftover session of this node's previous process (its
            // TCP connection not yet seen dead) would hold the lock for a while.
            let got =
              try opened.execute("SELECT pg_try_advisory_lock(\(namespace), \(key))").first?.text(0) == "t"
            if got { session = opened }
          } else {
            _ = try session?.execute("SELECT 1")
          }
        } catch {
          session = nil
        }
        state.held.store(session != nil, ordering: .relaxed)
        Thread.sleep(forTimeInterval: 1)
      }
    }
    thread.name = "attachd-liveness"
    thread.start()
  }

  deinit { state.running.store(false, ordering: .relaxed) }
}
