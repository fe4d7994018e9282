import Foundation
import Glibc
import Synchronization

/// Bytes held aside until they may be used: a tus chunk until its checksum is verified, since
/// a chunk that fails its check must leave the upload untouched.
///
/// The first `memoryBytes` are kept in memory; beyond that, each full buffer is moved to an
/// anonymous scratch file (created in `directory` and unlinked at once, so it vanishes when
/// closed, or with the process), so a 64 MiB chunk costs its buffer, not 64 MiB.
///
/// Threading: `append` may run on the event loop (it only copies); `spill`, `finish`,
/// `forEachPiece` and `close` do I/O: call them off the loop, never two at once, and never
/// while an `append` runs (the caller pauses reading while they run).
public final class HeldBytes: Sendable {
  private struct State {
    var buffer: WriteBuffer
    var fd: Int32 = -1
    /// Bytes in the scratch file.
    var spilled = 0
    var closed = false
  }

  private let directory: String
  private let state: Mutex<State>

  /// An empty hold whose memory part is `memoryBytes`, spilling to files in `directory`.
  public init(directory: String, memoryBytes: Int) {
    precondition(memoryBytes > 0, "memoryBytes must be positive")
    self.directory = directory
    state = Mutex(State(buffer: WriteBuffer(capacity: memoryBytes)))
  }

  deinit { close() }

  /// Bytes held.
  public var count: Int { state.withLock { $0.spilled + $0.buffer.count } }

  /// Copies a slice in; true when the memory part is full and `spill` must run before the next
  /// append. Never blocks on I/O.
  public func append(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
    try state.withLock { state in
      guard !state.closed else { throw StorageError(.invalidArgument, "append to closed held bytes") }
      guard !state.buffer.isFull else { throw StorageError(.invalidArgument, "append to full held bytes") }
      guard bytes.count > 0 else { return false }
      return state.buffer.append(bytes)
    }
  }

  /// Shows the bytes in memory to `observe` (e.g. a digest), then moves them to the scratch file.
  public func spill(_ observe: (UnsafeRawBufferPointer) -> Void) throws {
    try state.withLock { state in
      guard state.buffer.count > 0 else { return }
      state.buffer.forEachChunk(observe)
      if state.fd < 0 { state.fd = try Self.scratchFile(in: directory) }
      try state.buffer.write(to: state.fd, at: state.spilled, path: directory)
      state.spilled += state.buffer.count
      state.buffer.reset()
    }
  }

  /// Shows the bytes still in memory to `observe` (the end of the chunk), leaving them there.
  public func observeMemory(_ observe: (UnsafeRawBufferPointer) -> Void) {
    state.withLock { $0.buffer.forEachChunk(observe) }
  }

  /// Calls `body` with every held byte in order, in pieces of at most `pieceBytes` (read back
  /// from the scratch file, then from memory).
  public func forEachPiece(pieceBytes: Int, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
    precondition(pieceBytes > 0, "pieceBytes must be positive")
    try state.withLock { state in
      if state.spilled > 0 {
        let piece = UnsafeMutableRawBufferPointer.allocate(
          byteCount: min(pieceBytes, state.spilled), alignment: 16)
        defer { piece.deallocate() }
        var offset = 0
        while offset < state.spilled {
          let want = min(piece.count, state.spilled - offset)
          let read = try FileSystem.readAll(
            state.fd, into: UnsafeMutableRawBufferPointer(rebasing: piece[0..<want]), at: offset,
            path: directory)
          guard read == want else {
            throw StorageError(
              .io, "scratch file in \(directory) ended at \(offset + read) of \(state.spilled)")
          }
          try body(UnsafeRawBufferPointer(rebasing: piece[0..<want]))
          offset += want
        }
      }
      try state.buffer.forEachChunk { bytes in
        var start = 0
        while start < bytes.count {
          let end = min(bytes.count, start + pieceBytes)
          try body(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
          start = end
        }
      }
    }
  }

  /// Drops every byte and the scratch file; later appends are refused.
  public func close() {
    state.withLock { state in
      guard !state.closed else { return }
      state.closed = true
      if state.fd >= 0 { FileSystem.close(state.fd) }
      state.fd = -1
      state.buffer.reset()
    }
  }

  /// The name prefix of scratch files (seen only between their creation and unlink).
  static let prefix = ".held-"

  /// Removes scratch files a crash left between creating and unlinking one; call at start-up,
  /// while no hold is open in `directory`. Returns how many went.
  @discardableResult
  public static func removeLeftovers(in directory: String) throws -> Int {
    var removed = 0
    for name in try FileSystem.list(directory) where name.hasPrefix(prefix) {
      if try FileSystem.unlink(directory + "/" + name) { removed += 1 }
    }
    return removed
  }

  /// A new file in `directory`, already unlinked: only the descriptor keeps it.
  private static func scratchFile(in directory: String) throws -> Int32 {
    let path = directory + "/" + prefix + UUID().uuidString
    let fd = try FileSystem.open(path, O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
    do {
      _ = try FileSystem.unlink(path)
    } catch {
      FileSystem.close(fd)
      throw error
    }
    return fd
  }
}
