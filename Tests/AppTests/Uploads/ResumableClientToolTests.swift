import Foundation
import TestSupport
import Testing

@testable import App

/// Interrupted-and-resumed uploads driven by real HTTP clients: curl (cut by `--max-time` on a
/// rate-limited send, then `curl -I` and `curl -X PATCH`, as the README shows) and Python's h11
/// (a byte-exact HTTP/1.1 state machine that sees the 104 as an informational response).
@Suite(
  .serialized, .timeLimit(.minutes(3)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct ResumableClientToolTests {
  typealias Interop = ResumableInteropTests
  /// `python3` on the PATH (where `Scripts/install-deps` put h11), through env.
  static let python = "/usr/bin/env"

  @Test(arguments: [3, 6, 8])
  func curlCutByItsTimeLimitThenHeadAndPatchGivesThePlainRecord(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let name = "heic-iphonexs-irot-exif6-gps.heic"
    let file = UploadClientTests.corpusPath(name)
    let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
    let complete = version == 3 ? "Upload-Incomplete: ?0" : "Upload-Complete: ?1"
    let key = AttachmentServer.bearer(AttachmentServer.acmeKey)
    let dump = server.directory + "/creation-headers"
    // 1 MB at 200 kB/s, cut after 2 s: the creation ends mid-body.
    let (status, _) = try LiveTesting.run(
      "/usr/bin/curl",
      [
        "-s", "-o", "/dev/null", "-D", dump, "--max-time", "2", "--limit-rate", "200K", "--data-binary",
        "@" + file,
        "-H", key, "-H", "Upload-Draft-Interop-Version: \(version)", "-H", complete,
        server.base + "/v1/attachments",
      ], timeout: 10)
    #expect(status == 28, "curl should have been cut by --max-time (exit 28), not \(status)")
    let headers = try String(contentsOfFile: dump, encoding: .utf8)
    #expect(headers.hasPrefix("HTTP/1.1 104 Upload Resumption Supported"))
    let location = try #require(
      headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("location:") }.map {
        String($0.dropFirst("location:".count)).trimmingCharacters(in: .whitespaces)
      })
    let head = try LiveTesting.curl(
      location, method: "HEAD", headers: [key, "Upload-Draft-Interop-Version: \(version)"])
    #expect(head.status == 204)
    let offset = try #require(Int(head.headers["upload-offset"] ?? ""))
    #expect(offset > 0 && offset < size)
    let rest = server.directory + "/rest"
    try Data(try Corpus.data(name).dropFirst(offset)).write(to: URL(fileURLWithPath: rest))
    var patch = [
      "-X", "PATCH", "--data-binary", "@" + rest, "-H", key, "-H", "Upload-Draft-Interop-Version: \(version)",
      "-H", "Upload-Offset: \(offset)", "-H", complete,
    ]
    if version >= 6 { patch += ["-H", "Content-Type: application/partial-upload"] }
    let final = try server.curl(ResumableClient.path(of: location), patch)
    #expect(final.status == 201)
    #expect(Interop.facts(final.json) == (try Interop.plainFacts(server, name)))
  }

  @Test(arguments: [3, 5, 6, 8])
  func h11SeesThe104AndResumesACutUpload(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let file = UploadClientTests.corpusPath(Interop.jpeg)
    let script = """
      import socket, sys
      import h11
      port, key, version, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
      data = open(path, 'rb').read()
      complete = ('Upload-Incomplete', '?0') if version == '3' else ('Upload-Complete', '?1')
      def events(conn, sock):
          while True:
              e = conn.next_event()
              if e is h11.NEED_DATA:
                  conn.receive_data(sock.recv(65536))
                  continue
              yield e
              if isinstance(e, (h11.EndOfMessage, h11.ConnectionClosed)):
                  return
      def headers(e):
          return {k.decode().lower(): v.decode() for k, v in e.headers}
      s = socket.create_connection(('127.0.0.1', port), timeout=10)
      c = h11.Connection(h11.CLIENT)
      s.sendall(c.send(h11.Request(method='POST', target='/v1/attachments', headers=[
          ('Host', '127.0.0.1:%d' % port), ('Authorization', 'Bearer ' + key), ('Content-Length', str(len(data))),
          ('Upload-Draft-Interop-Version', version), complete])))
      interim = next(events(c, s))
      assert isinstance(interim, h11.InformationalResponse) and interim.status_code == 104, interim
      location = headers(interim)['location']
      s.sendall(c.send(h11.Data(data=data[:len(data) // 3])))
      s.close()
      target = location[location.index('/v1/uploads/'):]
      s = socket.create_connection(('127.0.0.1', port), timeout=10)
      c = h11.Connection(h11.CLIENT)
      s.sendall(c.send(h11.Request(method='HEAD', target=target, headers=[
          ('Host', 'x'), ('Authorization', 'Bearer ' + key), ('Upload-Draft-Interop-Version', version)])))
      s.sendall(c.send(h11.EndOfMessage()))
      answer = [e for e in events(c, s)][0]
      assert answer.status_code == 204, answer
      offset = int(headers(answer)['upload-offset'])
      c.start_next_cycle()
      fields = [('Host', 'x'), ('Authorization', 'Bearer ' + key), ('Upload-Draft-Interop-Version', version),
          ('Upload-Offset', str(offset)), complete, ('Content-Length', str(len(data) - offset))]
      if int(version) >= 6:
          fields.append(('Content-Type', 'application/partial-upload'))
      s.sendall(c.send(h11.Request(method='PATCH', target=target, headers=fields)))
      s.sendall(c.send(h11.Data(data=data[offset:])) + c.send(h11.EndOfMessage()))
      final, body = None, b''
      for e in events(c, s):
          if isinstance(e, h11.Response): final = e
          if isinstance(e, h11.Data): body += e.data
      print(offset, final.status_code)
      sys.stdout.write(body.decode())
      """
    let (status, output) = try LiveTesting.run(
      Self.python,
      [
        "python3", "-c", script, String(Interop.port(server)), AttachmentServer.acmeKey, String(version),
        file,
      ], timeout: 30)
    #expect(status == 0)
    let text = String(decoding: output, as: UTF8.self)
    let lines = text.split(separator: "\n", maxSplits: 1)
    #expect(lines.first?.hasSuffix(" 201") == true, "\(text)")
    let json = try JSONSerialization.jsonObject(with: Data((lines.last ?? "").utf8)) as? [String: Any]
    #expect(Interop.facts(json) == (try Interop.plainFacts(server, Interop.jpeg)))
  }
}
