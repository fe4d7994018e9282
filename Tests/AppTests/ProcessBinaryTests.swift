import Foundation
import ImageCodecs
import TestSupport
import Testing

/// The built `attachd process` command, run as a user (and `Scripts/bench-pipeline`) runs it.
@Suite(.enabled(if: ServeBinaryTests.binary != nil, "attachd binary not built")) struct ProcessBinaryTests {
  struct Run {
    var status: Int32
    var stderr: String
  }

  static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Run {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try #require(ServeBinaryTests.binary))
    process.arguments = arguments
    process.environment = environment
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let text = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Run(status: process.terminationStatus, stderr: String(decoding: text, as: UTF8.self))
  }

  @Test(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
  func anIPhoneHEICBecomesAnUprightJPEGWithNoMetadata() throws {
    let output = try ScratchSpace.directory("attachd-process") + "/out.jpg"
    let input = try #require(Corpus.directory).appendingPathComponent("heic-iphonexs-irot-exif6-gps.heic")
      .path
    let result = try Self.run(["process", input, output])
    #expect(result.status == 0, "\(result.stderr)")
    let jpeg = try [UInt8](Data(contentsOf: URL(fileURLWithPath: output)))
    let pixels = try JPEGCodec.decode(jpeg)
    // Stored 4032 × 3024 with a quarter turn: upright it is portrait, fitted to 2048.
    #expect((pixels.width, pixels.height) == (1536, 2048))
    #expect(JPEGCodec.iccProfile(jpeg) == nil)
    // No APP1 (EXIF, XMP) marker and no "Exif" or GPS bytes anywhere.
    let data = Data(jpeg)
    #expect(data.range(of: Data([0xFF, 0xE1])) == nil)
    #expect(data.range(of: Data("Exif".utf8)) == nil)
  }

  @Test func aTruncatedFileIsOneLineOnStandardErrorAndNoOutputFile() throws {
    let directory = try ScratchSpace.directory("attachd-process")
    let input = directory + "/cut.jpg"
    // A JPEG header and nothing else.
    try Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0])
      .write(to: URL(fileURLWithPath: input))
    let result = try Self.run(["process", input, directory + "/out.jpg"])
    #expect(result.status != 0)
    #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    #expect(!FileManager.default.fileExists(atPath: directory + "/out.jpg"))
  }

  /// The shared objects a run of `arguments` maps, from the dynamic linker's own account
  /// (LD_DEBUG=files names every object it loads, dlopen'ed ones included).
  static func mapped(_ arguments: [String]) throws -> String {
    let result = try run(arguments, environment: ["LD_DEBUG": "files"])
    #expect(result.status == 0)
    #expect(result.stderr.contains("libturbojpeg"), "LD_DEBUG gave nothing to check")
    return result.stderr
  }

  @Test(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
  func librariesAreMappedOnlyByTheInputsThatNeedThem() throws {
    let corpus = try #require(Corpus.directory)
    let output = try ScratchSpace.directory("attachd-process") + "/out.jpg"
    // Decoded in this process (`--no-sandbox`): the sandbox's helper opens every codec library
    // before it locks down, so what a decode needs is seen where it runs in-process.
    // A JPEG needs neither the storage clients, nor the HEVC decoder's ~95 libraries, nor libheif
    // and its codecs.
    let jpeg = try Self.mapped([
      "process", corpus.appendingPathComponent("jpeg-iphone6-gps.jpg").path, output, "--no-sandbox",
    ])
    for library in ["libcurl", "libpq", "libavcodec", "libheif", "libde265"] {
      #expect(!jpeg.contains(library), "\(library)")
    }
    // An iPhone HEIC opens libavcodec (and libavutil with it) when its first tile is decoded;
    // the fast path reads the container itself, so libheif stays closed.
    let heic = try Self.mapped([
      "process", corpus.appendingPathComponent("heic-iphonexs-irot-exif6-gps.heic").path, output,
      "--no-sandbox",
    ])
    #expect(heic.contains("libavcodec.so.59") && heic.contains("libavutil.so.57"))
    for library in ["libcurl", "libpq", "libheif"] { #expect(!heic.contains(library), "\(library)") }
    // An AVIF is libheif's (with its decoders); not the HEVC decoder's.
    let avif = try Self.mapped([
      "process", corpus.appendingPathComponent("avif-iphone-gps-p3.avif").path, output, "--no-sandbox",
    ])
    #expect(avif.contains("libheif.so.1"))
    for library in ["libcurl", "libpq", "libavcodec"] { #expect(!avif.contains(library), "\(library)") }
  }
}
