import Crypto
import HTTP
import ImagePipeline
import Server
import Storage

extension AttachmentService {
  /// `GET`/`HEAD /v1/attachments/{id}`: with a key (`caller`, read scope, checked on the loop)
  /// or a signed link (`caller` nil; checked against the index, off the loop); the look-up is
  /// offloaded.
  func image(_ head: HTTPRequestHead, id: String, caller: Principal?, context: RequestContext) -> HeadDecision
  {
    let query = head.query.map(String.init)
    // nil: the tenant's default, known once the tenant is.
    let profile = (try? ProfileQuery.profiles(in: head.query).get())?.first
    let frame: Int?
    switch FrameQuery.frame(in: head.query) {
    case .success(let number): frame = number
    case .failure(let error): return .respond(problem(error, context))
    }
    guard let caller else {
      // The link is bound to the owner's tenant, which only the index knows.
      return .offload { [self] cancellation in
        signedImage(
          head, id: id, query: query, profile: profile, frame: frame, context: context,
          cancellation: cancellation)
      }
    }
    return .offload { [self] cancellation in
      image(
        head, id: id, tenant: caller.tenant, viewer: caller.viewer, profile: profile, frame: frame,
        context: context, cancellation: cancellation)
    }
  }

  /// A signed-link read (on a worker).
  private func signedImage(
    _ head: HTTPRequestHead, id: String, query: String?, profile: ModelProfile?, frame: Int?,
    context: RequestContext, cancellation: RequestCancellation
  ) -> HTTPResponse {
    guard SecureRandom.isIdentifier(id) else { return problem(AccessError.signedLinkInvalid, context) }
    let owner: String?
    do { owner = try store.tenant(ofAttachment: id) } catch { return problem(error, context) }
    let now = Int(store.now.timeIntervalSince1970)
    if case .failure(let error) = access.verifySignedLink(id: id, query: query, tenantOfID: owner, now: now) {
      return problem(error, context)
    }
    guard let owner else { return problem(AccessError.signedLinkInvalid, context) }
    return image(
      head, id: id, tenant: owner, viewer: .tenant, profile: profile, frame: frame, context: context,
      cancellation: cancellation)
  }

  /// The tenant's image, or a video's frame `frame` (on a worker).
  private func image(
    _ head: HTTPRequestHead, id: String, tenant: String, viewer: Viewer, profile: ModelProfile?, frame: Int?,
    context: RequestContext, cancellation: RequestCancellation
  ) -> HTTPResponse {
    switch lookup(tenant: tenant, viewer: viewer, id: id, requestID: context.requestID) {
    case .failure(let failure): return failure.response
    case .success(let record) where frame != nil:
      // A video's frames are stored within `video.frameEdge`; with `?profile=`, sized by that
      // provider's image rule (made on the first read that asks). A photo has no frames, and a
      // number past the last is as missing as a wrong id.
      do {
        guard record.hasMotion,
          let served = try frameImage(
            of: record, number: frame ?? 0, profile: profile, cancellation: cancellation)
        else {
          return problem(AppError.notFound, context)
        }
        return serve(served, head: head, context: context)
      } catch {
        return problem(error, context)
      }
    case .success(let record) where record.hasMotion && profile == .gemini:
      return mp4(of: record, head: head, context: context)
    case .success(let record):
      let chosen = profile ?? options.profiles.defaultProfile(for: tenant)
      do {
        let served = try image(of: record, profile: chosen, cancellation: cancellation)
        return serve(served, head: head, context: context)
      } catch {
        return problem(error, context)
      }
    }
  }

  /// A video's MP4 (`?profile=gemini`): served once its job is `ready`; 503 `video_processing`
  /// with `Retry-After` until then (a client waits on it as on any 503); 422 once it failed.
  private func mp4(of record: AttachmentRecord, head: HTTPRequestHead, context: RequestContext)
    -> HTTPResponse
  {
    do {
      let job = try store.index.videoJob(attachment: record.id)
      switch job?.state {
      case .ready?:
        guard let stored = try store.renditions(of: record)[VideoFacts.mp4Name] else {
          return problem(AppError.videoRenditionFailed, context)
        }
        return serve(
          ServedImage(blob: stored.blob, bytes: stored.bytes, contentType: "video/mp4"), head: head,
          context: context)
      case .failed?: return problem(AppError.videoRenditionFailed, context)
      default: return problem(AppError.videoProcessing, context)
      }
    } catch {
      return problem(error, context)
    }
  }

  /// `GET /v1/attachments/{id}/meta`: the JSON record (read scope, checked on the loop).
  /// With `?profile=`, the top level describes that profile's image, made now if missing.
  func meta(_ head: HTTPRequestHead, id: String, caller: Principal, context: RequestContext) -> HeadDecision {
    let profile = (try? ProfileQuery.profiles(in: head.query).get())?.first
    let requestID = context.requestID
    return .offload { [self] cancellation in
      metaResponse(
        tenant: caller.tenant, viewer: caller.viewer, id: id, profile: profile,
        cancellation: cancellation, requestID: requestID)
    }
  }

  /// The JSON record of `id` as `/meta` answers it, described for `profile` (the tenant's
  /// default when nil; its rendition is made if missing), or the 404 of a missing one (on a
  /// worker).
  func metaResponse(
    tenant: String, viewer: Viewer, id: String, profile: ModelProfile?,
    cancellation: RequestCancellation? = nil, requestID: String
  ) -> HTTPResponse {
    switch lookup(tenant: tenant, viewer: viewer, id: id, requestID: requestID) {
    case .failure(let failure): return failure.response
    case .success(let record):
      let chosen = profile ?? options.profiles.defaultProfile(for: tenant)
      let renditions: [String: Rendition]
      do {
        renditions = try self.renditions(of: record, ensuring: chosen, cancellation: cancellation).renditions
      } catch {
        return problem(error, requestID: requestID)
      }
      return HTTPResponse(
        status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "private, no-cache"],
        body: .bytes(AttachmentJSON.record(view(record, renditions, profile: chosen))))
    }
  }

  /// `DELETE /v1/attachments/{id}` (delete scope, checked on the loop): 204, or 404 exactly
  /// like a missing id.
  func delete(id: String, caller principal: Principal, context: RequestContext) -> HeadDecision {
    guard SecureRandom.isIdentifier(id) else { return .respond(problem(AppError.notFound, context)) }
    // The delete commits a transaction (fsync): not on the event loop.
    return .offload { [self] _ in
      do {
        guard try store.delete(tenant: principal.tenant, id: id, visibleTo: principal.viewer) else {
          return problem(AppError.notFound, context)
        }
        return HTTPResponse(status: 204, headers: ["Cache-Control": "no-store"])
      } catch {
        return problem(error, context)
      }
    }
  }

  /// The tenant's live record, or the 404 a missing (or another tenant's, another user's, or
  /// malformed) id gets.
  private func lookup(tenant: String, viewer: Viewer, id: String, requestID: String) -> Result<
    AttachmentRecord, Failure
  > {
    guard SecureRandom.isIdentifier(id) else {
      return .failure(Failure(problem(AppError.notFound, requestID: requestID)))
    }
    do {
      guard let record = try store.get(tenant: tenant, id: id, visibleTo: viewer) else {
        return .failure(Failure(problem(AppError.notFound, requestID: requestID)))
      }
      return .success(record)
    } catch {
      return .failure(Failure(problem(error, requestID: requestID)))
    }
  }

  /// The image with validators, `If-None-Match` → 304 and a single `Range` → 206 or 416.
  private func serve(_ record: ServedImage, head: HTTPRequestHead, context: RequestContext) -> HTTPResponse {
    let etag = "\"\(record.blob.hex)\""
    var headers: HTTPHeaders = [
      "ETag": etag, "Cache-Control": "private, max-age=\(options.cacheMaxAge), immutable",
      "Accept-Ranges": "bytes",
    ]
    if let match = head.headers.first(name: "If-None-Match"), Self.matches(match, etag: etag) {
      return HTTPResponse(status: 304, headers: headers)
    }
    headers.add(name: "Content-Type", value: record.contentType)
    var range = ByteRange.resolve(head.headers.first(name: "Range"), size: record.bytes)
    // If-Range with another validator asks for the whole (current) representation.
    if let ifRange = head.headers.first(name: "If-Range"), ifRange.trimmingASCIIWhitespace() != etag {
      range = .whole
    }
    let (status, offset, length): (Int, Int, Int)
    switch range {
    case .whole: (status, offset, length) = (200, 0, record.bytes)
    case .partial(let lower, let upper):
      (status, offset, length) = (206, lower, upper - lower + 1)
      headers.add(name: "Content-Range", value: "bytes \(lower)-\(upper)/\(record.bytes)")
    case .unsatisfiable:
      return problem(AppError.rangeNotSatisfiable(size: record.bytes), context)
    }
    let body: HTTPResponse.Body
    if let unstored = record.unstored {
      body = .bytes(Array(unstored[offset..<(offset + length)]))
    } else if let path = store.blobs.path(for: record.blob) {
      body = .file(path: path, offset: UInt64(offset), length: UInt64(length))
    } else if head.method == "HEAD" {
      body = .stream(length: UInt64(length), producer: BlobStream.unread())
    } else {
      // No local file (S3): streamed from the object store, never held whole.
      do {
        let stream = try BlobStream.open(store.blobs, blob: record.blob, range: offset..<(offset + length))
        body = .stream(length: UInt64(length), producer: stream)
      } catch {
        return problem(error, context)
      }
    }
    return HTTPResponse(status: status, headers: headers, body: body)
  }

  /// Whether an `If-None-Match` list names `etag` (weak comparison, RFC 9110 §13.1.2) or is `*`.
  static func matches(_ header: String, etag: String) -> Bool {
    for item in header.split(separator: ",") {
      var tag = item.trimmingASCIIWhitespace()
      if tag == "*" { return true }
      if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
      if tag == etag { return true }
    }
    return false
  }

  /// A response carried through `Result`.
  struct Failure: Error {
    var response: HTTPResponse
    init(_ response: HTTPResponse) { self.response = response }
  }
}
