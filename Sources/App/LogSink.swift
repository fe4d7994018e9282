#if canImport(Glibc)
  import Glibc
#endif

/// Where log lines go: a file descriptor written with one `write(2)` per line, or nowhere.
///
/// One write per line keeps lines whole when several threads log at once (appends to a
/// file opened with `O_APPEND`, and writes of at most `PIPE_BUF` bytes to a pipe, are atomic).
public final class LogSink: Sendable {
  private let fd: Int32
  private let ownsDescriptor: Bool

  /// Discards every line.
  public static let off = LogSink(fd: -1, owns: false)
  /// Standard output.
  public static let standardOutput = LogSink(fd: STDOUT_FILENO, owns: false)
  /// Standard error.
  public static let standardError = LogSink(fd: STDERR_FILENO, owns: false)

  private init(fd: Int32, owns: Bool) {
    self.fd = fd
    self.ownsDescriptor = owns
  }

  /// Appends to the file at `path`, creating it (mode 0640) when missing.
  public convenience init(appendingTo path: String) throws(ConfigurationError) {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640)
    guard fd >= 0 else {
      throw ConfigurationError("cannot open log file \(path): \(String(cString: strerror(errno)))")
    }
    self.init(fd: fd, owns: true)
  }

  /// The sink a `log.access` value names: `stdout`, `stderr`, `off`, or a file path.
  public static func named(_ destination: String) throws(ConfigurationError) -> LogSink {
    switch destination {
    case "stdout", "-": .standardOutput
    case "stderr": .standardError
    case "off", "none": .off
    default: try LogSink(appendingTo: destination)
    }
  }

  /// Whether lines are discarded (callers can skip formatting).
  public var isOff: Bool { fd < 0 }

  /// Writes `line` (which should end with a newline), retrying short writes and EINTR.
  public func write(_ line: [UInt8]) {
    guard fd >= 0 else { return }
    line.withUnsafeBytes { buffer in
      var offset = 0
      while offset < buffer.count {
        let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
        if n > 0 {
          offset += n
        } else if n < 0 && errno == EINTR {
          continue
        } else {
          return  // A full disk or closed pipe must not stop the server; the line is lost.
        }
      }
    }
  }

  deinit {
    if ownsDescriptor { close(fd) }
  }
}
