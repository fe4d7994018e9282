import Dispatch
import Foundation
import Server
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(1)))
struct WorkerPoolTests {
  @Test func workBeyondThreadsPlusQueueIsRefused() {
    let pool = WorkerPool(threads: 2, queueLength: 3)
    let gate = DispatchSemaphore(value: 0)
    let accepted = (0..<8).map { _ in pool.trySubmit { _ = gate.wait(timeout: .now() + 10) } }
    #expect(accepted == [true, true, true, true, true, false, false, false])
    #expect(pool.inFlight == 5)
    #expect(ServerLiveTests.waitFor { pool.queueDepth == 3 })
    for _ in 0..<5 { gate.signal() }
    pool.shutdown()
    #expect(pool.inFlight == 0)
  }

  /// A finished job's captures (an upload body, say) must go away as soon as it has run:
  /// a pool that kept its last few dozen closures once held ~65 request bodies, 800 MB at 48 MP.
  @Test func aFinishedJobReleasesWhatItCaptured() {
    final class Payload: Sendable {}
    let pool = WorkerPool(threads: 2, queueLength: 8)
    var watchers: [() -> Bool] = []
    for _ in 0..<6 {
      let payload = Payload()
      weak let watched = payload
      watchers.append { watched == nil }
      #expect(pool.trySubmit { withExtendedLifetime(payload) {} })
    }
    #expect(ServerLiveTests.waitFor { pool.inFlight == 0 })
    #expect(ServerLiveTests.waitFor { watchers.allSatisfy { $0() } })
    pool.shutdown()
  }

  @Test func everyAcceptedJobRunsOnceBeforeShutdownReturns() {
    let pool = WorkerPool(threads: 3, queueLength: 1000)
    let count = Atomic<Int>(0)
    var accepted = 0
    for _ in 0..<500 where pool.trySubmit({ count.add(1, ordering: .relaxed) }) { accepted += 1 }
    pool.shutdown()
    #expect(accepted == 500)
    #expect(count.load(ordering: .relaxed) == 500)
    #expect(!pool.trySubmit {})
  }
}
