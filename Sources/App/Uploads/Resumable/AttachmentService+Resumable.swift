import Foundation
import HTTP
import Server
import Storage

/// IETF resumable uploads (draft-ietf-httpbis-resumable-upload, interop versions 3 to 8; see
/// `ResumableVersion`) on the attachments API: a `POST /v1/attachments` that offers one
/// creates an upload at `/v1/uploads/{id}`, which answers `HEAD` (offset), `PATCH` (append),
/// `DELETE` (cancel) and `OPTIONS`. Every request is authenticated like any upload, and an
/// upload answers 404 to anyone but the tenant and token user that created it.
extension AttachmentService {
  /// Where upload URLs live.
  static let uploadsPath = "/v1/uploads"

  /// `POST /v1/attachments` with an interop version and completeness: the optimistic creation.
  func resumableCreation(_ head: HTTPRequestHead, fields: ResumableFields, context: RequestContext)
    -> HeadDecision
  {
    let complete = fields.complete ?? true
    let answers = ResumableAnswers(version: fields.version, service: self, requestID: context.requestID)
    let contentLength: Int? =
      switch head.framing {
      case .contentLength(let length): Int(length)
      case .none: 0
      case .chunked: nil
      }
    var declared = fields.length
    let admission: UploadAdmission
    let decision = admit(head, context: context, allowsEmptyBody: !complete) { bodyLimit, overLimit in
      if let offset = fields.offset, offset != 0 {
        return answers.problem(AppError.malformedUpload("a creation names no offset"), position: nil)
      }
      if (head.headers.first(name: "Content-Type")?.utf8.count ?? 0) > 1024 {
        return answers.problem(AppError.malformedUpload("Content-Type over 1024 bytes"), position: nil)
      }
      // A complete creation's length is its Content-Length; an Upload-Length must agree.
      if complete, let contentLength {
        if let length = declared, length != contentLength {
          return answers.problem(
            StorageError(.lengthMismatch, "Upload-Length \(length), Content-Length \(contentLength)"),
            position: nil)
        }
        declared = contentLength
      }
      if let length = declared, length > bodyLimit { return answers.problem(overLimit, position: nil) }
      if let length = declared, let contentLength, contentLength > length {
        return answers.problem(
          StorageError(.lengthMismatch, "Content-Length \(contentLength) over Upload-Length \(length)"),
          position: nil)
      }
      return nil
    }
    switch decision {
    case .refused(let response): return .respond(answers.decorate(response, position: nil))
    case .admitted(let admitted): admission = admitted
    }
    let metadata = ResumableMetadata(
      contentType: admission.contentType, idempotencyKey: admission.request.idempotencyKey)
    let transfer = ResumableTransfer(
      service: self,
      kind: .creation(
        baseURL: uploadBaseURL(head) + Self.uploadsPath + "/", metadata: metadata, length: declared),
      complete: complete, request: admission.request, version: fields.version, bodyIsEmpty: contentLength == 0
    )
    return .readBody(uploads.consumer(delegate: transfer))
  }

  /// A request on an upload URL: `HEAD`/`GET` (offset), `PATCH` (append), `DELETE`, `OPTIONS`.
  /// Without a known interop version it is not a resumable request, and nothing is there: 404.
  func uploadResource(_ head: HTTPRequestHead, id: String, context: RequestContext) -> HeadDecision {
    guard let fields = ResumableFields(head) else {
      return .respond(problem(AppError.notFound, context))
    }
    let answers = ResumableAnswers(version: fields.version, service: self, requestID: context.requestID)
    switch head.method {
    case "PATCH": return append(head, id: id, fields: fields, context: context)
    case "OPTIONS": return resumableOptions(head, fields: fields, context: context)
    default: break
    }
    let principal: Principal
    switch access.authorize(head, scope: .upload) {
    case .failure(let error): return .respond(answers.decorate(problem(error, context), position: nil))
    case .success(let p): principal = p
    }
    // Offset retrieval and cancellation name no offset, completeness or length.
    guard !fields.carriesUploadFields else {
      return .respond(
        answers.problem(AppError.malformedUpload("no upload fields on \(head.method)"), position: nil))
    }
    let store = uploads.store
    let tenant = principal.tenant
    if head.method == "DELETE" {
      return .readBody(
        BlockingAnswer(engine: uploads) { [self] in
          do {
            _ = try resumableUpload(id: id, principal: principal)
            guard try store.cancel(tenant: tenant, id: id) else {
              throw StorageError(.notFound, "no upload \(id)")
            }
            return answers.decorate(
              HTTPResponse(status: 204, headers: ["Cache-Control": "no-store"]), position: nil)
          } catch {
            return answers.problem(error, position: nil)
          }
        })
    }
    return .readBody(
      BlockingAnswer(engine: uploads) { [self] in
        do {
          _ = try resumableUpload(id: id, principal: principal)
          // Settled: a request still writing to the upload is taken over and its bytes
          // committed first, so the offset told here is the one the next append must name.
          guard let upload = try store.settledState(tenant: tenant, id: id) else {
            throw StorageError(.notFound, "no upload \(id)")
          }
          return answers.offset(upload)
        } catch {
          return answers.problem(error, position: nil)
        }
      })
  }

  /// `PATCH` on an upload URL: appends its body at `Upload-Offset`.
  private func append(_ head: HTTPRequestHead, id: String, fields: ResumableFields, context: RequestContext)
    -> HeadDecision
  {
    let version = fields.version
    let answers = ResumableAnswers(version: version, service: self, requestID: context.requestID)
    let contentLength: Int? =
      switch head.framing {
      case .contentLength(let length): Int(length)
      case .none: 0
      case .chunked: nil
      }
    // Before -06 an append without completeness completed the upload; from -06 it must say.
    let complete = fields.complete ?? (version.appendRequiresCompleteness ? nil : true)
    let decision = admit(head, context: context, allowsEmptyBody: true, bodyType: false) { _, _ in
      if version.requiresPartialUploadType,
        head.headers.first(name: "Content-Type")?.lowercased().split(separator: ";").first?
          .trimmingCharacters(in: .whitespaces) != "application/partial-upload"
      {
        var response = answers.problem(AppError.unsupportedPatchType, position: nil)
        response.headers.add(name: "Accept-Patch", value: "application/partial-upload")
        return response
      }
      guard fields.offset != nil else {
        return answers.problem(AppError.malformedUpload("an append names its Upload-Offset"), position: nil)
      }
      guard complete != nil else {
        return answers.problem(AppError.malformedUpload("an append says whether it completes"), position: nil)
      }
      return nil
    }
    let admission: UploadAdmission
    switch decision {
    case .refused(let response): return .respond(answers.decorate(response, position: nil))
    case .admitted(let admitted): admission = admitted
    }
    let offset = fields.offset ?? 0
    var length = fields.length
    if complete == true, let contentLength {
      // The remaining bytes are the whole rest: the length follows (the store checks it
      // against a length declared before, and against the Upload-Length sent now).
      if let declared = length, declared != offset + contentLength {
        admission.request.slot.release()
        return .respond(
          answers.problem(
            StorageError(
              .lengthMismatch, "Upload-Length \(declared), offset + Content-Length \(offset + contentLength)"),
            position: nil))
      }
      length = offset + contentLength
    }
    let transfer = ResumableTransfer(
      service: self, kind: .append(id: id, offset: offset, length: length), complete: complete ?? true,
      request: admission.request, version: version, bodyIsEmpty: contentLength == 0)
    return .readBody(uploads.consumer(delegate: transfer))
  }

  /// `OPTIONS` on `/v1/attachments` or an upload URL: what is allowed, and the limits.
  func resumableOptions(_ head: HTTPRequestHead, fields: ResumableFields?, context: RequestContext)
    -> HeadDecision
  {
    let principal: Principal
    switch access.authorize(head, scope: .upload) {
    case .failure(let error): return .respond(problem(error, context))
    case .success(let p): principal = p
    }
    let isUploadURL = head.path.hasPrefix(Self.uploadsPath + "/")
    var headers: HTTPHeaders = [
      "Allow": isUploadURL ? "GET, HEAD, PATCH, DELETE, OPTIONS" : "POST, OPTIONS",
      "Cache-Control": "no-store",
    ]
    guard let fields else { return .respond(HTTPResponse(status: 204, headers: headers)) }
    let answers = ResumableAnswers(version: fields.version, service: self, requestID: context.requestID)
    let limit = access.maxUploadBytes(for: principal, serverLimit: options.maxUploadBytes)
    if let value = answers.limit(maxSize: limit, remaining: Int(uploads.options.resumableTTL)) {
      headers.add(name: "Upload-Limit", value: value)
      headers.add(name: "Accept-Patch", value: "application/partial-upload")
    }
    return .respond(answers.decorate(HTTPResponse(status: 204, headers: headers), position: nil))
  }

  /// The resumable upload `id` of `principal`, or `.notFound`: another tenant's, another token
  /// user's (or a tenant key's, for a token), another protocol's, and an expired one look missing.
  /// Blocking (I/O thread).
  func resumableUpload(id: String, principal: Principal) throws -> UploadState {
    guard let upload = try uploads.store.state(tenant: principal.tenant, id: id),
      upload.protocolName == ResumableTransfer.protocolName, upload.owner == principal.user
    else { throw StorageError(.notFound, "no upload \(id) for this caller") }
    return upload
  }

  /// What upload URLs are built on: `server.publicBaseURL` (the one setting for every absolute
  /// link attachd gives out), else the request's `Host` with `http`, or `https` when the proxy
  /// in front says so (`X-Forwarded-Proto`): a resumable client needs an absolute URL even when
  /// the other links stay relative. A `Host` that is not a plain host[:port] gives a relative
  /// URL (the path alone).
  func uploadBaseURL(_ head: HTTPRequestHead) -> String {
    if !options.publicBaseURL.isEmpty { return options.publicBaseURL }
    guard let host = head.headers.first(name: "Host"), !host.isEmpty, host.utf8.count <= 255,
      host.utf8.allSatisfy({ Self.hostCharacters.contains($0) })
    else { return "" }
    let proto = head.headers.first(name: "X-Forwarded-Proto")?.lowercased()
    return (proto == "https" ? "https://" : "http://") + host
  }

  /// Letters, digits, `-`, `.`, `:`, `[`, `]` (host names, IPv4, bracketed IPv6, a port).
  private static let hostCharacters: Set<UInt8> = Set(
    Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:[]".utf8))
}
