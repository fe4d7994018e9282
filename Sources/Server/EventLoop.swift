import CLinux
import Glibc
import HTTP
import Synchronization

/// One thread, one epoll set: accepts from the shared listening socket, runs its connections'
/// I/O and timers, and runs work other threads hand it (responses from the worker pool).
///
/// Connection sockets are registered once, edge-triggered, for input and output
/// (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET): pausing input for backpressure or waiting for
/// a writable socket then needs no `epoll_ctl`, only a flag. Because an edge fires once, a
/// connection reads until EAGAIN (or a short read) and remembers "maybe more" while paused.
/// The listening socket is level-triggered with EPOLLEXCLUSIVE, so one loop wakes per burst.
final class EventLoop: @unchecked Sendable {
  private static let listenToken: UInt64 = 0
  private static let wakeToken: UInt64 = 1
  /// Reads of one connection per wake-up before others get a turn.
  static let readsPerWakeup = 8
  static let scratchSize = 64 * 1024

  let index: Int
  unowned let server: Server
  private let epollFD: Int32
  private let wakeFD: Int32
  private let inbox = Mutex<[@Sendable () -> Void]>([])
  private let wakePending = Atomic<Bool>(false)
  private let threadID = Atomic<UInt>(0)

  // Loop-thread-only state below.
  /// The clock as of the last wake-up (coarse on purpose: one clock read per iteration).
  private(set) var now = Instant.now()
  /// Shared read buffer: connections own no input memory while they have nothing pending.
  let scratch: UnsafeMutableRawBufferPointer
  private var connections: [Connection?] = []
  private var freeSlots: [Int] = []
  private var generation: UInt32 = 0
  private var timers = TimerHeap<Connection>()
  private var readAgain: [Connection] = []
  private var draining = false
  /// Out of file descriptors: the listener is off this loop's epoll set until then.
  private var acceptPausedUntil: Instant?
  private var drainDeadline: Instant?
  private(set) var liveConnections = 0
  var dates = HTTPDateCache()
  /// This loop's copy of the server's canned over-the-cap answer (its `Date` is rewritten).
  private var refusal: CannedResponse

  init(index: Int, server: Server) throws(SystemError) {
    self.index = index
    self.server = server
    self.epollFD = try System.epollCreate()
    self.wakeFD = try System.eventfd()
    self.scratch = .allocate(byteCount: Self.scratchSize, alignment: 16)
    self.refusal = server.refusal
    try System.epollControl(epollFD, EPOLL_CTL_ADD, wakeFD, events: EPOLLIN.rawValue, data: Self.wakeToken)
  }

  deinit {
    scratch.deallocate()
    try? System.close(epollFD)
    try? System.close(wakeFD)
  }

  /// Whether the caller runs on this loop's thread.
  var inLoop: Bool { threadID.load(ordering: .relaxed) == UInt(bitPattern: Int(bitPattern: pthread_self())) }

  /// Runs `task` on the loop thread soon; callable from any thread.
  func execute(_ task: @escaping @Sendable () -> Void) {
    inbox.withLock { $0.append(task) }
    if !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
      try? System.eventfdSignal(wakeFD)
    }
  }

  /// The loop body; returns when the server drained and every connection is gone.
  func run() {
    threadID.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .relaxed)
    let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: 256)
    defer { events.deallocate() }
    do {
      let listenEvents = EPOLLIN.rawValue | EPOLLEXCLUSIVE.rawValue
      try System.epollControl(
        epollFD, EPOLL_CTL_ADD, server.listenFD, events: listenEvents, data: Self.listenToken)
      while !(draining && liveConnections == 0) {
        let count = try System.epollWait(epollFD, events, timeout: waitTimeout())
        now = Instant.now()
        for i in 0..<count { dispatch(events[i]) }
        runInbox()
        runReadAgain()
        fireTimers()
        resumeAcceptingIfDue()
        if let drainDeadline, now >= drainDeadline {
          for connection in connections { connection?.close() }
        }
      }
    } catch {
      // The epoll set itself failed: nothing sensible is left to do on this loop.
      for connection in connections { connection?.close() }
    }
    if !draining { server.loopLeftListener() }
  }

  private func waitTimeout() -> Int32 {
    if !readAgain.isEmpty { return 0 }
    var deadline = timers.nextDeadline
    for extra in [drainDeadline, acceptPausedUntil] {
      if let extra { deadline = min(deadline ?? extra, extra) }
    }
    guard let deadline else { return -1 }
    let current = Instant.now()
    if deadline <= current { return 0 }
    // Round up so the timer is due when we wake.
    return Int32(clamping: (deadline.nanoseconds - current.nanoseconds + 999_999) / 1_000_000)
  }

  private func dispatch(_ event: epoll_event) {
    let token = event.data.u64
    switch token {
    case Self.listenToken:
      if !draining { acceptConnections() }
    case Self.wakeToken:
      try? System.eventfdDrain(wakeFD)
    default:
      let slot = Int(token & 0xFFFF_FFFF) - 2
      guard slot >= 0, slot < connections.count, let connection = connections[slot],
        connection.generation == UInt32(token >> 32)
      else { return }
      let flags = event.events
      if flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 {
        connection.failed()
        return
      }
      if flags & EPOLLOUT.rawValue != 0 { connection.writable() }
      if flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue) != 0 {
        connection.readable(peerShutdown: flags & EPOLLRDHUP.rawValue != 0)
      }
    }
  }

  private func acceptConnections() {
    var address = sockaddr_storage()
    for _ in 0..<64 {
      var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
      let result: IOResult<Int32>
      do {
        result = try withUnsafeMutablePointer(to: &address) { (p) throws(SystemError) in
          try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { (sa) throws(SystemError) in
            try System.accept(server.listenFD, sa, &length)
          }
        }
      } catch {
        // ECONNABORTED: that client is gone, try the next.
        if error.errno == ECONNABORTED || error.errno == EPROTO { continue }
        // EMFILE, ENFILE, ENOBUFS: the level-triggered listener would wake us in a tight
        // loop, so step off it for a moment; pending clients wait in the backlog.
        pauseAccepting()
        return
      }
      guard case .processed(let fd) = result else { return }
      guard server.reserveConnection() else {
        refuse(fd, remote: Self.describe(&address))
        continue
      }
      adopt(fd, remote: Self.describe(&address))
    }
  }

  private func pauseAccepting() {
    guard acceptPausedUntil == nil else { return }
    try? System.epollControl(epollFD, EPOLL_CTL_DEL, server.listenFD, events: 0, data: 0)
    acceptPausedUntil = now + .milliseconds(100)
  }

  private func resumeAcceptingIfDue() {
    guard let until = acceptPausedUntil, now >= until, !draining else { return }
    acceptPausedUntil = nil
    let listenEvents = EPOLLIN.rawValue | EPOLLEXCLUSIVE.rawValue
    try? System.epollControl(
      epollFD, EPOLL_CTL_ADD, server.listenFD, events: listenEvents, data: Self.listenToken)
  }

  /// Over the connection cap: a best-effort canned `.tooManyConnections` answer, then close.
  /// The handler still hears of it, as of a request with no head.
  private func refuse(_ fd: Int32, remote: String) {
    refusal.setDate(dates.now())
    refusal.bytes.withUnsafeBytes { _ = try? System.write(fd, $0) }
    try? System.close(fd)
    server.handler.completed(
      CompletedRequest(
        method: "-", target: "-", status: server.refusalStatus, isComplete: true, bytesIn: 0, bytesOut: 0,
        duration: .zero, condition: .tooManyConnections, remoteAddress: remote, requestID: "", route: ""))
  }

  private func adopt(_ fd: Int32, remote: String) {
    let one: Int32 = 1
    try? System.setsockopt(fd, level: Int32(IPPROTO_TCP), option: TCP_NODELAY, value: one)
    let slot = freeSlots.popLast() ?? connections.count
    if slot == connections.count { connections.append(nil) }
    generation &+= 1
    let connection = Connection(fd: fd, loop: self, slot: slot, generation: generation, remoteAddress: remote)
    let events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
    do {
      try System.epollControl(
        epollFD, EPOLL_CTL_ADD, fd, events: events, data: UInt64(generation) << 32 | UInt64(slot + 2))
    } catch {
      freeSlots.append(slot)
      try? System.close(fd)
      server.releaseConnection()
      return
    }
    connections[slot] = connection
    liveConnections += 1
    rearm(connection)
  }

  /// Forgets a closed connection (called by `Connection.close`).
  func remove(_ connection: Connection) {
    guard connections[connection.slot] === connection else { return }
    connections[connection.slot] = nil
    freeSlots.append(connection.slot)
    liveConnections -= 1
    server.releaseConnection()
  }

  /// Makes sure the connection's current deadline is in the timer heap.
  func rearm(_ connection: Connection) {
    guard !connection.isClosed, let deadline = connection.machine.deadline else { return }
    if let scheduled = connection.scheduledDeadline, scheduled <= deadline { return }
    connection.scheduledDeadline = deadline
    timers.push(deadline, connection)
  }

  /// The connection stopped reading with input maybe left; give it another turn next iteration.
  func scheduleReadAgain(_ connection: Connection) { readAgain.append(connection) }

  private func runReadAgain() {
    guard !readAgain.isEmpty else { return }
    let batch = readAgain
    readAgain.removeAll(keepingCapacity: true)
    for connection in batch where !connection.isClosed { connection.readable() }
  }

  private func runInbox() {
    guard wakePending.load(ordering: .acquiring) else { return }
    wakePending.store(false, ordering: .releasing)
    let tasks = inbox.withLock { tasks in
      defer { tasks.removeAll(keepingCapacity: true) }
      return tasks
    }
    for task in tasks { task() }
  }

  private func fireTimers() {
    while let (deadline, connection) = timers.popDue(now: now) {
      guard !connection.isClosed, connection.scheduledDeadline == deadline else { continue }
      connection.scheduledDeadline = nil
      connection.timerFired()
      rearm(connection)
    }
  }

  /// Stops accepting, closes idle connections and lets the others finish (on the loop thread).
  func beginDrain(deadline: Duration) {
    guard !draining else { return }
    draining = true
    drainDeadline = now + deadline
    if acceptPausedUntil == nil {
      try? System.epollControl(epollFD, EPOLL_CTL_DEL, server.listenFD, events: 0, data: 0)
    }
    acceptPausedUntil = nil
    server.loopLeftListener()
    for connection in connections { connection?.drain() }
  }

  var isDraining: Bool { draining }

  private static func string(_ text: [CChar]) -> String {
    String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  private static func describe(_ storage: inout sockaddr_storage) -> String {
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    if storage.ss_family == sa_family_t(AF_INET) {
      return withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
          var addr = sin.pointee.sin_addr
          inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
          return "\(Self.string(text)):\(UInt16(bigEndian: sin.pointee.sin_port))"
        }
      }
    }
    return withUnsafePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
        var addr = sin6.pointee.sin6_addr
        inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
        return "[\(Self.string(text))]:\(UInt16(bigEndian: sin6.pointee.sin6_port))"
      }
    }
  }
}
