import Foundation
import ImageCodecs
import TestSupport
import Testing

/// libavcodec prints to standard error unless told otherwise; in attachd it must never (the
/// event log is JSON lines, and its messages are for the log handler only).
@Suite(.timeLimit(.minutes(1)))
struct HEVCLogTests {
  /// `attachd` beside the test bundle (`swift build --build-tests` builds both).
  static let binary = BuiltExecutable.attachd

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

    let errorPath = path.path + ".stderr"
    defer { try? FileManager.default.removeItem(atPath: errorPath) }
    let status = try Self.run(binary, ["bench-hevc", "--runs", "1", path.path], standardError: errorPath)
    let output = try String(contentsOfFile: errorPath, encoding: .utf8)
    #expect(status == 1)
    let lines = output.split(separator: "\n")
    #expect(
      lines.count == 1 && lines[0].hasPrefix("attachd bench-hevc:") && lines[0].contains("hevc corrupt"),
      "\(output)")
    #expect(!output.contains("PPS") && !output.contains("[hevc"), "\(output)")
  }

  /// Runs `binary` with `arguments`, standard error into the file at `standardError`, and
  /// returns its exit status. posix_spawn rather than Foundation's Process, whose `run` leaks a
  /// weak-reference side table (LeakSanitizer sees it).
  static func run(_ binary: String, _ arguments: [String], standardError: String) throws -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, standardError, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv = ([binary] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, binary, &actions, nil, argv, environ)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    // WIFEXITED / WEXITSTATUS are macros: exited normally when the low 7 bits are 0.
    return status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
  }
}
