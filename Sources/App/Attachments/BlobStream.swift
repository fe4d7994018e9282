import Foundation
import Server
import Storage

/// A stored image served from a blob store with no local files (S3): the bytes are read by one
/// streaming GET on a reader thread and handed to the connection as it asks for them, through a
/// bounded buffer, so a response never holds the whole image and a slow client slows the read
/// (the object store's own idle timeout and resumed GETs cover the pauses).
///
/// `open` waits for the read to start: an object store that is down answers the request with
/// a 503 before any header went out. Once streaming, a failure closes the connection (the client
/// sees a short body), which is all HTTP/1.1 allows after the status line.
final class BlobStream: ResponseBodyProducer, @unchecked Sendable {
  /// Bytes read ahead of the client at most.
  static let bufferLimit = 512 << 10
  /// Size of the chunks handed to the connection (reads arrive in libcurl's 16 KiB pieces).
  static let chunkSize = 64 << 10
  /// How long a read may wait for a client that takes nothing (the server's write timeout
  /// normally stops the stream long before).
  static let stallTimeout: TimeInterval = 60
  /// Streams reading at once at most: each holds a thread (blocking I/O, never on the event
  /// loop nor the image workers) and up to `bufferLimit` bytes. Past it a read waits for a
  /// free reader up to `readerWait`, then is refused as `storage_busy`.
  static let maxReaders = 256
  static let readerWait: TimeInterval = 5
  private static let readerSlots = DispatchSemaphore(value: maxReaders)

  // Guarded by `condition`.
  private let condition = NSCondition()
  private var chunks: [[UInt8]] = []
  private var buffered = 0
  private var waiting: (any ResponseBodySink)?
  private var ended: Bool?  // true: finished; false: failed
  private var stopped = false
  private var started: Result<BlobReadStart, any Error>?

  private init() {}

  /// The body of a HEAD answer: announces the length, reads nothing (the server never asks it).
  static func unread() -> BlobStream {
    let stream = BlobStream()
    stream.ended = false
    return stream
  }

  /// Starts reading `range` of `blob` and returns once its first bytes (or its failure) came.
  ///
  /// Throws what the store threw before the read started (`.notFound`, `.unavailable` …).
  static func open(_ blobs: any BlobStore, blob: BlobHash, range: Range<Int>) throws -> BlobStream {
    guard readerSlots.wait(timeout: .now() + readerWait) == .success else {
      throw StorageError(.busy, "all \(maxReaders) blob stream readers stayed busy for \(readerWait) s")
    }
    let stream = BlobStream()
    // Not a Dispatch queue: its pool is sized for work that does not block, and a few slow
    // clients would hold every thread of it.
    Thread.detachNewThread {
      stream.read(blobs, blob: blob, range: range)
      readerSlots.signal()
    }
    // The object store's own timeouts and retries bound this wait.
    stream.condition.lock()
    while stream.started == nil { stream.condition.wait() }
    let started = stream.started!
    stream.condition.unlock()
    _ = try started.get()
    return stream
  }

  func produce(into sink: any ResponseBodySink) {
    condition.lock()
    if !chunks.isEmpty {
      let chunk = chunks.removeFirst()
      buffered -= chunk.count
      condition.broadcast()
      condition.unlock()
      sink.write(chunk)
      return
    }
    guard let ended else {
      waiting = sink
      condition.unlock()
      return
    }
    condition.unlock()
    if ended { sink.finish() } else { sink.fail() }
  }

  func stop() {
    condition.lock()
    stopped = true
    chunks = []
    waiting = nil
    condition.broadcast()
    condition.unlock()
  }

  /// Thrown from the read's body to end it once nobody listens.
  private struct Stopped: Error {}

  // MARK: - The reader thread

  private func read(_ blobs: any BlobStore, blob: BlobHash, range: Range<Int>) {
    var pending: [UInt8] = []
    pending.reserveCapacity(Self.chunkSize)
    do {
      try blobs.read(
        blob, range: range,
        start: { start in
          self.condition.lock()
          self.started = .success(start)
          self.condition.broadcast()
          self.condition.unlock()
        },
        body: { bytes in
          pending.append(contentsOf: bytes)
          if pending.count >= Self.chunkSize {
            try self.enqueue(pending)
            pending.removeAll(keepingCapacity: true)
          }
        })
      if !pending.isEmpty { try enqueue(pending) }
      end(success: true)
    } catch {
      condition.lock()
      let failedBeforeStart = started == nil
      if failedBeforeStart { started = .failure(error) }
      condition.broadcast()
      condition.unlock()
      if !failedBeforeStart { end(success: false) }
    }
  }

  /// Hands a chunk to a waiting connection, or buffers it, waiting while the buffer is full.
  private func enqueue(_ chunk: [UInt8]) throws {
    let deadline = Date().addingTimeInterval(Self.stallTimeout)
    condition.lock()
    while buffered >= Self.bufferLimit && !stopped && condition.wait(until: deadline) {}
    guard !stopped, buffered < Self.bufferLimit else {
      condition.unlock()
      throw Stopped()
    }
    if let sink = waiting {
      waiting = nil
      condition.unlock()
      sink.write(chunk)
      return
    }
    chunks.append(chunk)
    buffered += chunk.count
    condition.unlock()
  }

  private func end(success: Bool) {
    condition.lock()
    ended = success
    let sink = waiting
    waiting = nil
    condition.unlock()
    guard let sink else { return }
    if success { sink.finish() } else { sink.fail() }
  }
}
