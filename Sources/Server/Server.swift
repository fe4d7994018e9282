import Dispatch
import Foundation
import Glibc
import HTTP
import Synchronization

/// An HTTP/1.1 server on epoll: `loopCount` event-loop threads share one listening socket,
/// CPU work goes to a bounded `WorkerPool`, and SIGTERM/SIGINT (or `shutdown()`) drain it.
///
/// Over `maxConnections`, a new connection is accepted, sent the handler's answer to
/// `.tooManyConnections` (serialised once, at start-up) and closed.
public final class Server: Sendable {
  public let configuration: Configuration
  let handler: any HTTPHandler
  /// The answer to connections over `maxConnections`, with the start-up `Date` until a loop
  /// rewrites it.
  let refusal: CannedResponse
  /// Its status, for the handler's completion of each refusal.
  let refusalStatus: Int
  /// The CPU workers (`Pool.cpu`).
  public let pool: WorkerPool
  /// The upload I/O threads (`Pool.io`): their queue is practically unbounded (see `Pool.io`).
  public let ioPool: WorkerPool
  let listenFD: Int32
  /// The bound port (useful with `port: 0`).
  public let localPort: Int
  private let loops: Mutex<[EventLoop]> = Mutex([])
  private let openConnections = Atomic<Int>(0)
  private let drainingFlag = Atomic<Bool>(false)
  private let loopsOnListener = Atomic<Int>(0)
  private let listenerClosed = Atomic<Bool>(false)
  private let started = Atomic<Bool>(false)
  private let stopFD: Int32
  private let loopsFinished = DispatchGroup()

  /// Binds and listens at once (so `localPort` is known); serving starts with `run()`.
  public init(configuration: Configuration, handler: some HTTPHandler) throws {
    try configuration.validate()
    self.configuration = configuration
    self.handler = handler
    var dates = HTTPDateCache()
    var context = RequestContext(remoteAddress: "-")
    var refusal = Self.checked(handler.response(for: .tooManyConnections, context: &context))
    for field in context.responseHeaders {
      refusal.headers.replaceOrAdd(name: field.name, value: field.value)
    }
    self.refusal = CannedResponse(refusal, date: dates.now())
    self.refusalStatus = refusal.status
    // Writes to a vanished client must fail with EPIPE, not kill the process.
    System.ignoreSIGPIPE()
    let fd = try System.socket(
      domain: AF_INET, type: Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
    do {
      let one: Int32 = 1
      try System.setsockopt(fd, level: SOL_SOCKET, option: SO_REUSEADDR, value: one)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = in_port_t(UInt16(configuration.port).bigEndian)
      inet_pton(AF_INET, configuration.host, &address.sin_addr)
      try withUnsafePointer(to: &address) { (p) throws(SystemError) in
        try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { (sa) throws(SystemError) in
          try System.bind(fd, sa, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
      try System.listen(fd, backlog: configuration.listenBacklog)
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      try withUnsafeMutablePointer(to: &address) { (p) throws(SystemError) in
        try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { (sa) throws(SystemError) in
          try System.getsockname(fd, sa, &length)
        }
      }
      self.localPort = Int(UInt16(bigEndian: address.sin_port))
      self.stopFD = try System.eventfd()
    } catch {
      try? System.close(fd)
      throw error
    }
    self.listenFD = fd
    self.pool = WorkerPool(threads: configuration.workerThreads, queueLength: configuration.workerQueueLength)
    self.ioPool = WorkerPool(threads: configuration.ioThreads, queueLength: 1 << 20, name: "io")
  }

  deinit {
    closeListener()
    try? System.close(stopFD)
  }

  /// True once a shutdown began: no new connections, idle ones closed, busy ones finishing.
  public var isDraining: Bool { drainingFlag.load(ordering: .acquiring) }

  /// Open client connections.
  public var connectionCount: Int { openConnections.load(ordering: .relaxed) }

  /// Serves until `shutdown()` or SIGTERM/SIGINT, drains, and returns (so main can exit 0).
  public func run() throws {
    guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
    let created = try (0..<configuration.loopCount).map { (index) throws(SystemError) in
      try EventLoop(index: index, server: self)
    }
    loops.withLock { $0 = created }
    loopsOnListener.store(created.count, ordering: .releasing)
    for loop in created {
      loopsFinished.enter()
      let thread = Thread { [self] in
        loop.run()
        loopsFinished.leave()
      }
      thread.name = "attachd-loop-\(loop.index)"
      thread.start()
    }
    if configuration.handleSignals { SignalRelay.register(self) }
    defer { if configuration.handleSignals { SignalRelay.unregister(self) } }

    var fds = [pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)]
    while try System.poll(&fds, timeout: -1) == 0 || fds[0].revents == 0 {}
    beginDrain()
    loopsFinished.wait()
    closeListener()
    // Connections are gone by now (the drain deadline closes stragglers); work still running
    // on the CPU pool has nobody to answer, so it is not waited for. The I/O threads are: the
    // last bodies' writers are being closed there, committing every byte that arrived.
    pool.shutdown(wait: false)
    ioPool.shutdown(wait: true)
    loops.withLock { $0 = [] }
  }

  /// Starts a graceful shutdown; `run()` returns once in-flight requests are done (or the
  /// drain deadline passed). Callable from any thread, any number of times.
  public func shutdown() {
    try? System.eventfdSignal(stopFD)
  }

  private func beginDrain() {
    guard !drainingFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
    let deadline = configuration.drainDeadline
    for loop in loops.withLock({ $0 }) {
      loop.execute { loop.beginDrain(deadline: deadline) }
    }
  }

  // MARK: For the loops

  /// Counts a new connection against `maxConnections`; false when over the cap.
  func reserveConnection() -> Bool {
    if openConnections.add(1, ordering: .relaxed).newValue > configuration.maxConnections {
      openConnections.subtract(1, ordering: .relaxed)
      return false
    }
    return true
  }

  func releaseConnection() { openConnections.subtract(1, ordering: .relaxed) }

  /// Queues `work` on `pool`; false when the CPU pool refused it. The I/O pool never refuses:
  /// past its queue, or after shutdown, the work runs on a thread of its own.
  @discardableResult
  func submit(to pool: Pool, _ work: @escaping @Sendable () -> Void) -> Bool {
    switch pool {
    case .cpu: return self.pool.trySubmit(work)
    case .io:
      if !ioPool.trySubmit(work) { Thread.detachNewThread { work() } }
      return true
    }
  }

  /// The handler's answer to `condition`, made safe to write.
  func response(for condition: ServerCondition, context: inout RequestContext) -> HTTPResponse {
    Self.checked(handler.response(for: condition, context: &context))
  }

  // The server writes these without opening files or pulling streams, and a head needs a
  // final status: a handler breaking that contract gets a bare 500 instead of a crashed loop
  // (a guard against a bug, not a mapping: every condition's status comes from the handler).
  // `package`: the test client's in-process mode holds condition answers to the same rule.
  package static func checked(_ response: HTTPResponse) -> HTTPResponse {
    guard (200...999).contains(response.status) else { return HTTPResponse(status: 500) }
    switch response.body {
    case .empty, .bytes: return response
    case .file: break
    case .stream(_, let producer): producer.stop()
    }
    var response = response
    response.body = .empty
    return response
  }

  /// A loop removed the listening socket from its epoll set; the last one closes it, so new
  /// connections are refused while the others finish.
  func loopLeftListener() {
    if loopsOnListener.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { closeListener() }
  }

  private func closeListener() {
    guard !listenerClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    try? System.close(listenFD)
  }
}

/// Turns SIGTERM/SIGINT into `shutdown()` of every running server that asked for it. The
/// handler only writes a byte to a pipe (async-signal-safe); a thread does the rest.
enum SignalRelay {
  private static let servers = Mutex<[ObjectIdentifier: Server]>([:])
  private static let installed = Mutex(false)

  static func register(_ server: Server) {
    servers.withLock { $0[ObjectIdentifier(server)] = server }
    installed.withLock { installed in
      guard !installed else { return }
      installed = true
      guard let (readFD, writeFD) = try? System.pipe() else { return }
      signalWriteFD.store(writeFD, ordering: .releasing)
      for signo in [SIGTERM, SIGINT] {
        try? System.setSignalHandler(signo) { signo in
          // Only write(2) here: it is async-signal-safe; the relay thread does the rest.
          var byte = UInt8(truncatingIfNeeded: signo)
          _ = Glibc.write(signalWriteFD.load(ordering: .relaxed), &byte, 1)
        }
      }
      let thread = Thread {
        var byte: UInt8 = 0
        while true {
          let result = try? withUnsafeMutableBytes(of: &byte) { try System.read(readFD, $0) }
          guard case .processed(let n) = result, n > 0 else { return }
          for server in servers.withLock({ Array($0.values) }) { server.shutdown() }
        }
      }
      thread.name = "attachd-signals"
      thread.start()
    }
  }

  /// The servers a signal would shut down now.
  static var registered: [ObjectIdentifier] { servers.withLock { Array($0.keys) } }

  static func unregister(_ server: Server) {
    _ = servers.withLock { $0.removeValue(forKey: ObjectIdentifier(server)) }
  }
}

/// The write end of the signal pipe, read by the signal handler.
private let signalWriteFD = Atomic<Int32>(-1)
