import Testing

@testable import ImageContainers

@Suite struct PNGChunkReaderTests {
  static func chunk(_ type: String, _ data: [UInt8], declaredLength: UInt32? = nil) -> [UInt8] {
    let length = declaredLength ?? UInt32(data.count)
    return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
      + Array(type.utf8) + data + [0, 0, 0, 0]
  }

  /// The chunk types read from `bytes` with whether each was complete, and whether it threw.
  static func walk(_ bytes: [UInt8]) -> (chunks: [String], threw: Bool) {
    bytes.withUnsafeBytes { raw in
      guard var reader = PNGChunkReader(raw) else { return ([], false) }
      var chunks: [String] = []
      do {
        while let chunk = try reader.next() {
          chunks.append("\(chunk.type)\(chunk.isComplete ? "" : " cut") \(chunk.data)")
        }
      } catch {
        return (chunks, true)
      }
      return (chunks, false)
    }
  }

  @Test func chunksAreReadUpToIENDAndNothingAfter() {
    let png =
      PNGChunkReader.signature + Self.chunk("IHDR", [1, 2, 3]) + Self.chunk("IEND", [])
      + Self.chunk("tEXt", [9])
    #expect(Self.walk(png) == (["IHDR 16..<19", "IEND 31..<31"], false))
  }

  @Test func aChunkRunningPastTheDataIsTheLastOne() {
    let png =
      PNGChunkReader.signature + Self.chunk("IHDR", [1, 2, 3]) + Array(Self.chunk("IDAT", [1, 2]).prefix(10))
    #expect(Self.walk(png) == (["IHDR 16..<19", "IDAT cut 31..<33"], false))
    // Fewer than 8 bytes left: no header to read.
    #expect(Self.walk(PNGChunkReader.signature + [0, 0, 0]) == ([], false))
  }

  @Test func aLengthOver2GiBThrows() {
    let png = PNGChunkReader.signature + Self.chunk("IHDR", [], declaredLength: 0x8000_0000)
    #expect(Self.walk(png) == ([], true))
  }

  @Test func bytesWithoutTheSignatureHaveNoReader() {
    [UInt8]([0x89, 0x50, 0x4E, 0x47]).withUnsafeBytes { #expect(PNGChunkReader($0) == nil) }
  }
}
