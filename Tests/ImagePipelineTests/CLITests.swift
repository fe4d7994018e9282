import Foundation
import ImageContainers
import PipelineCLI
import TestSupport
import Testing

@testable import ImagePipeline

@Suite(.enabled(if: corpusPresent, "skipped: corpus not present"))
struct CLITests {
  static func temporaryDirectory() throws -> URL {
    URL(fileURLWithPath: try ScratchSpace.directory("attachd-cli"))
  }

  static func corpusPath(_ name: String) -> String {
    corpusDirectory!.appendingPathComponent(name).path
  }

  @Test func processWritesAVerifiedJPEGAndNothingElse() throws {
    let dir = try Self.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let out = dir.appendingPathComponent("out.jpg").path
    var errors: [String] = []
    let status = ProcessCLI.run(
      [Self.corpusPath("heic-misnamed-as.jpg"), out, "--max-edge", "64"], stderr: { errors.append($0) })
    #expect(status == 0 && errors.isEmpty)
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))
    try JPEGOutputVerifier.verify(bytes)
    #expect(try JPEGMarkerWalker.read(bytes).width == 64)
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["out.jpg"])
  }

  @Test func rejectedInputLeavesNoFileAndOneLineWithTheCode() throws {
    let dir = try Self.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let out = dir.appendingPathComponent("out.jpg").path
    var errors: [String] = []
    let status = ProcessCLI.run(
      [Self.corpusPath("jpeg-bomb-20000x14000.jpg"), out], stderr: { errors.append($0) })
    #expect(status == 65)
    #expect(errors.count == 1 && errors[0].hasPrefix("attachd: pixel_limit: ") && !errors[0].contains("\n"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
  }

  @Test func usageErrorsExit64() {
    var errors: [String] = []
    #expect(ProcessCLI.run(["only-one"], stderr: { errors.append($0) }) == 64)
    #expect(ProcessCLI.run(["a", "b", "--quality", "900"], stderr: { errors.append($0) }) == 64)
    #expect(ProcessCLI.run(["a", "b", "--bogus"], stderr: { errors.append($0) }) == 64)
  }

  @Test func inspectReportsOrientationSourceMetadataAndSizes() throws {
    var output = ""
    let status = InspectCLI.run(
      [Self.corpusPath("heic-iphonexs-irot-exif6-gps.heic")], stdout: { output += $0 }, stderr: { _ in })
    #expect(status == 0)
    let json = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
    #expect(json["format"] as? String == "heif")
    let orientation = try #require(json["orientation"] as? [String: Any])
    #expect(orientation["source"] as? String == "heif-transforms" && orientation["value"] as? Int == 6)
    let display = try #require(json["display"] as? [String: Int])
    #expect(display["width"] == 3024 && display["height"] == 4032)
    let found = try #require(json["metadata_found"] as? [String])
    #expect(found.contains("gps") && found.contains("exif"))
    #expect((json["would_strip"] as? [String]) == found)
  }

  @Test func inspectOfNonImageFailsWithCode() {
    var errors: [String] = []
    let status = InspectCLI.run(
      [Self.corpusPath("not-image-pdf.jpg")], stdout: { _ in }, stderr: { errors.append($0) })
    #expect(status == 65 && errors == ["attachd: unsupported_format: PDF is not a supported image format"])
  }
}
