import Crypto
import HTTP
import Testing

@testable import Uploads

@Suite struct TusProtocolTests {
  static func head(_ fields: [(String, String)], method: String = "PATCH", framing: HTTPBodyFraming = .none)
    -> HTTPRequestHead
  {
    HTTPRequestHead(method: method, target: "/v1/tus/x", headers: HTTPHeaders(fields), framing: framing)
  }

  @Test(arguments: [("0", 0), ("7", 7), ("000", 0), ("123456789012345678", 123_456_789_012_345_678)])
  func numbersAreReadAsDecimalIntegers(text: String, value: Int) {
    #expect(TusProtocol.nonNegativeInteger(text) == value)
  }

  @Test(arguments: ["", "-1", "+1", " 1", "1 ", "1.0", "0x10", "1e3", "١", "1234567890123456789"])
  func anythingButPlainDigitsIsNoNumber(text: String) {
    #expect(TusProtocol.nonNegativeInteger(text) == nil)
  }

  @Test func aHeaderSentTwiceIsRefused() {
    let twice = Self.head([("Upload-Offset", "0"), ("Upload-Offset", "0")])
    #expect(throws: TusError.invalidUploadOffset) { try TusProtocol.uploadOffset(twice) }
    let lengths = Self.head([("Upload-Length", "5"), ("Upload-Length", "5")], method: "POST")
    #expect(throws: TusError.invalidUploadLength) { try TusProtocol.uploadLength(lengths) }
    #expect(throws: TusError.invalidUploadOffset) { try TusProtocol.uploadOffset(Self.head([])) }
  }

  @Test func deferLengthMustBeOne() throws {
    #expect(try TusProtocol.defersLength(Self.head([("Upload-Defer-Length", "1")], method: "POST")))
    #expect(try !TusProtocol.defersLength(Self.head([], method: "POST")))
    for value in ["0", "2", "true", " 1x"] {
      #expect(throws: TusError.invalidDeferLength) {
        try TusProtocol.defersLength(Self.head([("Upload-Defer-Length", value)], method: "POST"))
      }
    }
  }

  @Test func versionIsRequiredExceptOnOptions() {
    #expect(TusProtocol.checkVersion(Self.head([("Tus-Resumable", "1.0.0")]), method: "PATCH") == nil)
    #expect(TusProtocol.checkVersion(Self.head([]), method: "PATCH") == .versionUnsupported)
    #expect(
      TusProtocol.checkVersion(Self.head([("Tus-Resumable", "0.2.2")]), method: "HEAD") == .versionUnsupported
    )
    #expect(TusProtocol.checkVersion(Self.head([("Tus-Resumable", "0.2.2")]), method: "OPTIONS") == nil)
    #expect(TusProtocol.checkVersion(Self.head([]), method: "OPTIONS") == nil)
  }

  @Test func methodOverrideReplacesTheMethod() {
    #expect(
      TusProtocol.method(of: Self.head([("X-HTTP-Method-Override", "PATCH")], method: "POST")) == "PATCH")
    #expect(
      TusProtocol.method(of: Self.head([("X-HTTP-Method-Override", "DELETE")], method: "GET")) == "DELETE")
    #expect(TusProtocol.method(of: Self.head([], method: "POST")) == "POST")
    #expect(
      TusProtocol.method(of: Self.head([("X-HTTP-Method-Override", "patch")], method: "POST")) == "INVALID")
    #expect(
      TusProtocol.method(
        of: Self.head(
          [("X-HTTP-Method-Override", "PATCH"), ("X-HTTP-Method-Override", "DELETE")], method: "POST"))
        == "INVALID")
  }

  @Test func contentTypeIsTheOffsetStreamWhateverItsCaseAndParameters() {
    for value in [
      "application/offset+octet-stream", "Application/Offset+Octet-Stream",
      "application/offset+octet-stream; x=1",
    ] {
      #expect(TusProtocol.isOffsetStream(Self.head([("Content-Type", value)])))
    }
    for value in ["application/octet-stream", "text/plain", ""] {
      #expect(!TusProtocol.isOffsetStream(Self.head([("Content-Type", value)])))
    }
    #expect(!TusProtocol.isOffsetStream(Self.head([])))
  }

  @Test func aChecksumTrailerIsAnnouncedOnlyWithAChunkedBody() {
    let fields = [("Trailer", "Foo, upload-checksum")]
    #expect(TusProtocol.announcesChecksumTrailer(Self.head(fields, framing: .chunked)))
    #expect(!TusProtocol.announcesChecksumTrailer(Self.head(fields, framing: .contentLength(4))))
    #expect(!TusProtocol.announcesChecksumTrailer(Self.head([("Trailer", "Foo")], framing: .chunked)))
  }
}

@Suite struct TusMetadataTests {
  @Test func pairsDecodeAndTheTextIsKeptAsSent() throws {
    let text = "filename d29ybGRfZG9taW5hdGlvbl9wbGFuLnBkZg==,is_confidential,empty "
    let metadata = try TusMetadata(parsing: text, maxBytes: 1024)
    #expect(metadata.text == "filename d29ybGRfZG9taW5hdGlvbl9wbGFuLnBkZg==,is_confidential,empty")
    #expect(metadata.value("filename") == Array("world_domination_plan.pdf".utf8))
    #expect(metadata.value("is_confidential") == [])
    #expect(metadata.value("empty") == [])
    #expect(metadata.pairs.map(\.key) == ["filename", "is_confidential", "empty"])
  }

  @Test func spacesAroundPairsAreAllowed() throws {
    let metadata = try TusMetadata(parsing: "a YQ==, b Yg==", maxBytes: 1024)
    #expect(metadata.value("b") == Array("b".utf8))
  }

  @Test(arguments: [
    "", ",", "a YQ==,", ",a YQ==", "a YQ", "a YQ=", "a YQ==,a Yg==", "a  YQ==", "a YQ== x", "k\u{e9} YQ==",
    "a\u{1} YQ==", "a -_8=", " ",
  ])
  func anythingOutsideTheGrammarIsRefused(text: String) {
    #expect(throws: TusError.invalidMetadata) { try TusMetadata(parsing: text, maxBytes: 1024) }
  }

  @Test func metadataOverTheLimitIsRefused() {
    let text = "name " + Base64.encode([UInt8](repeating: 0x41, count: 900))
    #expect(throws: TusError.invalidMetadata) { try TusMetadata(parsing: text, maxBytes: 1000) }
    #expect(throws: Never.self) { try TusMetadata(parsing: text, maxBytes: 1300) }
  }
}

@Suite struct TusChecksumParsingTests {
  @Test func theSpecificationsExampleParses() throws {
    let checksum = try TusChecksum(parsing: "sha1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=")
    #expect(checksum.algorithm == .sha1)
    #expect(checksum.matches(MessageDigest.hash(Array("hello world".utf8), .sha1)))
    #expect(!checksum.matches(MessageDigest.hash(Array("hello world!".utf8), .sha1)))
  }

  @Test(arguments: MessageDigest.Algorithm.allCases)
  func everyAdvertisedAlgorithmParses(algorithm: MessageDigest.Algorithm) throws {
    let digest = MessageDigest.hash(Array("abc".utf8), algorithm)
    let checksum = try TusChecksum(parsing: algorithm.rawValue + " " + Base64.encode(digest))
    #expect(checksum == TusChecksum(algorithm: algorithm, digest: digest))
  }

  @Test(arguments: ["crc32 AAAAAA==", "SHA1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=", "sha512 AAAA"])
  func unknownAlgorithmsAreUnsupported(text: String) {
    #expect(throws: TusError.checksumAlgorithmUnsupported) { try TusChecksum(parsing: text) }
  }

  @Test(arguments: [
    "", "sha1", "sha1 ", "sha1 Kq5sNclPz7QV2+lfQIuc6R7oRu0", "sha1 Kq5sNclPz7QV2+lfQIuc6R7oRu0= x",
    "sha1 AAAA", "md5 Kq5sNclPz7QV2+lfQIuc6R7oRu0=", " Kq5sNclPz7QV2+lfQIuc6R7oRu0=",
  ])
  func malformedChecksumsAreRefused(text: String) {
    #expect(throws: TusError.invalidChecksum) { try TusChecksum(parsing: text) }
  }
}
