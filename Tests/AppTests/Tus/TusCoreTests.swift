import Foundation
import HTTP
import Testing

@testable import App

/// tus 1.0 core, creation and termination, byte-exact over a socket against the live server.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TusCoreTests {
  typealias S = TusServer

  @Test func optionsAdvertisesVersionExtensionsMaxSizeAndAlgorithms() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    // OPTIONS needs no Tus-Resumable (the specification says to ignore it there).
    let options = try tus.request("OPTIONS", "/v1/tus", [S.acme])
    #expect(options.status == 204)
    #expect(options["Tus-Resumable"] == "1.0.0")
    #expect(options["Tus-Version"] == "1.0.0")
    #expect(
      options["Tus-Extension"]
        == "creation,creation-with-upload,creation-defer-length,termination,expiration,checksum,checksum-trailer"
    )
    // The larger of the image and video limits: what a body is cannot be known before its bytes.
    #expect(options["Tus-Max-Size"] == String(512 << 20))
    #expect(options["Tus-Checksum-Algorithm"] == "sha1,sha256,md5")
    #expect(try tus.request("OPTIONS", "/v1/tus/upl_0", [S.acme, ("Tus-Resumable", "0.2.2")]).status == 204)
    let anonymous = try tus.request("OPTIONS", "/v1/tus", [])
    #expect(anonymous.status == 401 && anonymous.code == "unauthorized")
    #expect(anonymous["Tus-Resumable"] == "1.0.0")
  }

  @Test func everyRequestButOptionsNeedsTusResumable() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let path = try tus.create(length: 10)
    for (method, target) in [
      ("POST", "/v1/tus"), ("HEAD", path), ("GET", path), ("PATCH", path), ("DELETE", path),
    ] {
      for version in [nil, "0.2.2", "1.0.0, 0.2.2"] as [String?] {
        var fields = [S.acme, ("Upload-Length", "10"), ("Upload-Offset", "0"), S.stream]
        if let version { fields.append(("Tus-Resumable", version)) }
        let response = try tus.request(method, target, fields, body: method == "HEAD" ? nil : [])
        #expect(response.status == 412, "\(method) \(version ?? "none")")
        #expect(response["Tus-Version"] == "1.0.0")
        #expect(response["Tus-Resumable"] == "1.0.0")
        if method != "HEAD" { #expect(response.code == "tus_version_unsupported") }
      }
    }
    // Nothing was done: the upload still stands at 0.
    #expect(try tus.request("HEAD", path, [S.tus, S.acme])["Upload-Offset"] == "0")
  }

  @Test func creationAnswersAnAbsoluteLocationAndHeadTellsTheUploadsState() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let metadata = "filename cGhvdG8ucG5n,is_confidential"
    let created = try tus.request(
      "POST", "/v1/tus", [S.tus, S.acme, ("Upload-Length", "100"), ("Upload-Metadata", metadata)], body: [])
    #expect(created.status == 201)
    let location = try #require(created["Location"])
    #expect(location.hasPrefix("http://127.0.0.1:\(tus.port)/v1/tus/upl_"))
    #expect(created["Tus-Resumable"] == "1.0.0")
    let expires = try #require(created["Upload-Expires"])
    let expiry = try #require(Self.date(expires))
    #expect(abs(expiry.timeIntervalSinceNow - 86_400) < 10)
    let path = try #require(URL(string: location)?.path)
    let head = try tus.request("HEAD", path, [S.tus, S.acme])
    #expect(head.status == 200)
    #expect(head["Upload-Offset"] == "0")
    #expect(head["Upload-Length"] == "100")
    #expect(head["Upload-Defer-Length"] == nil)
    #expect(head["Upload-Metadata"] == metadata)
    #expect(head["Cache-Control"] == "no-store")
    #expect(head["Upload-Expires"] == expires)
    #expect(head["Content-Location"] == nil)
  }

  @Test func tusKitsHeaderSpellingAndMetadataAreAccepted() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    // TUSKit writes `TUS-Resumable`, an `Upload-Extension` of its own and ", " between pairs.
    let metadata = "fileName SU1HXzAwMDEuSEVJQw==, filetype aW1hZ2UvaGVpYw=="
    let created = try tus.request(
      "POST", "/v1/tus",
      [
        ("TUS-Resumable", "1.0.0"), S.acme, ("Upload-Extension", "creation"), ("Upload-Length", "10"),
        ("Upload-Metadata", metadata),
      ], body: [])
    #expect(created.status == 201)
    let location = try #require(created["Location"])
    let path = try #require(URL(string: location)?.path)
    let head = try tus.request("HEAD", path, [("TUS-Resumable", "1.0.0"), S.acme])
    #expect(head["Upload-Metadata"] == metadata && head["Upload-Length"] == "10")
  }

  @Test func locationFollowsTheProxysSchemeOrThePublicURL() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let forwarded = try tus.request(
      "POST", "/v1/tus",
      [S.tus, S.acme, ("Upload-Length", "5"), ("X-Forwarded-Proto", "https")], body: [])
    #expect(forwarded["Location"]?.hasPrefix("https://127.0.0.1:\(tus.port)/v1/tus/upl_") == true)
    let fixed = try TusServer { $0.attachments.publicBaseURL = "https://uploads.example.com" }
    defer { fixed.stop() }
    let created = try fixed.request("POST", "/v1/tus", [S.tus, S.acme, ("Upload-Length", "5")], body: [])
    #expect(created["Location"]?.hasPrefix("https://uploads.example.com/v1/tus/upl_") == true)
  }

  @Test(
    arguments: [
      ([], 400, "upload_length_required"),
      ([("Upload-Length", "5"), ("Upload-Defer-Length", "1")], 400, "upload_length_required"),
      ([("Upload-Defer-Length", "2")], 400, "invalid_upload_defer_length"),
      ([("Upload-Length", "-1")], 400, "invalid_upload_length"),
      ([("Upload-Length", "1e3")], 400, "invalid_upload_length"),
      ([("Upload-Length", "5"), ("Upload-Length", "5")], 400, "invalid_upload_length"),
      ([("Upload-Length", "0")], 400, "empty"),
      ([("Upload-Length", String((512 << 20) + 1))], 413, "payload_too_large"),
      ([("Upload-Length", "5"), ("Upload-Metadata", "name notbase64!")], 400, "invalid_upload_metadata"),
      ([("Upload-Length", "5"), ("Upload-Metadata", "a YQ==,a YQ==")], 400, "invalid_upload_metadata"),
      ([("Upload-Length", "5"), ("Upload-Concat", "partial")], 400, "tus_concatenation_unsupported"),
    ] as [([(String, String)], Int, String)])
  func badCreationsAreRefusedWithTheirCode(fields: [(String, String)], status: Int, code: String) throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let response = try tus.request("POST", "/v1/tus", [S.tus, S.acme] + fields, body: [])
    #expect(response.status == status)
    #expect(response.code == code)
    #expect(response["Content-Type"] == "application/problem+json")
    #expect(response["Location"] == nil)
  }

  @Test func patchesAppendAtTheOffsetAndTheLastOneAnswersThePipelinesResult() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let image = S.png()
    let path = try tus.create(length: image.count)
    let cut = image.count / 3
    let first = try tus.patch(path, offset: 0, Array(image[..<cut]))
    #expect(first.status == 204)
    #expect(first["Upload-Offset"] == String(cut))
    #expect(first["Upload-Expires"] != nil)
    #expect(first["Content-Location"] == nil)
    // The same chunk again: the offset moved on, nothing is written twice.
    let again = try tus.patch(path, offset: 0, Array(image[..<cut]))
    #expect(again.status == 409 && again.code == "upload_offset_mismatch")
    #expect(again["Upload-Offset"] == String(cut))
    let last = try tus.patch(path, offset: cut, Array(image[cut...]))
    #expect(last.status == 204)
    #expect(last["Upload-Offset"] == String(image.count))
    let attachment = try #require(last["Content-Location"])
    #expect(attachment.hasPrefix("/v1/attachments/att_"))
    // HEAD says it is complete and where it went; GET gives the record.
    let head = try tus.request("HEAD", path, [S.tus, S.acme])
    #expect(head["Upload-Offset"] == String(image.count) && head["Upload-Length"] == String(image.count))
    #expect(head["Content-Location"] == attachment)
    #expect(head["Upload-Expires"] == last["Upload-Expires"])
    let get = try tus.request("GET", path, [S.tus, S.acme])
    #expect(get.status == 200 && get["Content-Location"] == attachment)
    let meta = try tus.request("GET", attachment + "/meta", [S.acme])
    #expect(get.json?["id"] as? String == meta.json?["id"] as? String)
    #expect(S.content(try #require(get.json)) == S.content(try tus.plainRecord(image)))
    // The final PATCH repeated (its answer lost): the same answer, nothing processed twice.
    let repeated = try tus.patch(path, offset: image.count, [])
    #expect(repeated.status == 204 && repeated["Content-Location"] == attachment)
    // More bytes after the end are refused before they are read.
    let past = try tus.patch(path, offset: image.count, [1, 2, 3])
    #expect(past.status == 413 && past.code == "payload_too_large")
  }

  @Test func aPatchNeedsTheOffsetStreamTypeAndAnOffset() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let path = try tus.create(length: 10)
    let plain = try tus.request(
      "PATCH", path, [S.tus, S.acme, ("Content-Type", "application/octet-stream"), ("Upload-Offset", "0")],
      body: [1, 2])
    #expect(plain.status == 415 && plain.code == "tus_content_type")
    let none = try tus.request("PATCH", path, [S.tus, S.acme, S.stream], body: [1, 2])
    #expect(none.status == 400 && none.code == "invalid_upload_offset")
    let over = try tus.patch(path, offset: 0, [UInt8](repeating: 7, count: 11))
    #expect(over.status == 413 && over.code == "payload_too_large")
    #expect(over["Upload-Offset"] == "0")
    #expect(try tus.request("HEAD", path, [S.tus, S.acme])["Upload-Offset"] == "0")
  }

  @Test func aDeferredLengthIsDeclaredByALaterPatch() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let image = S.png(seed: 2)
    let path = try tus.create(length: nil)
    let head = try tus.request("HEAD", path, [S.tus, S.acme])
    #expect(head["Upload-Defer-Length"] == "1" && head["Upload-Length"] == nil)
    let first = try tus.patch(path, offset: 0, Array(image[..<100]))
    #expect(first.status == 204 && first["Upload-Offset"] == "100")
    #expect(try tus.request("HEAD", path, [S.tus, S.acme])["Upload-Defer-Length"] == "1")
    let wrong = try tus.patch(path, offset: 100, [], extra: [("Upload-Length", "50")])
    #expect(wrong.status == 400 && wrong.code == "upload_length_mismatch")
    let last = try tus.patch(
      path, offset: 100, Array(image[100...]), extra: [("Upload-Length", String(image.count))])
    #expect(last.status == 204 && last["Content-Location"] != nil)
    let done = try tus.request("HEAD", path, [S.tus, S.acme])
    #expect(done["Upload-Length"] == String(image.count) && done["Upload-Defer-Length"] == nil)
  }

  @Test func creationWithUploadTakesTheFirstBytesOrTheWholeImage() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let image = S.png(seed: 3)
    let partial = try tus.request(
      "POST", "/v1/tus", [S.tus, S.acme, S.stream, ("Upload-Length", String(image.count))],
      body: Array(image[..<64]))
    #expect(partial.status == 201)
    #expect(partial["Upload-Offset"] == "64")
    #expect(partial["Upload-Expires"] != nil)
    let partialLocation = try #require(partial["Location"])
    let path = try #require(URL(string: partialLocation)?.path)
    #expect(try tus.patch(path, offset: 64, Array(image[64...]))["Content-Location"] != nil)
    let whole = try tus.request(
      "POST", "/v1/tus", [S.tus, S.acme, S.stream, ("Upload-Length", String(image.count))], body: image)
    #expect(whole.status == 201)
    #expect(whole["Location"]?.contains("/v1/tus/upl_") == true)
    #expect(whole["Upload-Offset"] == String(image.count))
    #expect(whole["Content-Location"]?.hasPrefix("/v1/attachments/att_") == true)
    #expect(S.content(try #require(whole.json)) == S.content(try tus.plainRecord(image)))
    let tooLong = try tus.request(
      "POST", "/v1/tus", [S.tus, S.acme, S.stream, ("Upload-Length", "10")], body: Array(image[..<11]))
    #expect(tooLong.status == 413 && tooLong.code == "payload_too_large")
    #expect(tooLong["Location"] == nil)
    let untyped = try tus.request(
      "POST", "/v1/tus", [S.tus, S.acme, ("Upload-Length", String(image.count))], body: image)
    #expect(untyped.status == 415 && untyped.code == "tus_content_type")
  }

  @Test func aCompletedUploadOfNoImageAnswersWhatAPlainUploadGets() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let pdf = Array("%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n".utf8)
    let path = try tus.create(length: pdf.count)
    let last = try tus.patch(path, offset: 0, pdf)
    let plain = try tus.request("POST", "/v1/attachments", [S.acme], body: pdf)
    #expect(last.status == plain.status && last.status == 415)
    #expect(last.code == plain.code && last.code == "unsupported_format")
    #expect(last["Upload-Offset"] == String(pdf.count))
    let get = try tus.request("GET", path, [S.tus, S.acme])
    #expect(get.status == 415 && get.code == "unsupported_format")
    #expect(try tus.request("HEAD", path, [S.tus, S.acme])["Content-Location"] == nil)
  }

  @Test func terminationDeletesTheUploadAndTheUrlIsGone() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let path = try tus.create(length: 10)
    #expect(try tus.patch(path, offset: 0, [1, 2, 3]).status == 204)
    let deleted = try tus.request("DELETE", path, [S.tus, S.acme])
    #expect(deleted.status == 204 && deleted["Tus-Resumable"] == "1.0.0")
    #expect(try tus.request("HEAD", path, [S.tus, S.acme]).status == 404)
    #expect(try tus.patch(path, offset: 3, [4]).status == 404)
    #expect(try tus.request("DELETE", path, [S.tus, S.acme]).status == 404)
  }

  @Test func methodOverrideCarriesPatchAndDeleteOverPost() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let path = try tus.create(length: 10)
    let patched = try tus.request(
      "POST", path,
      [S.tus, S.acme, S.stream, ("Upload-Offset", "0"), ("X-HTTP-Method-Override", "PATCH")],
      body: [1, 2, 3, 4])
    #expect(patched.status == 204 && patched["Upload-Offset"] == "4")
    let deleted = try tus.request(
      "POST", path, [S.tus, S.acme, ("X-HTTP-Method-Override", "DELETE")], body: [])
    #expect(deleted.status == 204)
    #expect(try tus.request("HEAD", path, [S.tus, S.acme]).status == 404)
    let bogus = try tus.request(
      "POST", "/v1/tus", [S.tus, S.acme, ("X-HTTP-Method-Override", "PUT")], body: [])
    #expect(bogus.status == 405 && bogus["Allow"] == "POST, OPTIONS")
  }

  @Test func aTusClientPointedAtTheAttachmentsUrlGetsATusUpload() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let created = try tus.request(
      "POST", "/v1/attachments",
      [S.tus, S.acme, ("Upload-Length", "10"), ("Upload-Draft-Interop-Version", "6")],
      body: [])
    #expect(created.status == 201)
    #expect(created["Location"]?.contains("/v1/tus/upl_") == true)
    #expect(created["Tus-Resumable"] == "1.0.0")
  }

  /// An RFC 9110 IMF-fixdate.
  static func date(_ text: String) -> Date? {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    return formatter.date(from: text)
  }
}
