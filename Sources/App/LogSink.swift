import Dispatch
import Foundation
import Synchronization
import SystemCalls

#if canImport(Glibc)
  import Glibc
#endif

/// Where log lines go: a file descriptor written by a background thread, or nowhere.
///
/// The access log is written from event-loop threads, which must never block: a full pipe
/// (a slow log collector) would stall every connection on the loop. So `write` only appends
/// to a bounded buffer; one writer thread per sink drains it with large `write(2)` calls.
/// When the buffer is full, lines are dropped and counted, and a note says how many.
public final class LogSink: Sendable {
  /// Buffered bytes at most before lines are dropped.
  public static let bufferLimit = 4 << 20

  private struct Pending {
    var buffer: [UInt8] = []
    var dropped = 0
  }

  private let fd: Int32
  private let ownsDescriptor: Bool
  private let pending = Mutex(Pending())
  // Serialises draining, so that `flush()` and the writer thread keep lines in order.
  private let draining = Mutex(())
  private let wake = DispatchSemaphore(value: 0)
  private let writerStarted = Atomic<Bool>(false)

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

  /// Writes to `fileDescriptor`, closing it when the sink goes away.
  convenience init(fileDescriptor: Int32) {
    self.init(fd: fileDescriptor, owns: true)
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

  /// Queues `line` (which should end with a newline); never blocks on I/O.
  public func write(_ line: [UInt8]) {
    guard fd >= 0 else { return }
    let wasEmpty = pending.withLock { pending -> Bool in
      guard pending.buffer.count + line.count <= Self.bufferLimit else {
        pending.dropped += 1
        return false
      }
      let wasEmpty = pending.buffer.isEmpty
      pending.buffer.append(contentsOf: line)
      return wasEmpty
    }
    if !writerStarted.load(ordering: .acquiring) { startWriter() }
    if wasEmpty { wake.signal() }
  }

  /// Writes everything queued so far before returning (at exit, and in tests).
  public func flush() {
    guard fd >= 0 else { return }
    drain()
  }

  private func startWriter() {
    guard !writerStarted.exchange(true, ordering: .acquiringAndReleasing) else { return }
    // The thread lives as long as the process; sinks are made once at start-up.
    let thread = Thread { [self] in
      while true {
        wake.wait()
        // Let lines gather for a moment: one write(2) for many requests under load.
        usleep(2000)
        drain()
      }
    }
    thread.name = "attachd-log"
    thread.start()
  }

  private func drain() {
    draining.withLock { _ in
      let (bytes, dropped) = pending.withLock { pending in
        defer { pending = Pending() }
        return (pending.buffer, pending.dropped)
      }
      writeAll(bytes)
      if dropped > 0 {
        writeAll(
          Array(#"{"level":"warning","message":"log buffer full, lines dropped","dropped":\#(dropped)}"#.utf8)
            + [10])
      }
    }
  }

  private func writeAll(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { buffer in
      var offset = 0
      while offset < buffer.count {
        let written = try? SystemCall.blocking("write") {
          Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
        }
        // A full disk or a closed pipe must not stop the server; the lines are lost.
        guard let written, written > 0 else { return }
        offset += written
      }
    }
  }

  deinit {
    if ownsDescriptor { close(fd) }
  }
}
