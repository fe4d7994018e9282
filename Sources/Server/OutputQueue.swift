import Glibc

/// What a connection still has to write: byte buffers and file ranges, in order.
struct OutputQueue {
  enum Chunk {
    case bytes([UInt8], offset: Int)
    /// An open file descriptor (owned: closed when done) and the range left to send.
    case file(fd: Int32, offset: off_t, remaining: Int)
  }

  enum FlushResult {
    case done
    /// The socket is full; an EPOLLOUT edge will say when to go on.
    case wouldBlock
  }

  private(set) var chunks: [Chunk] = []

  var isEmpty: Bool { chunks.isEmpty }

  mutating func append(_ bytes: [UInt8]) {
    if !bytes.isEmpty { chunks.append(.bytes(bytes, offset: 0)) }
  }

  mutating func appendFile(fd: Int32, offset: UInt64, length: UInt64) {
    if length > 0 {
      chunks.append(.file(fd: fd, offset: off_t(offset), remaining: Int(length)))
    } else {
      try? System.close(fd)
    }
  }

  /// Writes as much as the socket takes: two buffers per `writev` (head + body), files with
  /// `sendfile`. Calls `progress` after each write that moved bytes.
  mutating func flush(to socket: Int32, progress: () -> Void) throws(SystemError) -> FlushResult {
    while let first = chunks.first {
      switch first {
      case .bytes(let a, let offsetA):
        let result: IOResult<Int>
        if chunks.count > 1, case .bytes(let b, let offsetB) = chunks[1] {
          result = try Self.writev(socket, a, offsetA, b, offsetB)
        } else {
          result = try a.withUnsafeBytes { raw in
            Result { () throws(SystemError) in
              try System.write(socket, UnsafeRawBufferPointer(rebasing: raw[offsetA...]))
            }
          }.get()
        }
        guard case .processed(let written) = result else { return .wouldBlock }
        advance(by: written)
        progress()
      case .file(let fd, var offset, let remaining):
        guard
          case .processed(let sent) = try System.sendfile(
            socket, fd, offset: &offset, count: min(remaining, 1 << 20))
        else { return .wouldBlock }
        // The file got shorter than announced: the response cannot be completed.
        if sent == 0 { throw SystemError(call: "sendfile", errno: EIO) }
        if sent == remaining {
          try? System.close(fd)
          chunks.removeFirst()
        } else {
          chunks[0] = .file(fd: fd, offset: offset, remaining: remaining - sent)
        }
        progress()
      }
    }
    return .done
  }

  /// Drops everything still queued (closing files).
  mutating func discard() {
    for case .file(let fd, _, _) in chunks { try? System.close(fd) }
    chunks.removeAll()
  }

  private mutating func advance(by count: Int) {
    var left = count
    while left > 0, case .bytes(let bytes, let offset) = chunks.first {
      let available = bytes.count - offset
      if left >= available {
        left -= available
        chunks.removeFirst()
      } else {
        chunks[0] = .bytes(bytes, offset: offset + left)
        left = 0
      }
    }
  }

  private static func writev(_ socket: Int32, _ a: [UInt8], _ offsetA: Int, _ b: [UInt8], _ offsetB: Int)
    throws(SystemError) -> IOResult<Int>
  {
    try a.withUnsafeBytes { ra in
      b.withUnsafeBytes { rb -> Result<IOResult<Int>, SystemError> in
        var vectors = (
          iovec(
            iov_base: UnsafeMutableRawPointer(mutating: ra.baseAddress! + offsetA),
            iov_len: ra.count - offsetA),
          iovec(
            iov_base: UnsafeMutableRawPointer(mutating: rb.baseAddress! + offsetB),
            iov_len: rb.count - offsetB)
        )
        return withUnsafeMutablePointer(to: &vectors) { p in
          p.withMemoryRebound(to: iovec.self, capacity: 2) { v in
            Result { () throws(SystemError) in
              try System.writev(socket, UnsafeBufferPointer(start: v, count: 2))
            }
          }
        }
      }
    }.get()
  }
}
