import AttachdTesting
import Foundation
import TestSupport
import Testing

@testable import App

/// Model profiles, through the in-process client: made with the upload or on first GET, cached,
/// listed in the record with their token estimates, and gone with their attachment.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ProfileUploadTests {
  /// A 2000 × 1500 PNG (the stored default keeps that size; every provider profile is smaller).
  static func photo(in directory: String) throws -> String {
    let (width, height) = (2000, 1500)
    var pixels = [UInt8](repeating: 0, count: width * height * 3)
    for y in 0..<height {
      for x in 0..<width {
        let i = (y * width + x) * 3
        pixels[i] = UInt8(truncatingIfNeeded: x / 8)
        pixels[i + 1] = UInt8(truncatingIfNeeded: y / 6)
        pixels[i + 2] = UInt8(truncatingIfNeeded: (x + y) / 16)
      }
    }
    let path = directory + "/photo.png"
    try Data(PNGWriter.png(width: width, height: height, colourType: 2, pixels: pixels)).write(
      to: URL(fileURLWithPath: path))
    return path
  }

  /// Width and height from a JPEG's SOF marker.
  static func jpegSize(_ bytes: [UInt8]) -> (Int, Int)? {
    var i = 2
    while i + 9 < bytes.count, bytes[i] == 0xFF {
      let marker = bytes[i + 1]
      let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
      if (0xC0...0xC2).contains(marker) {
        return (Int(bytes[i + 7]) << 8 | Int(bytes[i + 8]), Int(bytes[i + 5]) << 8 | Int(bytes[i + 6]))
      }
      i += 2 + length
    }
    return nil
  }

  static let key = AttachmentServer.auth(AttachmentServer.acmeKey)

  @Test func aProfileAskedForAtUploadIsMadeThenAndDescribedAtTheTop() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = server.client
    let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try Self.photo(in: server.directory))))
    let reply = try client.execute(
      "POST", "/v1/attachments?profile=anthropic", headers: Self.key, body: .bytes(file))
    #expect(reply.status == 201)
    let record = try #require(reply.json)
    let id = try #require(record["id"] as? String)
    #expect(record["profile"] as? String == "anthropic")
    let profiles = try #require(record["profiles"] as? [String: [String: Any]])
    let anthropic = try #require(profiles["anthropic"])
    let (aw, ah) = (anthropic["width"] as! Int, anthropic["height"] as! Int)
    #expect(aw <= 1568 && ah <= 1568 && aw * ah <= 1_150_000)
    #expect(record["width"] as? Int == aw && record["height"] as? Int == ah)
    #expect(anthropic["estimated_tokens"] as? Int == (aw * ah + 749) / 750)
    #expect(record["estimated_tokens"] as? Int == (aw * ah + 749) / 750)
    #expect(anthropic["sha256"] as? String == record["sha256"] as? String)
    #expect(record["url"] as? String == "/v1/attachments/\(id)?profile=anthropic")
    #expect(reply["location"] == "/v1/attachments/\(id)")
    // Not asked for: sized, estimated, not made yet.
    let openai = try #require(profiles["openai"])
    #expect(openai["width"] as? Int == 1024 && openai["height"] as? Int == 768)
    #expect(openai["estimated_tokens"] as? Int == 85 + 170 * 2 * 2)
    #expect(openai["bytes"] is NSNull && openai["sha256"] is NSNull)
    let standard = try #require(profiles["default"])
    #expect(standard["width"] as? Int == 2000 && standard["estimated_tokens"] is NSNull)

    // The rendition is what the profile's URL serves.
    let image = try client.execute("GET", "/v1/attachments/\(id)?profile=anthropic", headers: Self.key)
    #expect(image.status == 200)
    #expect(Self.jpegSize(image.body).map { [$0.0, $0.1] } == [aw, ah])
    #expect(image["etag"] == "\"\(anthropic["sha256"] as! String)\"")
    // The plain path still serves the stored default.
    let plain = try client.execute("GET", "/v1/attachments/\(id)", headers: Self.key)
    #expect(Self.jpegSize(plain.body).map { [$0.0, $0.1] } == [2000, 1500])

    // A profile first asked for on GET is made then, once, and listed afterwards.
    let made = try client.execute("GET", "/v1/attachments/\(id)?profile=openai", headers: Self.key)
    #expect(made.status == 200)
    #expect(Self.jpegSize(made.body).map { [$0.0, $0.1] } == [1024, 768])
    let again = try client.execute("GET", "/v1/attachments/\(id)?profile=openai", headers: Self.key)
    #expect(again.body == made.body)
    let meta = try #require(try client.execute("GET", "/v1/attachments/\(id)/meta", headers: Self.key).json)
    let listed = try #require((meta["profiles"] as? [String: [String: Any]])?["openai"])
    #expect(listed["bytes"] as? Int == made.body.count)
    #expect(meta["profile"] as? String == "default")
    #expect(try server.app.attachments.store.statistics().blobs == 3)

    // Meta for a profile makes it too.
    let gemini = try #require(
      try client.execute("GET", "/v1/attachments/\(id)/meta?profile=gemini", headers: Self.key).json)
    #expect(gemini["profile"] as? String == "gemini")
    #expect(gemini["width"] as? Int == 1536 && gemini["height"] as? Int == 1152)
    #expect(gemini["estimated_tokens"] as? Int == 258 * 4)

    // Unknown names are refused before any work.
    let bogus = try client.execute("GET", "/v1/attachments/\(id)?profile=claude", headers: Self.key)
    #expect(bogus.status == 400)
    #expect(bogus.code == "unknown_profile")

    // Deleting the attachment removes every rendition's bytes.
    #expect(try client.execute("DELETE", "/v1/attachments/\(id)", headers: Self.key).status == 204)
    #expect(try server.app.attachments.store.statistics().blobs == 0)
    let blobs = try FileManager.default.subpathsOfDirectory(atPath: server.directory + "/data/blobs")
    #expect(blobs.filter { $0.count > 60 }.isEmpty, "\(blobs)")
  }

  @Test func aTenantsDefaultProfileIsWhatThePlainURLServes() throws {
    let server = try AttachmentServer { $0.attachments.profiles.tenantDefaults = ["acme": .gemini] }
    defer { server.stop() }
    let file = try Self.photo(in: server.directory)
    let reply = try server.post(file: file)
    let record = try #require(reply.json)
    let id = try #require(record["id"] as? String)
    #expect(record["profile"] as? String == "gemini")
    #expect(record["url"] as? String == "/v1/attachments/\(id)")
    #expect((record["signed_url"] as? String)?.contains("profile=") == false)
    let plain = try server.client.execute("GET", "/v1/attachments/\(id)", headers: Self.key)
    #expect(Self.jpegSize(plain.body).map { [$0.0, $0.1] } == [1536, 1152])
    let standard = try server.client.execute(
      "GET", "/v1/attachments/\(id)?profile=default", headers: Self.key)
    #expect(Self.jpegSize(standard.body).map { [$0.0, $0.1] } == [2000, 1500])
    // beta has no default of its own.
    let beta = try #require(try server.post(file: file, key: AttachmentServer.betaKey).json)
    #expect(beta["profile"] as? String == "default")
  }

  @Test func aPublicBaseURLMakesEveryLinkAbsolute() throws {
    let server = try AttachmentServer { $0.attachments.publicBaseURL = "https://attachd.example/img" }
    defer { server.stop() }
    let directory = try LiveTesting.temporaryDirectory()
    let file = [UInt8](
      try Data(contentsOf: URL(fileURLWithPath: try TokenBackend.smallPNG(in: directory, side: 40))))
    let reply = try server.client.execute(
      "POST", "/v1/attachments?profile=openai", headers: Self.key, body: .bytes(file))
    let record = try #require(reply.json)
    let id = try #require(record["id"] as? String)
    #expect(reply["location"] == "https://attachd.example/img/v1/attachments/\(id)")
    // A 40 px image is every profile's already: the default serves them all.
    #expect(record["url"] as? String == "https://attachd.example/img/v1/attachments/\(id)?profile=openai")
    let signed = try #require(record["signed_url"] as? String)
    #expect(signed.hasPrefix("https://attachd.example/img/v1/attachments/\(id)?exp="))
    #expect(signed.hasSuffix("&profile=openai"))
    let profiles = try #require(record["profiles"] as? [String: [String: Any]])
    #expect(
      profiles["gemini"]?["url"] as? String
        == "https://attachd.example/img/v1/attachments/\(id)?profile=gemini")
    #expect(profiles["gemini"]?["sha256"] as? String == record["sha256"] as? String)
    // The signed link (relative to the server) works, profile and all.
    let path = String(signed.dropFirst("https://attachd.example/img".count))
    #expect(try server.client.execute("GET", path).status == 200)
  }

  @Test(arguments: [
    "ftp://x", "https://", "https://user:pw@host", "https://host/a?b", "https://host/#x", "host",
  ])
  func aMalformedPublicBaseURLIsRefused(_ text: String) {
    #expect(throws: ConfigurationError.self) { try PublicBaseURL.normalised(text) }
  }

  @Test func theOpenAPIDescriptionIsServedAsCommitted() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let reply = try server.client.execute("GET", "/openapi.json")
    #expect(reply.status == 200)
    #expect(reply["content-type"] == "application/json")
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let committed = try Data(contentsOf: root.appendingPathComponent("Sources/App/OpenAPI/openapi.json"))
    #expect(Data(reply.body) == committed)
    let document = try #require(reply.json)
    #expect(document["openapi"] as? String == "3.1.0")
    // Every route the router knows is described, with every method it takes (the router's
    // `Allow` for a method no route has); HEAD is implied by GET.
    let paths = try #require(document["paths"] as? [String: [String: Any]])
    let router = Application.makeRouter()
    for route in [
      Application.Route.healthz, .readyz, .metrics, .openAPI, .upload, .image, .meta, .delete,
      .uploadResource, .uploadOptions, .tusCreation, .tusUpload,
    ] {
      let described = try #require(paths[route.template], "\(route.template)")
      let path = route.template.replacing("{id}", with: "upl_0")
      guard case .methodNotAllowed(let allow) = router.match(method: "NOPE", path: path[...]) else {
        Issue.record("\(path) has no methods")
        continue
      }
      for method in allow where method != "HEAD" {
        #expect(described[method.lowercased()] != nil, "\(method) \(route.template)")
      }
    }
  }
}
