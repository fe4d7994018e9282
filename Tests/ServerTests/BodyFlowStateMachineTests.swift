import HTTP
import Testing

@testable import Server

/// Body backpressure, the minimum body rate and streamed responses in the connection state
/// machine, with a hand-driven clock and no sockets.
@Suite struct BodyFlowStateMachineTests {
  /// The defaults: 30 s body idle, 256 B/s over 60 s windows.
  static let timeouts = ConnectionStateMachineTests.timeouts
  static let rate = ConnectionStateMachine.MinimumRate(bytesPerSecond: 256, window: .seconds(60))

  func at(_ seconds: Double) -> Instant { Instant(nanoseconds: UInt64(seconds * 1e9)) }

  /// A machine reading a 100 MB body since t = 0.
  func reading(rate: ConnectionStateMachine.MinimumRate = rate) -> ConnectionStateMachine {
    var m = ConnectionStateMachine(timeouts: Self.timeouts, minimumRate: rate, now: at(0))
    let head = HTTPRequestHead(method: "POST", target: "/up", framing: .contentLength(100_000_000))
    _ = m.headDecided(head, readsBody: true, now: at(0))
    return m
  }

  @Test func aByteEvery29SecondsIsCutOffAtTheEndOfTheFirstRateWindow() {
    var m = reading()
    for second in stride(from: 29.0, through: 58, by: 29) {
      #expect(m.timedOut(now: at(second)) == .none)
      m.bodyReceived(1, now: at(second))
    }
    // The idle timeout alone (30 s) would never fire: each byte comes within it.
    #expect(m.deadline == at(60))
    #expect(m.timedOut(now: at(60)) == .abortBody(received: 2))
  }

  @Test func aSlowButSteadyBodyPassesWindowAfterWindow() {
    var m = reading()
    // 400 B/s, in 4 KB bursts every 10 s: above 256 B/s on average, silent 10 s at a time.
    for second in stride(from: 10.0, through: 300, by: 10) {
      #expect(m.timedOut(now: at(second)) == .none, "at \(second) s")
      m.bodyReceived(4000, now: at(second))
    }
    #expect(m.bodyBytesReceived == 120_000)
    #expect(m.inputMode == .parse)
  }

  @Test func aBurstThenNothingFailsTheNextWindow() {
    var m = reading()
    m.bodyReceived(1_000_000, now: at(1))
    // The first window is more than met; the idle timeout ends the second silence first.
    #expect(m.timedOut(now: at(31)) == .abortBody(received: 1_000_000))

    var trickle = reading()
    trickle.bodyReceived(1_000_000, now: at(1))
    trickle.bodyReceived(10, now: at(20))
    trickle.bodyReceived(10, now: at(40))
    #expect(trickle.timedOut(now: at(60)) == .none)
    trickle.bodyReceived(10, now: at(80))
    trickle.bodyReceived(10, now: at(100))
    // The second window (60…120 s) brought 20 bytes: a megabyte early buys no slack later.
    #expect(trickle.deadline == at(120))
    #expect(trickle.timedOut(now: at(120)) == .abortBody(received: 1_000_040))
  }

  @Test func aZeroRateLeavesOnlyTheIdleTimeout() {
    var m = reading(rate: .off)
    for second in stride(from: 29.0, through: 290, by: 29) {
      m.bodyReceived(1, now: at(second))
      #expect(m.timedOut(now: at(second)) == .none)
    }
    #expect(m.deadline == at(290 + 30))
  }

  @Test func pausedReadingStopsTheBodyClocksAndTheSocket() {
    var m = reading()
    m.bodyReceived(100, now: at(10))
    m.bodyPaused(now: at(20))
    #expect(m.inputMode == .paused)
    #expect(m.readingPaused)
    #expect(m.deadline == nil)
    // An hour paused: nothing times out.
    #expect(m.timedOut(now: at(3620)) == .none)
    do {
      let resumed = m.bodyResumed(now: at(3620))
      #expect(resumed)
    }
    #expect(m.inputMode == .parse)
    // 10 s of silence and 20 s of the first window were used before the pause.
    #expect(m.deadline == at(3620 + 20))
    #expect(m.timedOut(now: at(3639)) == .none)
    #expect(m.timedOut(now: at(3640)) == .abortBody(received: 100))
  }

  @Test func theRateWindowResumesWhereItStoppedAfterAPause() {
    var m = reading()
    m.bodyReceived(15_000, now: at(50))
    m.bodyPaused(now: at(50))
    do {
      let resumed = m.bodyResumed(now: at(500))
      #expect(resumed)
    }
    m.bodyReceived(1_000, now: at(505))
    // The window had 10 s left: it ends at 510 with 16 000 bytes ≥ 15 360, and the next begins.
    #expect(m.deadline == at(510))
    #expect(m.timedOut(now: at(510)) == .none)
    #expect(m.deadline == at(535))
  }

  @Test func resumingWhenNotPausedChangesNothing() {
    var m = reading()
    do {
      let resumed = m.bodyResumed(now: at(5))
      #expect(!resumed)
    }
    #expect(m.deadline == at(30))
    m.bodyPaused(now: at(5))
    m.bodyPaused(now: at(9))
    do {
      let resumed = m.bodyResumed(now: at(15))
      #expect(resumed)
    }
    // Paused from 5 s, the first pause: the second changed nothing.
    #expect(m.deadline == at(40))
  }

  @Test func aPausedBodyWhoseClientLeftIsAborted() {
    var m = reading()
    m.bodyReceived(70, now: at(1))
    m.bodyPaused(now: at(1))
    #expect(m.peerClosed() == .abortBody(received: 70))
    #expect(m.state == .closed)
  }

  @Test func drainingFinishesAPausedBody() {
    var m = reading()
    m.bodyPaused(now: at(1))
    #expect(m.drain() == .finishCurrent)
    do {
      let resumed = m.bodyResumed(now: at(2))
      #expect(resumed)
    }
    m.bodyEnded()
    #expect(m.responseQueued(now: at(2)) == true)
  }

  @Test func aStreamWaitingForItsProducerHasNoWriteTimeout() {
    var m = ConnectionStateMachine(timeouts: Self.timeouts, now: at(0))
    _ = m.headDecided(HTTPRequestHead(method: "GET", target: "/blob"), readsBody: false, now: at(0))
    #expect(m.responseQueued(now: at(0)) == false)
    #expect(m.deadline == at(20))
    m.waitingForProducer()
    #expect(m.state == .producing)
    #expect(m.deadline == nil)
    #expect(m.timedOut(now: at(600)) == .none)
    #expect(m.readingPaused)
    m.producerDelivered(now: at(600))
    #expect(m.deadline == at(620))
    m.writeProgressed(now: at(610))
    #expect(m.deadline == at(630))
    #expect(m.responseFlushed(now: at(611)) == .readNextRequest)
  }

  @Test func aResponseDelimitedByCloseClosesTheConnection() {
    var m = ConnectionStateMachine(timeouts: Self.timeouts, now: at(0))
    _ = m.headDecided(HTTPRequestHead(method: "GET", target: "/blob"), readsBody: false, now: at(0))
    #expect(m.responseQueued(now: at(0), closing: true) == true)
    #expect(m.responseFlushed(now: at(1)) == .close)
  }

  @Test(
    arguments: [
      (256, 60.0, UInt64(15_360)), (1, 0.5, UInt64(1)), (1000, 1.5, UInt64(1500)), (0, 60.0, nil),
    ] as [(UInt64, Double, UInt64?)])
  func theRateSetsTheBytesEachWindowMustBring(rate: UInt64, window: Double, bytes: UInt64?) {
    let minimum = ConnectionStateMachine.MinimumRate(
      bytesPerSecond: rate, window: .milliseconds(Int64(window * 1000)))
    #expect(minimum.bytesPerWindow == bytes)
  }
}
