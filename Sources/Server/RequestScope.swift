import Synchronization

/// The lifetime of one request's resources (`RequestContext.hold`): one hold for the request
/// itself, ended when its final response is queued or its connection closes, and one for each
/// job it handed to a pool while that job runs. The resources are released when the last hold
/// ends — exactly once, on whichever thread that is. `package`: the test client's in-process
/// mode keeps the same rule with this type.
package final class RequestScope: Sendable {
  private struct State {
    var resources: [any RequestResource]
    /// The request's own hold plus running jobs.
    var holds = 1
    /// The request's own hold has ended.
    var requestEnded = false
  }

  private let state: Mutex<State>

  package init(resources: [any RequestResource]) {
    state = Mutex(State(resources: resources))
  }

  /// A job starts: the resources stay until `leave`.
  package func enter() {
    state.withLock { $0.holds += 1 }
  }

  /// A job finished.
  package func leave() {
    release(state.withLock { Self.drop(&$0) })
  }

  /// The request is over (its final response queued, or its connection closed); later calls
  /// do nothing.
  package func endRequest() {
    let released = state.withLock { state -> [any RequestResource] in
      guard !state.requestEnded else { return [] }
      state.requestEnded = true
      return Self.drop(&state)
    }
    release(released)
  }

  private static func drop(_ state: inout State) -> [any RequestResource] {
    state.holds -= 1
    guard state.holds == 0 else { return [] }
    defer { state.resources = [] }
    return state.resources
  }

  private func release(_ resources: [any RequestResource]) {
    for resource in resources { resource.release() }
  }
}
