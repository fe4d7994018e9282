import Foundation
import HTTP
import Testing

/// Inputs the fuzzers found where a split of the bytes changed the outcome; each must now give
/// the same events at every split.
@Suite struct FuzzRegressionTests {
  @Test func garbageFirstByteIsReportedBeforeAnOverlongRequestLine() {
    let bytes = [UInt8](repeating: 0xD3, count: 78) + Array("\n a\r\n b\r\r\n".utf8)
    let seen = parseAtEverySplit(bytes, limits: .init(maxRequestLineBytes: 48))
    #expect(seen == [.error(.invalidRequestLine)])
  }

  @Test func totalLimitIsCheckedWhereThePreambleEndsNotAfterTheNextPartHeader() throws {
    let base64 =
      "cHJlYW1ibGUNCi0tYjB0ZW50LURpc3Bvc2l0aW9uOiBmb3JtLWRhdGE7IG5hbWU9ImEiDQoNCnZhbHVlDQotLWIwdW5kDQpDb250ZW50"
      + "LUQsc3Bvc2l0aW9uOiBmb3JtLWRhdGE7IG5hbWU9ImYiOyBmYWxlbmFtZT0ieC5qcGciOyBmaWxlbmFtZSo9VVRGLTgnJyVFMiU4MiVB"
      + "Qy5qcGcNCkNvbnRlbnQtVHlwZTogaW1hZ2UvanBlZw0KDQr/2A0KLS1iMP/ZDQotLWIwdW5kLS0NCmVwaWxvZ3Vl"
    let bytes = Array(try #require(Data(base64Encoded: base64)))
    #expect(
      parseMultipartAtEverySplit(bytes, boundary: "b0und", limits: .init(maxTotalBytes: 64))
        == [.error(.bodyTooLarge)])
    #expect(parseMultipartAtEverySplit(bytes, boundary: "b0und") == [.error(.invalidPartHeader)])
  }
}
