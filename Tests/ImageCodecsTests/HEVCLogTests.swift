import Foundation
import ImageCodecs
import Testing

/// libavcodec prints to standard error unless told otherwise; in attachd it must never (the
/// event log is JSON lines, and its messages are for the log handler only).
@Suite(.timeLimit(.minutes(1)))
struct HEVCLogTests {
  /// `attachd` beside the test bundle (`swift build --build-tests` builds both).
  static let binary: String? = {
    let candidates = [
      URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
        "attachd"),
      URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/debug/attachd"),
    ]
    return candidates.map(\.path).first { FileManager.default.isExecutableFile(atPath: $0) }
  }()

  /// A separate process, so that no other test's handler is set: a sample libavcodec complains
  /// about ("PPS id out of range") leaves standard error with our one-line error only.
  @Test func libavcodecWritesNothingToStandardErrorByDefault() throws {
    let binary = try #require(Self.binary, "attachd not built")
    let picture = try HEVCFixture.named("hevc-420-8bit-full.heic").picture()
    var damaged = picture.sample
    damaged.replaceSubrange(6..<10, with: [0xC0, 0x00, 0x00, 0x01])
    func uint32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(value >> (24 - 8 * $0) & 0xFF) } }
    let file =
      Array("HVCS".utf8) + uint32(picture.hvcC.count) + picture.hvcC + uint32(1)
      + uint32(damaged.count) + damaged
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("hevc-log-\(getpid()).hvcs")
    try Data(file).write(to: path)
    defer { try? FileManager.default.removeItem(at: path) }

    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = ["bench-hevc", "--runs", "1", path.path]
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 1)
    let lines = output.split(separator: "\n")
    #expect(
      lines.count == 1 && lines[0].hasPrefix("attachd bench-hevc:") && lines[0].contains("hevc corrupt"),
      "\(output)")
    #expect(!output.contains("PPS") && !output.contains("[hevc"), "\(output)")
  }
}
