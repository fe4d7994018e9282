import HTTP
import Server
import Synchronization

/// An upload request admitted from its head: who sends it and its limits.
struct UploadRequest: Sendable {
  var caller: UploadCaller
  var requestID: String
  /// The `Idempotency-Key`, qualified by the token user.
  var idempotencyKey: String?
  /// The largest body accepted (the server's cap, or a token's smaller `max_bytes`).
  var maxBodyBytes: Int
  /// What a body over `maxBodyBytes` is refused with.
  var overLimit: any Error

  /// How a body of this request that completes an upload is read and processed.
  func completion(boundary: String?, idempotencyKey: String? = nil) -> UploadCompletionRequest {
    UploadCompletionRequest(
      caller: caller, requestID: requestID, idempotencyKey: idempotencyKey, boundary: boundary)
  }
}

/// An upload admitted from its head, with what its body will be.
struct UploadAdmission: Sendable {
  var request: UploadRequest
  /// The multipart boundary, when the body is `multipart/form-data`.
  var boundary: String?
  /// The `Content-Type` as sent (kept with a resumable upload, for its completion).
  var contentType: String?
  /// `Content-Length`, when the body has one.
  var expectedBytes: Int?
}

/// A claim on an `Idempotency-Key` while its request's body arrives or is processed, held by
/// the request: a retry sent meanwhile is answered at once (the index claim, which needs the
/// body's fingerprint, covers the rest).
final class KeyInFlight: RequestResource {
  private let uploads: Uploads
  private let name: String

  init?(_ name: String, in uploads: Uploads) {
    guard uploads.keysInFlight.withLock({ $0.insert(name).inserted }) else { return nil }
    self.uploads = uploads
    self.name = name
  }

  func release() { _ = uploads.keysInFlight.withLock { $0.remove(name) } }
}

extension Uploads {
  /// The checks every upload passes before a byte of its body is read, after the App has
  /// authenticated the caller and read its query, in order: `Idempotency-Key` form (400),
  /// multipart boundary (400), an empty body (400, unless `allowsEmptyBody`), `Content-Length`
  /// over the limit (413), the protocol's own header checks (`check`, given the body limit and
  /// what is over it), the caller's upload cap (429) and an `Idempotency-Key` already in flight
  /// (409). The request holds its slot and its key until it is over. `bodyType`: whether the
  /// `Content-Type` describes the upload (not for an append, whose type describes the request).
  func admit(
    _ head: HTTPRequestHead, caller: UploadCaller, context: inout RequestContext,
    allowsEmptyBody: Bool = false,
    bodyType: Bool = true,
    check: (_ bodyLimit: Int, _ overLimit: any Error) -> HTTPResponse? = { _, _ in nil }
  ) -> Result<UploadAdmission, Refusal> {
    let requestID = context.requestID
    let sentKey = head.headers.first(name: "Idempotency-Key")
    if let sentKey, !(1...255).contains(sentKey.utf8.count) {
      return .failure(Refusal(problem(UploadError.invalidIdempotencyKey, requestID: requestID)))
    }
    // A token user's keys are their own: two users of one tenant sending the same key must
    // never get each other's answer. Neither a header value nor a `sub` holds a line break,
    // so `user \n key` cannot meet a tenant key's plain one.
    let idempotencyKey = sentKey.map { key in caller.user.map { $0 + "\n" + key } ?? key }
    let contentType = bodyType ? head.headers.first(name: "Content-Type") : nil
    var boundary: String?
    if let type = contentType, type.lowercased().hasPrefix("multipart/") {
      guard let found = MultipartParser.boundary(fromContentType: type) else {
        return .failure(
          Refusal(
            problem(
              UploadError.malformedUpload("multipart without a form-data boundary"), requestID: requestID)))
      }
      boundary = found
    }
    // A token's max_bytes caps a raw body as it arrives; a multipart body (boundaries and
    // fields besides the files) is judged on its file parts once they are in.
    let serverLimit = configuration.maxUploadBytes
    let bodyLimit = boundary == nil ? caller.maxBytes : serverLimit
    let overLimit = caller.overLimit(bodyLimit, serverLimit: serverLimit)
    var expected: Int?
    switch head.framing {
    case .none:
      guard allowsEmptyBody else {
        return .failure(Refusal(problem(UploadError.emptyUpload, requestID: requestID)))
      }
      expected = 0
    case .contentLength(let length):
      if length == 0 && !allowsEmptyBody {
        return .failure(Refusal(problem(UploadError.emptyUpload, requestID: requestID)))
      }
      if length > UInt64(bodyLimit) { return .failure(Refusal(problem(overLimit, requestID: requestID))) }
      expected = Int(length)
    case .chunked: break
    }
    if let refusal = check(bodyLimit, overLimit) { return .failure(Refusal(refusal)) }
    if let refusal = takeSlot(caller, context: &context) { return .failure(refusal) }
    if let idempotencyKey {
      guard let key = KeyInFlight(caller.tenant + "\n" + idempotencyKey, in: self) else {
        return .failure(Refusal(problem(UploadError.idempotencyInProgress, requestID: requestID)))
      }
      context.hold(key)
    }
    let request = UploadRequest(
      caller: caller, requestID: requestID, idempotencyKey: idempotencyKey, maxBodyBytes: bodyLimit,
      overLimit: overLimit)
    return .success(
      UploadAdmission(request: request, boundary: boundary, contentType: contentType, expectedBytes: expected)
    )
  }

  /// Takes the caller's place among its uploads in flight for this request (which holds it
  /// until it is over); the refusal when the caller is at its cap.
  func takeSlot(_ caller: UploadCaller, context: inout RequestContext) -> Refusal? {
    let slot = caller.destination.uploadSlot()
    context.hold(slot)
    guard let error = slot.acquire() else { return nil }
    return Refusal(problem(error, requestID: context.requestID))
  }
}

/// A request refused before its body is read, with its answer.
struct Refusal: Error {
  var response: HTTPResponse
  init(_ response: HTTPResponse) { self.response = response }
}
