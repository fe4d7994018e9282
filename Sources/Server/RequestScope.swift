import Synchronization

/// The lifetime of one request's resources (`RequestContext.hold`). They are released exactly
/// once, on whichever thread gets there:
/// - when the request's final response is queued — before the client can read it and send its
///   next request, even if the work that sent it is still returning;
/// - or, when no response ever is (the client left first), once the connection is done with the
///   request and no work it handed to a pool (`offload`, `execute`) still runs.
/// `package`: the test client's in-process mode keeps the same rule with this type.
package final class RequestScope: Sendable {
  private struct State {
    var resources: [any RequestResource]
    /// Jobs of the request running on a pool.
    var jobs = 0
    /// The connection is done with the request (answered, or gone).
    var ended = false
    var released = false

    /// The resources, once, when nothing holds them any more.
    mutating func releaseIf(_ condition: Bool) -> [any RequestResource] {
      guard condition, !released else { return [] }
      released = true
      defer { resources = [] }
      return resources
    }
  }

  private let state: Mutex<State>

  package init(resources: [any RequestResource]) {
    state = Mutex(State(resources: resources))
  }

  /// A job starts.
  package func enter() {
    state.withLock { $0.jobs += 1 }
  }

  /// A job finished.
  package func leave() {
    release(
      state.withLock { state in
        state.jobs -= 1
        return state.releaseIf(state.ended && state.jobs == 0)
      })
  }

  /// The request's final response is being queued: its resources go back now.
  package func answered() {
    release(
      state.withLock { state in
        state.ended = true
        return state.releaseIf(true)
      })
  }

  /// The connection is done with the request (it may have been answered, or the client left).
  package func ended() {
    release(
      state.withLock { state in
        state.ended = true
        return state.releaseIf(state.jobs == 0)
      })
  }

  private func release(_ resources: [any RequestResource]) {
    for resource in resources { resource.release() }
  }
}
