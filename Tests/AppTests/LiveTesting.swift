import Foundation
import TestSupport
import Testing

/// Real clients for live tests: curl as a subprocess, always under a time limit.
enum LiveTesting {
  /// What curl saw: status, headers (lower-cased names) and body.
  struct Reply {
    var status: Int
    var headers: [String: String]
    var body: Data

    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: body) as? [String: Any] }
  }

  /// Runs `executable` with `arguments`, killing it after `timeout` seconds; returns the exit
  /// status and standard output.
  static func run(_ executable: String, _ arguments: [String], timeout: Double = 10) throws -> (Int32, Data) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    let data = output.fileHandleForReading.readDataToEndOfFile()
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
      process.terminate()
      process.waitUntilExit()
      throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(executable) timed out"])
    }
    return (process.terminationStatus, data)
  }

  /// One request with curl (`-i`, no retries, 5 s limit).
  static func curl(_ url: String, method: String = "GET", headers: [String] = []) throws -> Reply {
    // curl wants -I for HEAD: with -X HEAD it would wait for a body that never comes.
    var arguments = ["-s", "-i", "--max-time", "5", url] + (method == "HEAD" ? ["-I"] : ["-X", method])
    for header in headers { arguments += ["-H", header] }
    let (status, data) = try run("/usr/bin/curl", arguments)
    #expect(status == 0, "curl exit status \(status)")
    return try parse(data)
  }

  static func parse(_ data: Data) throws -> Reply {
    let separator = Data("\r\n\r\n".utf8)
    guard let range = data.range(of: separator) else { throw CocoaError(.formatting) }
    let head = String(decoding: data[..<range.lowerBound], as: UTF8.self)
    let lines = head.components(separatedBy: "\r\n")
    let statusLine = lines[0].split(separator: " ")
    guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw CocoaError(.formatting) }
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
        in: .whitespaces)
    }
    return Reply(status: status, headers: headers, body: data[range.upperBound...])
  }

  /// A fresh empty directory under the system temporary directory.
  static func temporaryDirectory() throws -> String {
    try ScratchSpace.directory("attachd-live")
  }

  /// The lines of a log file, each parsed as a JSON object.
  static func jsonLines(_ path: String) throws -> [[String: Any]] {
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    return try text.split(separator: "\n").map {
      try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
  }

  /// Polls `condition` every 20 ms for at most `seconds`.
  static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if condition() { return true }
      usleep(20_000)
    }
    return condition()
  }
}
