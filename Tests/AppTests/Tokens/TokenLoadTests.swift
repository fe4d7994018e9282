import Foundation
import TestSupport
import Testing

@testable import App

/// Many phones at once, each with its own token: limits count per (tenant, user), so 50 users
/// uploading together are never refused, while one user over the limit is refused alone.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct TokenLoadTests {
  /// Python phones: `groups` is a JSON list of [user, uploads]; every upload of every user
  /// starts at once (one thread and connection each, behind a barrier). Tokens are minted
  /// with PyJWT from the backend's key. Prints {user: {status_or_code: count}}.
  static let phones = """
    import sys, json, time, threading, http.client, jwt
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    port, keydir, image, groups = int(sys.argv[1]), sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    key = load_pem_private_key(open(keydir + '/ed.pem', 'rb').read(), None)
    body = open(image, 'rb').read()
    now = int(time.time())
    jobs = []
    for user, count in groups:
        token = jwt.encode({'iss': 'acme-backend', 'sub': user, 'scope': 'upload', 'iat': now, 'exp': now + 600},
                           key, algorithm='EdDSA', headers={'kid': 'acme-1'})
        jobs += [(user, token)] * count
    barrier = threading.Barrier(len(jobs))
    results, lock = {}, threading.Lock()
    def phone(user, token):
        c = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
        c.connect()
        barrier.wait()
        try:
            c.request('POST', '/v1/attachments', body=body,
                      headers={'Authorization': 'Bearer ' + token, 'Content-Type': 'image/png'})
            r = c.getresponse(); data = r.read()
            outcome = str(r.status) if r.status == 201 else '%d %s' % (r.status, json.loads(data).get('code'))
        except Exception as e:
            outcome = 'error ' + type(e).__name__
        with lock:
            counts = results.setdefault(user, {})
            counts[outcome] = counts.get(outcome, 0) + 1
    threads = [threading.Thread(target=phone, args=job) for job in jobs]
    for t in threads: t.start()
    for t in threads: t.join()
    print(json.dumps(results))
    """

  static func run(_ server: AttachmentServer, _ backend: TokenBackend, image: String, groups: [(String, Int)])
    throws -> [String: [String: Int]]
  {
    let port = String(server.base.split(separator: ":").last!)
    let groupsJSON = "[" + groups.map { "[\"\($0.0)\", \($0.1)]" }.joined(separator: ",") + "]"
    let (status, output) = try LiveTesting.run(
      "/usr/bin/env", ["python3", "-c", Self.phones, port, backend.directory, image, groupsJSON], timeout: 150
    )
    #expect(status == 0)
    return try JSONDecoder().decode([String: [String: Int]].self, from: output)
  }

  static func server(_ backend: TokenBackend) throws -> AttachmentServer {
    try AttachmentServer { config in
      config.auth.tokens.keys = backend.tokenKeys
      // The defaults for users (10 requests/s, burst 20, 10 uploads in flight); the test
      // server turns the per-key rate off, so set the user one back explicitly.
      config.limits.userRate = RateLimiter.Configuration()
      config.limits.userUploads = UploadConcurrencyLimiter.Configuration(maxConcurrentUploadsPerKey: 10)
      // 500 uploads at once must queue for the two workers, not meet 503 `overloaded`.
      config.server.workerQueueLength = 1000
    }
  }

  @Test func fiftyUsersWithTenConcurrentUploadsEachAreNeverRateLimited() throws {
    let backend = try TokenBackend()
    let server = try Self.server(backend)
    defer { server.stop() }
    let image = try TokenBackend.smallPNG(in: backend.directory, side: 16)
    let started = Date()
    let results = try Self.run(server, backend, image: image, groups: (0..<50).map { ("user-\($0)", 10) })
    let seconds = Date().timeIntervalSince(started)
    #expect(results.count == 50)
    for (user, outcomes) in results {
      #expect(outcomes == ["201": 10], "\(user): \(outcomes)")
    }
    #expect(try server.app.attachments.store.statistics().attachments == 500)
    print("50 users × 10 concurrent uploads: 500 × 201 in \(String(format: "%.1f", seconds)) s")
  }

  @Test func oneUserOverTheLimitIsRefusedAloneWhileOthersUploadAtTheSameTime() throws {
    let backend = try TokenBackend()
    let server = try Self.server(backend)
    defer { server.stop() }
    let image = try TokenBackend.smallPNG(in: backend.directory, side: 16)
    let results = try Self.run(
      server, backend, image: image, groups: [("greedy", 40)] + (0..<5).map { ("user-\($0)", 10) })
    let greedy = try #require(results["greedy"])
    let refused = greedy.filter { $0.key.hasPrefix("429 ") }.values.reduce(0, +)
    // 40 at once against a burst of 20 (plus at most 10 refilled per second) and 10 in flight.
    #expect(refused >= 10, "\(greedy)")
    print("one user with 40 concurrent uploads: \(greedy)")
    #expect(
      greedy.keys.allSatisfy { ["201", "429 rate_limited", "429 too_many_uploads"].contains($0) }, "\(greedy)"
    )
    for index in 0..<5 {
      #expect(results["user-\(index)"] == ["201": 10], "user-\(index): \(results["user-\(index)"] ?? [:])")
    }
  }
}
