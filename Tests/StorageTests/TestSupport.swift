import Dispatch
import Foundation
import Storage
import Synchronization
import TestSupport

/// A fresh directory under the system temp dir, removed when the value is released.
final class TemporaryDirectory: Sendable {
  let path: String

  /// A new directory under `parent`, or under the test process's `ScratchSpace` when nil.
  init(under parent: String? = nil) throws {
    path = try ScratchSpace.directory("attachd-storage", under: parent)
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }

  /// Every regular file below `path`, relative to it, sorted.
  func files(under subdirectory: String = "") -> [String] {
    let base = subdirectory.isEmpty ? path : path + "/" + subdirectory
    guard let enumerator = FileManager.default.enumerator(atPath: base) else { return [] }
    var found: [String] = []
    while let name = enumerator.nextObject() as? String {
      var isDirectory: ObjCBool = false
      if FileManager.default.fileExists(atPath: base + "/" + name, isDirectory: &isDirectory),
        !isDirectory.boolValue
      {
        found.append(name)
      }
    }
    return found.sorted()
  }
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
  private let current: Mutex<Date>

  init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = Mutex(start) }

  var now: Date { current.withLock { $0 } }

  func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }

  func set(_ date: Date) { current.withLock { $0 = date } }

  /// The clock as the closure `AttachmentStore` takes.
  var closure: @Sendable () -> Date { { [self] in self.now } }
}

/// Deterministic pseudo-random bytes (a fixed LCG), distinct per seed.
func sampleBytes(_ count: Int, seed: UInt64) -> [UInt8] {
  var state = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
  return (0..<count).map { _ in
    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    return UInt8(truncatingIfNeeded: state >> 33)
  }
}

let sampleSource = SourceInfo(
  format: "heic", width: 4032, height: 3024, bytes: 2_345_678, orientation: 6,
  orientationSource: "heif-transform",
  colourProfile: "Display P3")

/// Runs `body(0..<count)` on `count` real threads at once and waits for all.
///
/// Not `DispatchQueue.concurrentPerform`: that runs only as many at a time as there are cores
/// (two here), which would hide races that need many uploads in flight together.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
  let group = DispatchGroup()
  for worker in 0..<count {
    group.enter()
    let thread = Thread {
      body(worker)
      group.leave()
    }
    thread.start()
  }
  group.wait()
}
