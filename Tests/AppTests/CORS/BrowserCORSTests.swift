import Foundation
import Glibc
import TestSupport
import Testing

@testable import App

/// A real headless Chromium (Debian's `chromium`, installed by Scripts/install-deps) loads a page
/// from one loopback origin that uploads to attachd on another with `fetch()` and an upload
/// token, as a browser chat client would; the same page from an origin not on the list is
/// stopped by the browser itself.
@Suite(.serialized, .timeLimit(.minutes(2))) struct BrowserCORSTests {
  static let chromium = "/usr/bin/chromium"

  /// The page: fetches an image from its own origin, POSTs it to `api` with the token, and
  /// writes what it could read (or the stage that failed) into `#result`.
  static let page = """
    <!doctype html><html><body><pre id="result">pending</pre><script>
    (async () => {
      const out = document.getElementById('result');
      const params = new URLSearchParams(location.search);
      let stage = 'image';
      try {
        const image = await (await fetch('picture.png')).blob();
        stage = 'upload';
        const response = await fetch(params.get('api') + '/v1/attachments?profile=anthropic', {
          method: 'POST', body: image,
          headers: {'Authorization': 'Bearer ' + params.get('token'), 'Content-Type': 'image/png',
                    'Idempotency-Key': 'browser-1'}});
        stage = 'read';
        const record = await response.json();
        out.textContent = JSON.stringify({stage: 'done', status: response.status,
          location: response.headers.get('Location'), requestID: response.headers.get('X-Request-Id'),
          id: record.id, profile: record.profile, owner: record.owner});
      } catch (error) {
        out.textContent = JSON.stringify({stage: stage, error: String(error)});
      }
    })();
    </script></body></html>
    """

  /// A static file server for the page (Python's, on a free 127.0.0.1 port), stopped by pid.
  final class PageServer {
    let process = Process()
    let port: Int

    init(directory: String) throws {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
      process.arguments = [
        "python3", "-c",
        """
        import functools, http.server, sys
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """,
        directory,
      ]
      let output = Pipe()
      process.standardOutput = output
      process.standardError = FileHandle.nullDevice
      try process.run()
      let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
      guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
        kill(process.processIdentifier, SIGKILL)
        throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "page server: \(line)"])
      }
      self.port = port
    }

    /// SIGKILL: a child of the test process may inherit a signal mask that blocks SIGTERM
    /// (the server's signal handling blocks it in the threads it starts).
    func stop() {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }

  /// What the page wrote into `#result`, after Chromium ran it (at most 60 s).
  static func run(url: String, profile: String) throws -> [String: Any] {
    let (status, output) = try LiveTesting.run(
      chromium,
      [
        "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
        "--user-data-dir=" + profile, "--virtual-time-budget=15000", "--dump-dom", url,
      ], timeout: 60)
    #expect(status == 0, "chromium exit status \(status)")
    let dom = String(decoding: output, as: UTF8.self)
    guard let start = dom.range(of: "<pre id=\"result\">"),
      let end = dom.range(of: "</pre>", range: start.upperBound..<dom.endIndex)
    else {
      throw CocoaError(
        .fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no result in \(dom.prefix(300))"])
    }
    let text = String(dom[start.upperBound..<end.lowerBound]).replacingOccurrences(of: "&quot;", with: "\"")
      .replacingOccurrences(of: "&amp;", with: "&")
    return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
  }

  @Test func aListedOriginUploadsWithATokenAndReadsTheRecordAndLocation() throws {
    #expect(
      FileManager.default.isExecutableFile(atPath: Self.chromium), "Scripts/install-deps installs chromium")
    let backend = try TokenBackend()
    let directory = try LiveTesting.temporaryDirectory()
    try Data(Self.page.utf8).write(to: URL(fileURLWithPath: directory + "/page.html"))
    let picture = try TokenBackend.smallPNG(in: directory, side: 64)
    try FileManager.default.moveItem(atPath: picture, toPath: directory + "/picture.png")
    let pages = try PageServer(directory: directory)
    defer { pages.stop() }
    let listed = "http://127.0.0.1:\(pages.port)"
    let server = try AttachmentServer { config in
      config.auth.tokens.keys = backend.tokenKeys
      config.cors.allowedOrigins = [listed]
    }
    defer { server.stop() }
    let token = try #require(try backend.mint([TokenBackend.acme("user-42", scope: "upload read")]).first)
    let query = "?api=\(server.base)&token=\(token)"

    let result = try Self.run(url: listed + "/page.html" + query, profile: directory + "/chromium-1")
    #expect(result["stage"] as? String == "done", "\(result)")
    #expect(result["status"] as? Int == 201)
    let id = try #require(result["id"] as? String)
    #expect(result["location"] as? String == "/v1/attachments/\(id)")
    #expect((result["requestID"] as? String)?.isEmpty == false)
    #expect(result["profile"] as? String == "anthropic")
    #expect(result["owner"] as? String == "user-42")

    // The same page from an origin on no list: the browser's preflight gets no CORS answer, so
    // the upload is never sent and nothing is stored.
    let before = try server.app.attachments.store.statistics().attachments
    let unlisted = "http://localhost:\(pages.port)"
    let blocked = try Self.run(url: unlisted + "/page.html" + query, profile: directory + "/chromium-2")
    #expect(blocked["stage"] as? String == "upload", "\(blocked)")
    #expect((blocked["error"] as? String)?.contains("Failed to fetch") == true, "\(blocked)")
    #expect(try server.app.attachments.store.statistics().attachments == before)
  }
}
