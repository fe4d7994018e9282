import CLinux
import Glibc

/// A failed system call: its name and `errno`.
public struct SystemError: Error, Sendable, CustomStringConvertible {
  /// The name of the call that failed, e.g. "accept4".
  public var call: String
  /// The `errno` it left.
  public var errno: Int32

  public init(call: String, errno: Int32) {
    self.call = call
    self.errno = errno
  }

  public var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// The result of a non-blocking call: done, or the kernel would have had to wait (EAGAIN).
enum IOResult<Value> {
  case processed(Value)
  case wouldBlock
}

/// The one place the Server module calls into the kernel. Every call retries on EINTR, maps
/// EAGAIN/EWOULDBLOCK to `.wouldBlock` where the fd is non-blocking, and throws `SystemError`
/// with the call's name otherwise (swift-nio's NIOPosix/System.swift is the model).
enum System {
  @inline(__always)
  private static func retrying<T: FixedWidthInteger>(
    _ name: StaticString, _ body: () -> T
  ) throws(SystemError) -> IOResult<T> {
    while true {
      let result = body()
      if result >= 0 { return .processed(result) }
      let err = Glibc.errno
      if err == EINTR { continue }
      if err == EAGAIN || err == EWOULDBLOCK { return .wouldBlock }
      throw SystemError(call: "\(name)", errno: err)
    }
  }

  /// For calls that never return EAGAIN (or where it is an error).
  @inline(__always)
  private static func blocking<T: FixedWidthInteger>(
    _ name: StaticString, _ body: () -> T
  ) throws(SystemError) -> T {
    switch try retrying(name, body) {
    case .processed(let value): return value
    case .wouldBlock: throw SystemError(call: "\(name)", errno: EAGAIN)
    }
  }

  // MARK: Descriptors

  static func close(_ fd: Int32) throws(SystemError) {
    // EINTR on close must not be retried on Linux: the descriptor is already gone.
    if Glibc.close(fd) < 0 && Glibc.errno != EINTR {
      // A descriptor closed twice is a bug that closes someone else's socket once numbers are
      // reused: stop here, as swift-nio does, rather than let `try?` hide it.
      precondition(Glibc.errno != EBADF, "close(\(fd)): EBADF, a descriptor closed twice")
      throw SystemError(call: "close", errno: Glibc.errno)
    }
  }

  static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(SystemError)
    -> IOResult<Int>
  {
    try retrying("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
  }

  /// Looks at the next input byte without taking it: `.processed(0)` means EOF with nothing
  /// unread before it.
  static func peek(_ fd: Int32) throws(SystemError) -> IOResult<Int> {
    var byte: UInt8 = 0
    return try retrying("recv") { Glibc.recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) }
  }

  static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
    try retrying("write") { Glibc.write(fd, buffer.baseAddress, buffer.count) }
  }

  static func writev(_ fd: Int32, _ iovecs: UnsafeBufferPointer<iovec>) throws(SystemError)
    -> IOResult<Int>
  {
    try retrying("writev") { Glibc.writev(fd, iovecs.baseAddress, Int32(iovecs.count)) }
  }

  static func sendfile(_ out: Int32, _ file: Int32, offset: inout off_t, count: Int) throws(SystemError)
    -> IOResult<Int>
  {
    try retrying("sendfile") { CLinux.sendfile(out, file, &offset, count) }
  }

  static func open(_ path: String, flags: Int32) throws(SystemError) -> Int32 {
    try blocking("open") { Glibc.open(path, flags | O_CLOEXEC) }
  }

  /// A close-on-exec pipe.
  static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    _ = try blocking("pipe") { fds.withUnsafeMutableBufferPointer { Glibc.pipe($0.baseAddress) } }
    for fd in fds { _ = try blocking("fcntl") { Glibc.fcntl(fd, F_SETFD, FD_CLOEXEC) } }
    return (fds[0], fds[1])
  }

  // MARK: Sockets

  static func socket(domain: Int32, type: Int32) throws(SystemError) -> Int32 {
    try blocking("socket") { Glibc.socket(domain, type | Int32(SOCK_CLOEXEC.rawValue), 0) }
  }

  static func setsockopt(_ fd: Int32, level: Int32, option: Int32, value: Int32) throws(SystemError) {
    var value = value
    _ = try blocking("setsockopt") {
      Glibc.setsockopt(fd, level, option, &value, socklen_t(MemoryLayout<Int32>.size))
    }
  }

  static func bind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) throws(SystemError) {
    _ = try blocking("bind") { Glibc.bind(fd, address, length) }
  }

  static func listen(_ fd: Int32, backlog: Int32) throws(SystemError) {
    _ = try blocking("listen") { Glibc.listen(fd, backlog) }
  }

  static func getsockname(
    _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>
  ) throws(SystemError) {
    _ = try blocking("getsockname") { Glibc.getsockname(fd, address, length) }
  }

  /// Accepts one connection as a non-blocking, close-on-exec socket.
  static func accept(
    _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>
  ) throws(SystemError) -> IOResult<Int32> {
    try retrying("accept4") {
      CLinux_accept4(fd, address, length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
    }
  }

  static func shutdown(_ fd: Int32, how: Int32) throws(SystemError) {
    _ = try blocking("shutdown") { Glibc.shutdown(fd, how) }
  }

  // MARK: epoll and eventfd

  static func epollCreate() throws(SystemError) -> Int32 {
    try blocking("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
  }

  static func epollControl(_ epfd: Int32, _ op: Int32, _ fd: Int32, events: UInt32, data: UInt64)
    throws(SystemError)
  {
    var event = epoll_event()
    event.events = events
    event.data.u64 = data
    _ = try blocking("epoll_ctl") { epoll_ctl(epfd, op, fd, &event) }
  }

  /// Waits for events; `timeout` in milliseconds, -1 forever. EINTR counts as zero events.
  static func epollWait(_ epfd: Int32, _ events: UnsafeMutableBufferPointer<epoll_event>, timeout: Int32)
    throws(SystemError) -> Int
  {
    let n = epoll_wait(epfd, events.baseAddress, Int32(events.count), timeout)
    if n >= 0 { return Int(n) }
    if Glibc.errno == EINTR { return 0 }
    throw SystemError(call: "epoll_wait", errno: Glibc.errno)
  }

  static func eventfd() throws(SystemError) -> Int32 {
    try blocking("eventfd") { CLinux.eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
  }

  /// Adds one to an eventfd counter (wakes whoever polls it).
  static func eventfdSignal(_ fd: Int32) throws(SystemError) {
    var one: UInt64 = 1
    // A full counter (EAGAIN) still means "readable", which is all a wake-up needs.
    _ = try retrying("write") { Glibc.write(fd, &one, 8) }
  }

  /// Resets an eventfd counter.
  static func eventfdDrain(_ fd: Int32) throws(SystemError) {
    var value: UInt64 = 0
    _ = try retrying("read") { Glibc.read(fd, &value, 8) }
  }

  /// Waits on a few descriptors (the run thread: shutdown eventfd and signal pipe).
  static func poll(_ fds: inout [pollfd], timeout: Int32) throws(SystemError) -> Int {
    let count = nfds_t(fds.count)
    let n = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, count, timeout) }
    if n >= 0 { return Int(n) }
    if Glibc.errno == EINTR { return 0 }
    throw SystemError(call: "poll", errno: Glibc.errno)
  }

  // MARK: Signals

  /// Makes writes to a vanished peer fail with EPIPE instead of killing the process.
  static func ignoreSIGPIPE() {
    signal(SIGPIPE, SIG_IGN)
  }

  /// Installs `handler` (a C function: async-signal-safe work only) for `signo`.
  static func setSignalHandler(_ signo: Int32, _ handler: @convention(c) (Int32) -> Void) throws(SystemError)
  {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = handler
    sigemptyset(&action.sa_mask)
    action.sa_flags = SA_RESTART
    _ = try blocking("sigaction") { sigaction(signo, &action, nil) }
  }
}
