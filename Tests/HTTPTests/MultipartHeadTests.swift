import HTTP
import Testing

@Suite struct MultipartHeadTests {
  func head(_ disposition: String) -> MultipartPartHead? {
    let body = "--b\r\nContent-Disposition: \(disposition)\r\n\r\n\r\n--b--"
    guard case .begin(let head) = parseMultipartAtEverySplit(body, boundary: "b").first else { return nil }
    return head
  }

  @Test func extendedFilenameIsDecodedAndWinsOverPlainFilename() {
    let h = head(
      "form-data; name=\"file\"; filename=\"EURO rates.jpg\"; filename*=UTF-8''%e2%82%ac%20rates.jpg")
    #expect(h?.name == "file")
    #expect(h?.filename == "\u{20AC} rates.jpg")
  }

  @Test func extendedFilenameInLatin1WithLanguageIsDecoded() {
    #expect(
      head("form-data; name=f; filename*=iso-8859-1'en'%A3%20rates.txt")?.filename == "\u{A3} rates.txt")
  }

  @Test(arguments: [
    "form-data; filename=\"plain.jpg\"; filename*=UTF-8''%FF%FE.jpg",
    "form-data; filename=\"plain.jpg\"; filename*=UTF-8''%E2%8.jpg",
    "form-data; filename=\"plain.jpg\"; filename*=KOI8-R''abc",
    "form-data; filename=\"plain.jpg\"; filename*=no-quotes",
  ])
  func invalidExtendedFilenameFallsBackToPlainFilename(disposition: String) {
    #expect(head(disposition)?.filename == "plain.jpg")
  }

  @Test func quotedFilenamesKeepSemicolonsSpacesAndUnescapeQuotedPairs() {
    #expect(head("form-data; name=\"a;b\"; filename=\"x; y \\\"z\\\".png\"")?.filename == "x; y \"z\".png")
    #expect(head("form-data; name=\"a;b\"; filename=\"x\"")?.name == "a;b")
  }

  @Test func rawUTF8FilenameFromBrowsersIsKept() {
    #expect(
      head("form-data; name=\"f\"; filename=\"\u{1F431} k\u{E4}tzchen.heic\"")?.filename
        == "\u{1F431} k\u{E4}tzchen.heic")
  }

  @Test func parameterNamesAreCaseInsensitive() {
    let h = head("form-data; NAME=\"n\"; FileName=\"f.gif\"")
    #expect(h?.name == "n")
    #expect(h?.filename == "f.gif")
  }

  @Test(arguments: [
    ("multipart/form-data; boundary=abc", "abc"),
    ("Multipart/Form-Data;boundary=\"a b:c\"", "a b:c"),
    (
      "multipart/form-data; charset=utf-8; BOUNDARY=----WebKitFormBoundary7MA4YWxkTrZu0gW",
      "----WebKitFormBoundary7MA4YWxkTrZu0gW"
    ),
    ("multipart/form-data; boundary=" + String(repeating: "b", count: 70), String(repeating: "b", count: 70)),
  ])
  func boundaryIsReadFromTheContentType(contentType: String, boundary: String) {
    #expect(MultipartParser.boundary(fromContentType: contentType) == boundary)
  }

  @Test(arguments: [
    "multipart/mixed; boundary=abc",
    "application/octet-stream",
    "multipart/form-data",
    "multipart/form-data; boundary=",
    "multipart/form-data; boundary=\"\"",
    "multipart/form-data; boundary=\"ends in space \"",
    "multipart/form-data; boundary=" + String(repeating: "b", count: 71),
    "multipart/form-data; boundary=\"bad\\\"quote\"",
    "",
  ])
  func missingOrInvalidBoundaryGivesNil(contentType: String) {
    #expect(MultipartParser.boundary(fromContentType: contentType) == nil)
  }

  @Test func invalidBoundaryIsRefusedByTheParser() {
    #expect(throws: MultipartError(.invalidBoundary)) { try MultipartParser(boundary: "") }
    #expect(throws: MultipartError(.invalidBoundary)) { try MultipartParser(boundary: "a\r\nb") }
  }
}
