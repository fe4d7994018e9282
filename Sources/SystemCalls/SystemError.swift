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
