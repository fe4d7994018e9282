import Testing

@testable import App

@Suite struct RouterTests {
  enum R: Sendable, Equatable {
    case list, create, show, meta, delete, health
  }

  let router: Router<R> = {
    var r = Router<R>()
    r.add("GET", "/healthz", .health)
    r.add("POST", "/v1/attachments", .create)
    r.add("GET", "/v1/attachments/{id}", .show)
    r.add("DELETE", "/v1/attachments/{id}", .delete)
    r.add("GET", "/v1/attachments/{id}/meta", .meta)
    return r
  }()

  func route(_ method: String, _ path: String) -> (R, [String: String])? {
    if case .found(let route, let parameters) = router.match(method: method, path: path[...]) {
      return (route, parameters)
    }
    return nil
  }

  @Test func exactPathsMatchTheirMethod() {
    #expect(route("GET", "/healthz")?.0 == .health)
    #expect(route("POST", "/v1/attachments")?.0 == .create)
  }

  @Test func parameterSegmentsAreCaptured() {
    #expect(route("GET", "/v1/attachments/att_123")?.0 == .show)
    #expect(route("GET", "/v1/attachments/att_123")?.1 == ["id": "att_123"])
    #expect(route("DELETE", "/v1/attachments/att_9")?.0 == .delete)
    #expect(route("GET", "/v1/attachments/att_9/meta")?.0 == .meta)
  }

  @Test func headIsAnsweredWhereGetIs() {
    #expect(route("HEAD", "/healthz")?.0 == .health)
    #expect(route("HEAD", "/v1/attachments/x")?.0 == .show)
  }

  @Test(arguments: ["/", "/nope", "/healthz/", "/healthz/x", "/v1/attachments/", "/v1/attachments/a/b", "//"])
  func unknownPathsAreNotFound(path: String) {
    guard case .notFound = router.match(method: "GET", path: path[...]) else {
      Issue.record("\(path) matched")
      return
    }
  }

  @Test(arguments: [
    ("POST", "/healthz", ["GET", "HEAD"]),
    ("GET", "/v1/attachments", ["POST"]),
    ("PUT", "/v1/attachments/x", ["GET", "HEAD", "DELETE"]),
    ("POST", "/v1/attachments/x/meta", ["GET", "HEAD"]),
  ])
  func aKnownPathWithAnotherMethodListsTheAllowedOnes(method: String, path: String, allow: [String]) {
    guard case .methodNotAllowed(let got) = router.match(method: method, path: path[...]) else {
      Issue.record("\(method) \(path) was not a 405")
      return
    }
    #expect(got == allow)
  }

  @Test func methodsAreCaseSensitive() {
    guard case .methodNotAllowed = router.match(method: "get", path: "/healthz") else {
      Issue.record("lower-case get matched")
      return
    }
  }
}
