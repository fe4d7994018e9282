import Glibc

/// The result of a non-blocking call: done, or the kernel would have had to wait (EAGAIN).
public enum IOResult<Value> {
  case processed(Value)
  case wouldBlock
}

/// The one wrapper around system calls (swift-nio's NIOPosix/System.swift is the model): a call
/// interrupted by a signal (EINTR) is made again, EAGAIN is `.wouldBlock` where the descriptor
/// is non-blocking, and any other failure throws `SystemError` with the call's name and errno.
/// Modules keep their own API on top (Server's `System`, Storage's `FileSystem`).
public enum SystemCall {
  /// Runs `body` (a call that returns -1 and sets errno on failure) until it is not interrupted;
  /// EAGAIN/EWOULDBLOCK become `.wouldBlock`.
  @inlinable
  public static func nonBlocking<T: FixedWidthInteger>(
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

  /// Like `nonBlocking`, for calls that never return EAGAIN or where it is an error.
  @inlinable
  public static func blocking<T: FixedWidthInteger>(
    _ name: StaticString, _ body: () -> T
  ) throws(SystemError) -> T {
    switch try nonBlocking(name, body) {
    case .processed(let value): return value
    case .wouldBlock: throw SystemError(call: "\(name)", errno: EAGAIN)
    }
  }

  /// A wait with a timeout (poll, epoll_wait): an interrupted one counts as nothing ready, so the
  /// caller looks at its clock and its descriptors before waiting again.
  @inlinable
  public static func wait<T: FixedWidthInteger>(_ name: StaticString, _ body: () -> T) throws(SystemError)
    -> T
  {
    let result = body()
    if result >= 0 { return result }
    let err = Glibc.errno
    if err == EINTR { return 0 }
    throw SystemError(call: "\(name)", errno: err)
  }

  /// Closes `fd`. Never retried: on Linux the descriptor is gone even when close reports EINTR
  /// (and retrying could close a descriptor another thread has just been given).
  public static func close(_ fd: Int32) throws(SystemError) {
    if Glibc.close(fd) < 0 && Glibc.errno != EINTR {
      throw SystemError(call: "close", errno: Glibc.errno)
    }
  }

  /// Copies `range` of the open file `source` to the current position of `target` in the kernel
  /// (`sendfile`, any target file since Linux 2.6.33): the bytes never pass through this
  /// process's memory, so a copy of a file of hundreds of MiB adds nothing to its resident set.
  /// A source shorter than the range throws EIO.
  public static func copyFile(from source: Int32, range: Range<Int>, to target: Int32) throws(SystemError) {
    var offset = off_t(range.lowerBound)
    var left = range.count
    while left > 0 {
      let sent = try blocking("sendfile") { sendfile(target, source, &offset, min(left, 1 << 30)) }
      guard sent > 0 else { throw SystemError(call: "sendfile", errno: EIO) }
      left -= sent
    }
  }
}
