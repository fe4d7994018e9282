import Glibc
import SystemCalls
import Testing

@Suite struct SystemCallTests {
  /// A fake call that fails with each of `errors` in turn (-1 and errno), then returns `result`.
  final class Fake {
    var errors: [Int32]
    var calls = 0
    let result: Int

    init(failing errors: [Int32], then result: Int = 7) {
      self.errors = errors
      self.result = result
    }

    func call() -> Int {
      calls += 1
      guard !errors.isEmpty else { return result }
      Glibc.errno = errors.removeFirst()
      return -1
    }
  }

  @Test func anInterruptedCallIsMadeAgain() throws {
    let fake = Fake(failing: [EINTR, EINTR])
    #expect(try SystemCall.blocking("fake") { fake.call() } == 7)
    #expect(fake.calls == 3)
  }

  @Test func wouldBlockIsAResultOfANonBlockingCallAndAnErrorOfABlockingOne() throws {
    let nonBlocking = Fake(failing: [EINTR, EAGAIN])
    guard case .wouldBlock = try SystemCall.nonBlocking("fake", { nonBlocking.call() }) else {
      Issue.record("EAGAIN is not .wouldBlock")
      return
    }
    #expect(nonBlocking.calls == 2)
    let blocking = Fake(failing: [EWOULDBLOCK])
    let error = #expect(throws: SystemError.self) { try SystemCall.blocking("fake") { blocking.call() } }
    #expect(error?.errno == EAGAIN && error?.call == "fake")
  }

  @Test func aFailureNamesTheCallAndItsErrno() {
    let error = #expect(throws: SystemError.self) {
      try SystemCall.blocking("open") { Glibc.open("/nonexistent/attachd", O_RDONLY) }
    }
    #expect(error?.call == "open" && error?.errno == ENOENT)
    #expect(error?.description == "open failed: No such file or directory (errno \(ENOENT))")
  }

  @Test func anInterruptedWaitCountsAsNothingReady() throws {
    let fake = Fake(failing: [EINTR])
    #expect(try SystemCall.wait("poll") { fake.call() } == 0)
    #expect(fake.calls == 1)
    let broken = Fake(failing: [EINVAL])
    #expect(throws: SystemError.self) { try SystemCall.wait("poll") { broken.call() } }
  }

  @Test func closeReportsABadDescriptor() throws {
    var fds: [Int32] = [-1, -1]
    #expect(fds.withUnsafeMutableBufferPointer { pipe($0.baseAddress) } == 0)
    try SystemCall.close(fds[0])
    try SystemCall.close(fds[1])
    let error = #expect(throws: SystemError.self) { try SystemCall.close(fds[1]) }
    #expect(error?.call == "close" && error?.errno == EBADF)
  }
}
