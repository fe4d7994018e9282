import HTTP
import ImagePipeline
import Server

/// An upload admitted from its head: who sends it, its limits and its slot.
struct UploadAdmission: Sendable {
  var request: UploadRequest
  /// The multipart boundary, when the body is `multipart/form-data`.
  var boundary: String?
  /// The `Content-Type` as sent (kept with a resumable upload, for its completion).
  var contentType: String?
  /// `Content-Length`, when the body has one.
  var expectedBytes: Int?
}

extension AttachmentService {
  /// The outcome of `admit`.
  enum Admission {
    case admitted(UploadAdmission)
    case refused(HTTPResponse)
  }

  /// The checks every upload passes before a byte of its body is read, in order: key or token
  /// (401), scope (403), rate (429), `Idempotency-Key` form (400), multipart boundary (400), an
  /// empty body (400, unless `allowsEmptyBody`), `Content-Length` over the limit (413), the
  /// protocol's own header checks (`check`, given the body limit and what is over it), the
  /// caller's upload cap (429) and an `Idempotency-Key` already in flight (409). The slot taken
  /// is the caller's to release. `bodyType`: whether the `Content-Type` describes the upload
  /// (not for an append, whose type describes the request).
  func admit(
    _ head: HTTPRequestHead, context: RequestContext, allowsEmptyBody: Bool = false, bodyType: Bool = true,
    check: (_ bodyLimit: Int, _ overLimit: any Error) -> HTTPResponse? = { _, _ in nil }
  ) -> Admission {
    let principal: Principal
    switch access.authorize(head, scope: .upload) {
    case .failure(let error): return .refused(problem(error, context))
    case .success(let p): principal = p
    }
    let requested: [ModelProfile]
    switch ProfileQuery.profiles(in: head.query) {
    case .failure(let error): return .refused(problem(error, context))
    case .success(let profiles): requested = profiles
    }
    let sentKey = head.headers.first(name: "Idempotency-Key")
    if let sentKey, !(1...255).contains(sentKey.utf8.count) {
      return .refused(problem(AppError.invalidIdempotencyKey, context))
    }
    // A token user's keys are their own: two users of one tenant sending the same key must
    // never get each other's answer. Neither a header value nor a `sub` holds a line break,
    // so `user \n key` cannot meet a tenant key's plain one.
    let idempotencyKey = sentKey.map { key in principal.user.map { $0 + "\n" + key } ?? key }
    let contentType = bodyType ? head.headers.first(name: "Content-Type") : nil
    var boundary: String?
    if let type = contentType, type.lowercased().hasPrefix("multipart/") {
      guard let found = MultipartParser.boundary(fromContentType: type) else {
        return .refused(problem(AppError.malformedUpload("multipart without a form-data boundary"), context))
      }
      boundary = found
    }
    var expected: Int?
    // A token's max_bytes caps a raw body as it arrives; a multipart body (boundaries and
    // fields besides the files) is judged on its file parts once they are in.
    let bodyLimit =
      boundary == nil
      ? access.maxUploadBytes(for: principal, serverLimit: options.maxUploadBytes) : options.maxUploadBytes
    let overLimit: any Error =
      bodyLimit < options.maxUploadBytes ? AccessError.token(.maxBytesExceeded) : AppError.uploadTooLarge
    switch head.framing {
    case .none:
      guard allowsEmptyBody else { return .refused(problem(AppError.emptyUpload, context)) }
      expected = 0
    case .contentLength(let length):
      if length == 0 && !allowsEmptyBody { return .refused(problem(AppError.emptyUpload, context)) }
      if length > UInt64(bodyLimit) { return .refused(problem(overLimit, context)) }
      expected = Int(length)
    case .chunked: break
    }
    if let refusal = check(bodyLimit, overLimit) { return .refused(refusal) }
    if case .failure(let error) = access.beginUpload(for: principal) {
      return .refused(problem(error, context))
    }
    metrics.uploadsInFlight.increment()
    let slot = UploadSlot(service: self, principal: principal)
    if let idempotencyKey {
      // A retry while the first request is still sending its body: answer at once (the
      // index claim, which needs the body's fingerprint, covers the rest).
      let name = principal.tenant + "\n" + idempotencyKey
      guard keysInFlight.withLock({ $0.insert(name).inserted }) else {
        slot.release()
        return .refused(problem(AppError.idempotencyInProgress, context))
      }
      slot.ownKey(name)
    }
    let request = UploadRequest(
      principal: principal, idempotencyKey: idempotencyKey, requestID: context.requestID, slot: slot,
      maxBodyBytes: bodyLimit, overLimit: overLimit
    ).withProfiles(requested, options.profiles)
    return .admitted(
      UploadAdmission(request: request, boundary: boundary, contentType: contentType, expectedBytes: expected)
    )
  }
}
