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
  /// Bytes queued and not yet written (buffers and file ranges).
  private(set) var queuedBytes = 0

  var isEmpty: Bool { chunks.isEmpty }

  /// Buffers gathered into one `writev` (head + body, or a chunk's size line, data and CRLF).
  static let maxGather = 8

  mutating func append(_ bytes: [UInt8]) {
    if !bytes.isEmpty {
      chunks.append(.bytes(bytes, offset: 0))
      queuedBytes += bytes.count
    }
  }

  mutating func appendFile(fd: Int32, offset: UInt64, length: UInt64) {
    if length > 0 {
      chunks.append(.file(fd: fd, offset: off_t(offset), remaining: Int(length)))
      queuedBytes += Int(length)
    } else {
      try? System.close(fd)
    }
  }

  /// Writes as much as the socket takes: consecutive buffers with one `write`/`writev`, files
  /// with `sendfile`. Calls `progress` after each write that moved bytes.
  mutating func flush(to socket: Int32, progress: () -> Void) throws(SystemError) -> FlushResult {
    while let first = chunks.first {
      switch first {
      case .bytes(let a, let offsetA):
        let result: IOResult<Int>
        if chunks.count > 1, case .bytes = chunks[1] {
          result = try gatherWrite(socket)
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
        queuedBytes -= sent
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
    queuedBytes = 0
  }

  private mutating func advance(by count: Int) {
    queuedBytes -= count
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

  /// One `writev` of the leading run of buffers (at most `maxGather`).
  private func gatherWrite(_ socket: Int32) throws(SystemError) -> IOResult<Int> {
    var count = 0
    while count < min(Self.maxGather, chunks.count), case .bytes = chunks[count] { count += 1 }
    return try withUnsafeTemporaryAllocation(of: iovec.self, capacity: count) {
      (vectors) throws(SystemError) -> IOResult<Int> in
      try pin(0, count, into: vectors) { () throws(SystemError) in
        try System.writev(socket, UnsafeBufferPointer(vectors))
      }
    }
  }

  /// Points `vectors[index...]` at the unwritten bytes of the buffers from `index` on, each
  /// pinned while `body` runs.
  private func pin(
    _ index: Int, _ count: Int, into vectors: UnsafeMutableBufferPointer<iovec>,
    _ body: () throws(SystemError) -> IOResult<Int>
  ) throws(SystemError) -> IOResult<Int> {
    guard index < count, case .bytes(let bytes, let offset) = chunks[index] else { return try body() }
    return try bytes.withUnsafeBytes { raw in
      Result { () throws(SystemError) -> IOResult<Int> in
        vectors[index] = iovec(
          iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress! + offset), iov_len: raw.count - offset)
        return try pin(index + 1, count, into: vectors, body)
      }
    }.get()
  }
}
