import Foundation
import Testing

@testable import Storage

@Suite struct HeldBytesTests {
  static func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ Int(seed)) }
  }

  /// Appends `input` in `slice`-byte slices, spilling whenever asked; returns what `observe` saw.
  static func fill(_ held: HeldBytes, _ input: [UInt8], slice: Int) throws -> [UInt8] {
    var seen: [UInt8] = []
    var start = 0
    while start < input.count {
      let end = min(input.count, start + slice)
      let full = try input[start..<end].withUnsafeBytes { try held.append($0) }
      if full { try held.spill { seen += $0 } }
      start = end
    }
    held.observeMemory { seen += $0 }
    return seen
  }

  static func readBack(_ held: HeldBytes, piece: Int) throws -> [UInt8] {
    var out: [UInt8] = []
    try held.forEachPiece(pieceBytes: piece) { bytes in
      #expect(bytes.count <= piece)
      out += bytes
    }
    return out
  }

  @Test(arguments: [(0, 10), (100, 7), (4096, 4096), (10_000, 1000), (50_000, 333)])
  func bytesComeBackInOrderWhetherHeldInMemoryOrSpilled(count: Int, slice: Int) throws {
    let directory = try TemporaryDirectory()
    let held = HeldBytes(directory: directory.path, memoryBytes: 4096)
    let input = Self.bytes(count)
    let seen = try Self.fill(held, input, slice: slice)
    #expect(seen == input)
    #expect(held.count == count)
    #expect(try Self.readBack(held, piece: 1000) == input)
    #expect(try Self.readBack(held, piece: 64 << 10) == input)
    held.close()
    #expect(throws: StorageError.self) { try [1].withUnsafeBytes { try held.append($0) } }
  }

  @Test func theScratchFileIsNeverVisibleInItsDirectory() throws {
    let directory = try TemporaryDirectory()
    let held = HeldBytes(directory: directory.path, memoryBytes: 1024)
    _ = try Self.fill(held, Self.bytes(10_000), slice: 512)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    held.close()
  }

  @Test func appendingToAFullBufferIsRefusedUntilItSpills() throws {
    let directory = try TemporaryDirectory()
    let held = HeldBytes(directory: directory.path, memoryBytes: 16)
    #expect(try Self.bytes(20).withUnsafeBytes { try held.append($0) })
    #expect(throws: StorageError.self) { try [1].withUnsafeBytes { try held.append($0) } }
    try held.spill { _ in }
    #expect(try !Self.bytes(4).withUnsafeBytes { try held.append($0) })
    #expect(held.count == 24)
  }

  @Test func leftoversOfACrashAreRemovedAndNothingElse() throws {
    let directory = try TemporaryDirectory()
    for name in [".held-1", ".held-2", "index.sqlite", "held-3"] {
      #expect(FileManager.default.createFile(atPath: directory.path + "/" + name, contents: Data([1])))
    }
    #expect(try HeldBytes.removeLeftovers(in: directory.path) == 2)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
        "held-3", "index.sqlite",
      ])
  }
}
