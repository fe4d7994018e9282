import HTTP
import Testing

@testable import Server

/// The connection logic with a hand-driven clock and no sockets.
@Suite struct ConnectionStateMachineTests {
  static let timeouts = ConnectionStateMachine.Timeouts(
    header: .seconds(10), bodyIdle: .seconds(30), keepAlive: .seconds(5), write: .seconds(20),
    linger: .seconds(2))

  func at(_ seconds: Double) -> Instant { Instant(nanoseconds: UInt64(seconds * 1e9)) }

  func makeMachine() -> ConnectionStateMachine { ConnectionStateMachine(timeouts: Self.timeouts, now: at(0)) }

  func head(
    framing: HTTPBodyFraming = .none, keepAlive: Bool = true, expects: Bool = false,
    version: HTTPVersion = .http1_1
  ) -> HTTPRequestHead {
    HTTPRequestHead(
      method: "POST", target: "/up", version: version, framing: framing, keepAlive: keepAlive,
      expectsContinue: expects)
  }

  @Test func aKeptAliveRequestGoesBackToIdleAfterItsResponseIsWritten() {
    var m = makeMachine()
    m.headBytesArrived(now: at(1))
    #expect(m.headDecided(head(), readsBody: false, now: at(1)) == .respond)
    #expect(m.readingPaused)
    #expect(m.responseQueued(now: at(1)) == false)
    #expect(m.responseFlushed(now: at(2)) == .readNextRequest)
    #expect(m.state == .idle(since: at(2)))
    #expect(m.deadline == at(7))
  }

  @Test func continueIsSentOnlyWhenTheHandlerReadsAnAnnouncedBody() {
    var reading = makeMachine()
    let expecting = head(framing: .contentLength(10), expects: true)
    #expect(reading.headDecided(expecting, readsBody: true, now: at(0)) == .readBody(sendContinue: true))

    var refusing = makeMachine()
    #expect(refusing.headDecided(expecting, readsBody: false, now: at(0)) == .respond)

    var http10 = makeMachine()
    let old = head(framing: .contentLength(10), expects: true, version: .http1_0)
    #expect(http10.headDecided(old, readsBody: true, now: at(0)) == .readBody(sendContinue: false))

    var empty = makeMachine()
    let noBody = head(framing: .contentLength(0), expects: true)
    #expect(empty.headDecided(noBody, readsBody: true, now: at(0)) == .readBody(sendContinue: false))
  }

  @Test(arguments: [HTTPBodyFraming.contentLength(1), .chunked])
  func answeringWithoutReadingAnAnnouncedBodyClosesTheConnection(framing: HTTPBodyFraming) {
    var m = makeMachine()
    _ = m.headDecided(head(framing: framing), readsBody: false, now: at(0))
    #expect(m.responseQueued(now: at(0)) == true)
    #expect(m.responseFlushed(now: at(0)) == .lingerThenClose)
  }

  @Test func answeringABodylessRequestKeepsTheConnection() {
    var m = makeMachine()
    _ = m.headDecided(head(framing: .contentLength(0)), readsBody: false, now: at(0))
    #expect(m.responseQueued(now: at(0)) == false)
  }

  @Test func anAnswerThatLeftTheBodyUnreadLingersBeforeClosing() {
    var m = makeMachine()
    _ = m.headDecided(head(framing: .contentLength(5000)), readsBody: false, now: at(0))
    _ = m.responseQueued(now: at(0))
    #expect(m.responseFlushed(now: at(1)) == .lingerThenClose)
    #expect(m.inputMode == .discard)
    #expect(m.deadline == at(3))
    #expect(m.timedOut(now: at(3)) == .close)
    #expect(m.state == .closed)
  }

  @Test func aLingeringConnectionClosesWhenTheClientDoes() {
    var m = makeMachine()
    m.headBytesArrived(now: at(0))
    m.errorResponseQueued(now: at(0))
    #expect(m.responseFlushed(now: at(0)) == .lingerThenClose)
    #expect(m.peerClosed() == .close)
  }

  @Test func aCompleteExchangeWithConnectionCloseDoesNotLinger() {
    var m = makeMachine()
    _ = m.headDecided(head(framing: .contentLength(3), keepAlive: false), readsBody: true, now: at(0))
    m.bodyReceived(3, now: at(0))
    m.bodyEnded()
    _ = m.responseQueued(now: at(0))
    #expect(m.responseFlushed(now: at(0)) == .close)
  }

  @Test func connectionCloseRequestsCloseAfterTheResponse() {
    var m = makeMachine()
    _ = m.headDecided(head(keepAlive: false), readsBody: true, now: at(0))
    m.bodyEnded()
    #expect(m.responseQueued(now: at(0)) == true)
    #expect(m.responseFlushed(now: at(0)) == .close)
  }

  @Test func aSlowHeadTimesOutWith408OnlyOnceBytesArrived() {
    var silent = makeMachine()
    #expect(silent.timedOut(now: at(9.9)) == .none)
    #expect(silent.timedOut(now: at(10)) == .close)

    var slow = makeMachine()
    slow.headBytesArrived(now: at(1))
    #expect(slow.deadline == at(10))
    #expect(slow.timedOut(now: at(10)) == .requestTimeout)
  }

  @Test func theHeaderTimerCoversTheWholeHeadNotEachByte() {
    var m = makeMachine()
    for second in 1...9 { m.headBytesArrived(now: at(Double(second))) }
    #expect(m.deadline == at(10))
  }

  @Test func bodyBytesPushTheIdleTimeoutBack() {
    var m = makeMachine()
    _ = m.headDecided(head(framing: .contentLength(100)), readsBody: true, now: at(0))
    m.bodyReceived(40, now: at(20))
    #expect(m.deadline == at(50))
    #expect(m.timedOut(now: at(49)) == .none)
    #expect(m.timedOut(now: at(50)) == .abortBody(received: 40))
  }

  @Test func aClientGoneMidBodyReportsTheBytesReceived() {
    var m = makeMachine()
    _ = m.headDecided(head(framing: .chunked), readsBody: true, now: at(0))
    m.bodyReceived(300, now: at(1))
    m.bodyReceived(12, now: at(2))
    #expect(m.peerClosed() == .abortBody(received: 312))
    #expect(m.state == .closed)
  }

  @Test func aClientThatClosesWhileItsResponseIsOwedCancelsTheRequest() {
    var m = makeMachine()
    _ = m.headDecided(head(), readsBody: true, now: at(0))
    m.bodyEnded()
    #expect(m.peerClosed() == .cancelRequest)
    #expect(m.state == .closed)
  }

  @Test func aHalfCloseWhileTheResponseIsWrittenStillGetsItWhole() {
    var m = makeMachine()
    _ = m.headDecided(head(), readsBody: false, now: at(0))
    #expect(m.responseQueued(now: at(0)) == false)
    #expect(m.peerClosed() == .finishResponse)
    #expect(m.responseFlushed(now: at(1)) == .close)

    var streaming = makeMachine()
    _ = streaming.headDecided(head(), readsBody: false, now: at(0))
    _ = streaming.responseQueued(now: at(0))
    streaming.waitingForProducer()
    #expect(streaming.peerClosed() == .finishResponse)
    #expect(streaming.responseFlushed(now: at(1)) == .close)
  }

  @Test func readingIsPausedWhileAResponseIsPending() {
    var m = makeMachine()
    #expect(!m.readingPaused)
    _ = m.headDecided(head(framing: .contentLength(5)), readsBody: true, now: at(0))
    #expect(!m.readingPaused)
    m.bodyEnded()
    #expect(m.readingPaused)
    #expect(m.deadline == nil)
    _ = m.responseQueued(now: at(1))
    #expect(m.readingPaused)
    #expect(m.deadline == at(21))
    #expect(m.timedOut(now: at(21)) == .close)
  }

  @Test func aRejectedBodyClosesAfterTheResponse() {
    var m = makeMachine()
    _ = m.headDecided(head(framing: .chunked), readsBody: true, now: at(0))
    m.bodyReceived(10, now: at(0))
    m.bodyRejected()
    #expect(m.responseQueued(now: at(0)) == true)
  }

  @Test func drainingClosesIdleConnectionsAndFinishesBusyOnes() {
    var idle = makeMachine()
    #expect(idle.drain() == .close)

    var busy = makeMachine()
    _ = busy.headDecided(head(), readsBody: true, now: at(0))
    busy.bodyEnded()
    #expect(busy.drain() == .finishCurrent)
    #expect(busy.responseQueued(now: at(1)) == true)
    #expect(busy.responseFlushed(now: at(1)) == .close)

    var writing = makeMachine()
    _ = writing.headDecided(head(), readsBody: false, now: at(0))
    #expect(writing.responseQueued(now: at(0)) == false)
    #expect(writing.drain() == .finishCurrent)
    #expect(writing.responseFlushed(now: at(0)) == .close)
  }

  @Test func anIdleKeptAliveConnectionClosesSilently() {
    var m = makeMachine()
    _ = m.headDecided(head(), readsBody: false, now: at(0))
    _ = m.responseQueued(now: at(0))
    _ = m.responseFlushed(now: at(1))
    #expect(m.timedOut(now: at(5.9)) == .none)
    #expect(m.timedOut(now: at(6)) == .close)
  }

  @Test func theTimerHeapPopsInDeadlineOrder() {
    var heap = TimerHeap<Int>()
    for (i, t) in [5.0, 1.0, 3.0, 4.0, 2.0].enumerated() { heap.push(at(t), i) }
    #expect(heap.popDue(now: at(0.5)) == nil)
    var order: [Int] = []
    while let (_, element) = heap.popDue(now: at(10)) { order.append(element) }
    #expect(order == [1, 4, 2, 3, 0])
  }
}
