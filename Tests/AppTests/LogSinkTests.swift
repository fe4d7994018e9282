import Foundation
import Synchronization
import TestSupport
import Testing

@testable import App

@Suite(.timeLimit(.minutes(1))) struct LogSinkTests {
  @Test func writesNeverBlockOnAStalledReaderAndDroppedLinesAreCounted() throws {
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    let sink = LogSink(fileDescriptor: fds[1])
    let line = [UInt8](repeating: UInt8(ascii: "a"), count: 1023) + [10]
    // More than the pipe, one batch the writer thread already took and the full buffer hold.
    let lines = 3 * LogSink.bufferLimit / line.count

    // Nobody reads the pipe yet: it fills after 64 KiB, and the writes must still return.
    let start = ContinuousClock.now
    for _ in 0..<lines { sink.write(line) }
    #expect(ContinuousClock.now - start < .seconds(5))

    let received = Mutex<[UInt8]>([])
    let readFD = fds[0]
    Thread.detachNewThread {
      var chunk = [UInt8](repeating: 0, count: 65_536)
      while true {
        let n = read(readFD, &chunk, chunk.count)
        if n <= 0 { return }
        received.withLock { $0 += chunk[..<n] }
      }
    }
    sink.flush()
    // flush() returns once the pipe took the bytes; the reader may still be catching up.
    // A writer thread that woke late may have taken a full buffer with drops already counted,
    // so there can be more than one note: every line is either written or counted in one.
    func tally() -> (written: Int, dropped: Int, notes: Int) {
      let text = received.withLock { String(decoding: $0, as: UTF8.self) }
      var written = 0
      var dropped = 0
      var notes = 0
      for line in text.split(separator: "\n") {
        if line.hasPrefix("aaaa") {
          written += 1
        } else if line.contains("lines dropped"),
          let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
          let count = object["dropped"] as? Int
        {
          dropped += count
          notes += 1
        }
      }
      return (written, dropped, notes)
    }
    _ = LiveTesting.waitUntil(seconds: 10) {
      let t = tally()
      return t.written + t.dropped >= lines
    }
    let (written, dropped, notes) = tally()
    #expect(notes >= 1)
    #expect(dropped > 0)
    #expect(written + dropped == lines)
  }

  @Test func linesArriveInOrder() throws {
    let path = ScratchSpace.file("attachd", suffix: "log")
    let sink = try LogSink(appendingTo: path)
    for i in 0..<2000 { sink.write(Array("\(i)\n".utf8)) }
    sink.flush()
    let numbers = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { Int($0)! }
    #expect(numbers == Array(0..<2000))
  }
}
