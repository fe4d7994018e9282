import Dispatch
import Server
import Synchronization
import Testing

@Suite struct RequestCancellationTests {
  final class Count: Sendable {
    let value = Atomic<Int>(0)
    func bump() { value.add(1, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
  }

  @Test func callbacksRunOnceWhenCancelledAndAtOnceWhenRegisteredLate() {
    let token = RequestCancellation()
    let early = Count()
    token.onCancel { early.bump() }
    #expect(!token.isCancelled)
    #expect(early.current == 0)
    token.cancel()
    token.cancel()
    #expect(token.isCancelled)
    #expect(early.current == 1)
    let late = Count()
    token.onCancel { late.bump() }
    #expect(late.current == 1)
    #expect(early.current == 1)
  }

  @Test func aCallbackRegisteredWhileAnotherThreadCancelsRunsExactlyOnce() {
    for _ in 0..<200 {
      let token = RequestCancellation()
      let count = Count()
      let ready = DispatchSemaphore(value: 0)
      let done = DispatchSemaphore(value: 0)
      DispatchQueue.global().async {
        ready.signal()
        token.cancel()
        done.signal()
      }
      ready.wait()
      token.onCancel { count.bump() }
      done.wait()
      #expect(count.current == 1)
    }
  }
}
