import CLinux
import Glibc
import SystemCalls

/// A failed system call (SystemCalls' error, which Server's API throws).
public typealias SystemError = SystemCalls.SystemError
/// The result of a non-blocking call.
typealias IOResult = SystemCalls.IOResult

/// The one place the Server module calls into the kernel, through `SystemCall`: every call
/// retries on EINTR, maps EAGAIN/EWOULDBLOCK to `.wouldBlock` where the fd is non-blocking, and
/// throws `SystemError` with the call's name otherwise.
enum System {
  // MARK: Descriptors

  static func close(_ fd: Int32) throws(SystemError) {
    do { try SystemCall.close(fd) } catch {
      // A descriptor closed twice is a bug that closes someone else's socket once numbers are
      // reused: stop here, as swift-nio does, rather than let `try?` hide it.
      precondition(error.errno != EBADF, "close(\(fd)): EBADF, a descriptor closed twice")
      throw error
    }
  }

  static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(SystemError)
    -> IOResult<Int>
  {
    try SystemCall.nonBlocking("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
  }

  /// Looks at the next input byte without taking it: `.processed(0)` means EOF with nothing
  /// unread before it.
  static func peek(_ fd: Int32) throws(SystemError) -> IOResult<Int> {
    var byte: UInt8 = 0
    return try SystemCall.nonBlocking("recv") { Glibc.recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) }
  }

  static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
    try SystemCall.nonBlocking("write") { Glibc.write(fd, buffer.baseAddress, buffer.count) }
  }

  static func writev(_ fd: Int32, _ iovecs: UnsafeBufferPointer<iovec>) throws(SystemError)
    -> IOResult<Int>
  {
    try SystemCall.nonBlocking("writev") { Glibc.writev(fd, iovecs.baseAddress, Int32(iovecs.count)) }
  }

  static func sendfile(_ out: Int32, _ file: Int32, offset: inout off_t, count: Int) throws(SystemError)
    -> IOResult<Int>
  {
    try SystemCall.nonBlocking("sendfile") { CLinux.sendfile(out, file, &offset, count) }
  }

  static func open(_ path: String, flags: Int32) throws(SystemError) -> Int32 {
    try SystemCall.blocking("open") { Glibc.open(path, flags | O_CLOEXEC) }
  }

  /// A close-on-exec pipe.
  static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    _ = try SystemCall.blocking("pipe") { fds.withUnsafeMutableBufferPointer { Glibc.pipe($0.baseAddress) } }
    for fd in fds { _ = try SystemCall.blocking("fcntl") { Glibc.fcntl(fd, F_SETFD, FD_CLOEXEC) } }
    return (fds[0], fds[1])
  }

  // MARK: Sockets

  static func socket(domain: Int32, type: Int32) throws(SystemError) -> Int32 {
    try SystemCall.blocking("socket") { Glibc.socket(domain, type | Int32(SOCK_CLOEXEC.rawValue), 0) }
  }

  static func setsockopt(_ fd: Int32, level: Int32, option: Int32, value: Int32) throws(SystemError) {
    var value = value
    _ = try SystemCall.blocking("setsockopt") {
      Glibc.setsockopt(fd, level, option, &value, socklen_t(MemoryLayout<Int32>.size))
    }
  }

  static func bind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) throws(SystemError) {
    _ = try SystemCall.blocking("bind") { Glibc.bind(fd, address, length) }
  }

  static func listen(_ fd: Int32, backlog: Int32) throws(SystemError) {
    _ = try SystemCall.blocking("listen") { Glibc.listen(fd, backlog) }
  }

  static func getsockname(
    _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>
  ) throws(SystemError) {
    _ = try SystemCall.blocking("getsockname") { Glibc.getsockname(fd, address, length) }
  }

  /// Accepts one connection as a non-blocking, close-on-exec socket.
  static func accept(
    _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>
  ) throws(SystemError) -> IOResult<Int32> {
    try SystemCall.nonBlocking("accept4") {
      CLinux_accept4(fd, address, length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
    }
  }

  static func shutdown(_ fd: Int32, how: Int32) throws(SystemError) {
    _ = try SystemCall.blocking("shutdown") { Glibc.shutdown(fd, how) }
  }

  // MARK: epoll and eventfd

  static func epollCreate() throws(SystemError) -> Int32 {
    try SystemCall.blocking("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
  }

  static func epollControl(_ epfd: Int32, _ op: Int32, _ fd: Int32, events: UInt32, data: UInt64)
    throws(SystemError)
  {
    var event = epoll_event()
    event.events = events
    event.data.u64 = data
    _ = try SystemCall.blocking("epoll_ctl") { epoll_ctl(epfd, op, fd, &event) }
  }

  /// Waits for events; `timeout` in milliseconds, -1 forever. EINTR counts as zero events.
  static func epollWait(_ epfd: Int32, _ events: UnsafeMutableBufferPointer<epoll_event>, timeout: Int32)
    throws(SystemError) -> Int
  {
    Int(
      try SystemCall.wait("epoll_wait") { epoll_wait(epfd, events.baseAddress, Int32(events.count), timeout) }
    )
  }

  static func eventfd() throws(SystemError) -> Int32 {
    try SystemCall.blocking("eventfd") { CLinux.eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
  }

  /// Adds one to an eventfd counter (wakes whoever polls it).
  static func eventfdSignal(_ fd: Int32) throws(SystemError) {
    var one: UInt64 = 1
    // A full counter (EAGAIN) still means "readable", which is all a wake-up needs.
    _ = try SystemCall.nonBlocking("write") { Glibc.write(fd, &one, 8) }
  }

  /// Resets an eventfd counter.
  static func eventfdDrain(_ fd: Int32) throws(SystemError) {
    var value: UInt64 = 0
    _ = try SystemCall.nonBlocking("read") { Glibc.read(fd, &value, 8) }
  }

  /// Waits on a few descriptors (the run thread: shutdown eventfd and signal pipe).
  static func poll(_ fds: inout [pollfd], timeout: Int32) throws(SystemError) -> Int {
    let count = nfds_t(fds.count)
    return Int(
      try fds.withUnsafeMutableBufferPointer { (fds) throws(SystemError) in
        try SystemCall.wait("poll") { Glibc.poll(fds.baseAddress, count, timeout) }
      })
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
    _ = try SystemCall.blocking("sigaction") { sigaction(signo, &action, nil) }
  }
}
