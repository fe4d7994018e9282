import Foundation
import TestSupport
import Testing

@testable import App

@Suite struct AccessLogTests {
  func entry(target: String, method: String = "GET") -> AccessLogRecord {
    AccessLogRecord(
      requestID: "r-1", method: method, target: target, status: 201, bytesIn: 12345, bytesOut: 678,
      durationMilliseconds: 12.3456, remoteAddress: "127.0.0.1:50000")
  }

  func parse(_ line: [UInt8]) throws -> [String: Any] {
    #expect(line.last == 0x0A)
    #expect(line.dropLast().contains(0x0A) == false)
    return try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
  }

  @Test func aLineIsOneJSONObjectWithEveryField() throws {
    let object = try parse(
      AccessLog.line(for: entry(target: "/v1/attachments"), time: "2026-11-30T07:00:00.000Z"))
    #expect(object["time"] as? String == "2026-11-30T07:00:00.000Z")
    #expect(object["request_id"] as? String == "r-1")
    #expect(object["method"] as? String == "GET")
    #expect(object["path"] as? String == "/v1/attachments")
    #expect(object["status"] as? Int == 201)
    #expect(object["bytes_in"] as? Int == 12345)
    #expect(object["bytes_out"] as? Int == 678)
    #expect(object["duration_ms"] as? Double == 12.346)
    #expect(object["remote"] as? String == "127.0.0.1:50000")
    #expect(object.count == 9)
  }

  @Test(arguments: [
    ("/v1/attachments?name=IMG_0001.HEIC&token=x", "/v1/attachments"),
    ("/a#frag", "/a"),
    ("/?", "/"),
  ])
  func theQueryNeverReachesTheLog(target: String, path: String) throws {
    let line = AccessLog.line(for: entry(target: target), time: "t")
    #expect(try parse(line)["path"] as? String == path)
    #expect(!String(decoding: line, as: UTF8.self).contains("IMG_0001"))
  }

  @Test func controlCharactersAndQuotesAreEscaped() throws {
    let object = try parse(AccessLog.line(for: entry(target: "/a\"b\\c\u{1}\n", method: "G\tET"), time: "t"))
    #expect(object["path"] as? String == "/a\"b\\c\u{1}\n")
    #expect(object["method"] as? String == "G\tET")
  }

  @Test func longPathsAreCut() throws {
    let object = try parse(
      AccessLog.line(for: entry(target: "/" + String(repeating: "é", count: 1000)), time: "t"))
    let path = try #require(object["path"] as? String)
    #expect(path.utf8.count <= AccessLog.maximumPathLength)
    #expect(path.utf8.count >= AccessLog.maximumPathLength - 1)
  }

  @Test func recordedLinesLandInTheSinkWithACurrentTimestamp() throws {
    let path = ScratchSpace.file("attachd", suffix: "log")
    let log = AccessLog(sink: try LogSink(appendingTo: path))
    log.record(entry(target: "/healthz"))
    log.record(entry(target: "/readyz"))
    log.flush()
    let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
    #expect(lines.count == 2)
    let object = try parse(Array((lines[0] + "\n").utf8))
    let time = try #require(object["time"] as? String)
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    let date = try #require(formatter.date(from: time))
    #expect(abs(date.timeIntervalSinceNow) < 60)
  }

  @Test(arguments: [0, 7, 10, 99, 1234, -5, Int.max, Int.min])
  func integersAreWrittenAsJSONNumbers(value: Int) {
    var json = JSONText()
    json.field("n", value)
    #expect(String(decoding: json.finish(), as: UTF8.self) == #"{"n":\#(value)}"#)
  }

  @Test(arguments: [
    (0.0, "0.000"), (0.0004, "0.000"), (1.2345, "1.235"), (1000.5, "1000.500"), (-3.0, "0.000"),
  ])
  func millisecondsHaveThreeDecimals(value: Double, text: String) {
    var json = JSONText()
    json.field("d", milliseconds: value)
    #expect(String(decoding: json.finish(), as: UTF8.self) == #"{"d":\#(text)}"#)
  }

  @Test func timestampsAreRFC3339InUTC() {
    #expect(JSONText.timestamp(seconds: 0, milliseconds: 7) == "1970-01-01T00:00:00.007Z")
    #expect(JSONText.timestamp(seconds: 1_798_700_000, milliseconds: 999) == "2026-12-31T06:53:20.999Z")
  }
}
