/// The bytes one writer holds between flushes: a fixed buffer and, at most, the tail of the one
/// slice that overflowed it (so a slice is never refused for want of room, and never grows the
/// buffer by reallocation and copy).
///
/// Not thread-safe by itself: the writer touches it under its state lock, and its flush reads
/// it outside that lock only while `flushing` keeps appends out — which makes the
/// `@unchecked Sendable` true.
final class WriteBuffer: @unchecked Sendable {
  private let storage: UnsafeMutableRawBufferPointer
  private var filled = 0
  private var overflow: UnsafeMutableRawBufferPointer?

  /// A buffer of `capacity` bytes (allocated now, freed with the value).
  init(capacity: Int) {
    storage = .allocate(byteCount: capacity, alignment: 16)
  }

  deinit {
    storage.deallocate()
    overflow?.deallocate()
  }

  /// Bytes held (buffer and overflow).
  var count: Int { filled + (overflow?.count ?? 0) }

  /// True once the buffer is full: the next append must wait for a flush.
  var isFull: Bool { filled == storage.count }

  /// Copies `bytes` in (what does not fit goes to the overflow); returns true when now full.
  ///
  /// Precondition: not full (the caller checks `isFull` first).
  func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
    precondition(!isFull, "append to a full write buffer")
    let head = min(storage.count - filled, bytes.count)
    UnsafeMutableRawBufferPointer(rebasing: storage[filled..<(filled + head)])
      .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<head]))
    filled += head
    if head < bytes.count {
      let tail = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count - head, alignment: 16)
      tail.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[head...]))
      overflow = tail
    }
    return isFull
  }

  /// Writes every held byte to `fd` at `offset`.
  func write(to fd: Int32, at offset: Int, path: String) throws {
    if filled > 0 {
      try FileSystem.writeAll(
        fd, UnsafeRawBufferPointer(rebasing: storage[0..<filled]), at: offset, path: path)
    }
    if let overflow {
      try FileSystem.writeAll(fd, UnsafeRawBufferPointer(overflow), at: offset + filled, path: path)
    }
  }

  /// Calls `body` with the held bytes in order: the buffer's, then the overflow's (if any).
  func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
    if filled > 0 { try body(UnsafeRawBufferPointer(rebasing: storage[0..<filled])) }
    if let overflow { try body(UnsafeRawBufferPointer(overflow)) }
  }

  /// Empties the buffer (after a committed flush), keeping its memory for the next bytes.
  func reset() {
    filled = 0
    overflow?.deallocate()
    overflow = nil
  }
}
