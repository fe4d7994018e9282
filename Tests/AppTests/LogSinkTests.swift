import Foundation
import Synchronization
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
    _ = LiveTesting.waitUntil(seconds: 10) {
      received.withLock { String(decoding: $0.suffix(200), as: UTF8.self).contains("lines dropped") }
    }
    let text = received.withLock { String(decoding: $0, as: UTF8.self) }
    let written = text.split(separator: "\n").filter { $0.hasPrefix("aaaa") }.count
    let note = try #require(text.split(separator: "\n").first { $0.contains("lines dropped") })
    let object = try #require(try JSONSerialization.jsonObject(with: Data(note.utf8)) as? [String: Any])
    let dropped = try #require(object["dropped"] as? Int)
    #expect(dropped > 0)
    #expect(written + dropped == lines)
  }

  @Test func linesArriveInOrder() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("attachd-\(UUID()).log").path
    let sink = try LogSink(appendingTo: path)
    for i in 0..<2000 { sink.write(Array("\(i)\n".utf8)) }
    sink.flush()
    let numbers = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { Int($0)! }
    #expect(numbers == Array(0..<2000))
  }
}
