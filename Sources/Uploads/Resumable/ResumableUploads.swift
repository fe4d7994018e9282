import Foundation
import HTTP
import Server
import Storage

/// IETF resumable uploads (draft-ietf-httpbis-resumable-upload, interop versions 3 to 8; see
/// `ResumableVersion`) on the attachments API: a `POST /v1/attachments` that offers one
/// creates an upload at `/v1/uploads/{id}`, which answers `HEAD` (offset), `PATCH` (append),
/// `DELETE` (cancel) and `OPTIONS`. Every request is authenticated like any upload (by the
/// App, before it gets here), and an upload answers 404 to anyone but the tenant and token
/// user that created it.
public struct ResumableUploads: Sendable {
  let uploads: Uploads

  /// Where upload URLs live.
  public static let path = "/v1/uploads"

  /// Whether `head` is a resumable-upload request, as far as its route needs: on an upload URL
  /// any request naming an interop version attachd speaks; on `/v1/attachments` one that also
  /// says whether it completes the upload (`POST`), or names the version at all (`OPTIONS`).
  public static func isResumable(_ head: HTTPRequestHead, onUploadURL: Bool) -> Bool {
    guard let fields = ResumableFields(head) else { return false }
    return onUploadURL || head.method != "POST" || fields.complete != nil
  }

  /// Labels a resumable request: every answer of it, the server's own included, echoes the
  /// interop version it named (as every tus answer carries `Tus-Resumable`).
  public static func label(_ head: HTTPRequestHead, onUploadURL: Bool, context: inout RequestContext) {
    guard isResumable(head, onUploadURL: onUploadURL), let fields = ResumableFields(head) else { return }
    context.responseHeaders.replaceOrAdd(
      name: "Upload-Draft-Interop-Version", value: String(fields.version.number))
  }

  /// `POST /v1/attachments` with an interop version and completeness: the optimistic creation.
  func creation(
    _ head: HTTPRequestHead, fields: ResumableFields, caller: UploadCaller, context: inout RequestContext
  ) -> HeadDecision {
    let complete = fields.complete ?? true
    let answers = ResumableAnswers(version: fields.version, uploads: uploads, requestID: context.requestID)
    let contentLength: Int? =
      switch head.framing {
      case .contentLength(let length): Int(length)
      case .none: 0
      case .chunked: nil
      }
    var declared = fields.length
    let admission: UploadAdmission
    let decision = uploads.admit(head, caller: caller, context: &context, allowsEmptyBody: !complete) {
      bodyLimit, overLimit in
      if let offset = fields.offset, offset != 0 {
        return answers.problem(UploadError.malformedUpload("a creation names no offset"), position: nil)
      }
      if (head.headers.first(name: "Content-Type")?.utf8.count ?? 0) > 1024 {
        return answers.problem(UploadError.malformedUpload("Content-Type over 1024 bytes"), position: nil)
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
    case .failure(let refusal): return .respond(answers.decorate(refusal.response, position: nil))
    case .success(let admitted): admission = admitted
    }
    let metadata = ResumableMetadata(
      contentType: admission.contentType, idempotencyKey: admission.request.idempotencyKey)
    let transfer = ResumableTransfer(
      uploads: uploads,
      kind: .creation(
        baseURL: uploads.baseURL(head) + Self.path + "/", metadata: metadata, length: declared),
      complete: complete, request: admission.request, version: fields.version, bodyIsEmpty: contentLength == 0
    )
    return .readBody(uploads.engine.consumer(delegate: transfer))
  }

  /// A request on an upload URL (`isResumable`, caller authenticated): `HEAD`/`GET` (offset),
  /// `PATCH` (append), `DELETE`, `OPTIONS`.
  public func resource(
    _ head: HTTPRequestHead, id: String, caller: UploadCaller, context: inout RequestContext
  ) -> HeadDecision {
    guard let fields = ResumableFields(head) else {
      return .respond(uploads.problem(UploadError.notFound, requestID: context.requestID))
    }
    let answers = ResumableAnswers(version: fields.version, uploads: uploads, requestID: context.requestID)
    switch head.method {
    case "PATCH": return append(head, id: id, fields: fields, caller: caller, context: &context)
    case "OPTIONS": return options(head, fields: fields, caller: caller, context: context)
    default: break
    }
    // Offset retrieval and cancellation name no offset, completeness or length.
    guard !fields.carriesUploadFields else {
      return .respond(
        answers.problem(UploadError.malformedUpload("no upload fields on \(head.method)"), position: nil))
    }
    let store = uploads.store
    let tenant = caller.tenant
    if head.method == "DELETE" {
      return .offload(.io) { [self] _ in
        do {
          _ = try upload(id: id, caller: caller)
          guard try store.cancel(tenant: tenant, id: id) else {
            throw StorageError(.notFound, "no upload \(id)")
          }
          return answers.decorate(
            HTTPResponse(status: 204, headers: ["Cache-Control": "no-store"]), position: nil)
        } catch {
          return answers.problem(error, position: nil)
        }
      }
    }
    return .offload(.io) { [self] _ in
      do {
        _ = try upload(id: id, caller: caller)
        // Settled: a request still writing to the upload is taken over and its bytes
        // committed first, so the offset told here is the one the next append must name.
        guard let upload = try store.settledState(tenant: tenant, id: id) else {
          throw StorageError(.notFound, "no upload \(id)")
        }
        return answers.offset(upload)
      } catch {
        return answers.problem(error, position: nil)
      }
    }
  }

  /// `PATCH` on an upload URL: appends its body at `Upload-Offset`.
  private func append(
    _ head: HTTPRequestHead, id: String, fields: ResumableFields, caller: UploadCaller,
    context: inout RequestContext
  ) -> HeadDecision {
    let version = fields.version
    let answers = ResumableAnswers(version: version, uploads: uploads, requestID: context.requestID)
    let contentLength: Int? =
      switch head.framing {
      case .contentLength(let length): Int(length)
      case .none: 0
      case .chunked: nil
      }
    // Before -06 an append without completeness completed the upload; from -06 it must say.
    let complete = fields.complete ?? (version.appendRequiresCompleteness ? nil : true)
    let decision = uploads.admit(
      head, caller: caller, context: &context, allowsEmptyBody: true, bodyType: false
    ) { _, _ in
      if version.requiresPartialUploadType,
        head.headers.first(name: "Content-Type")?.lowercased().split(separator: ";").first?
          .trimmingCharacters(in: .whitespaces) != "application/partial-upload"
      {
        var response = answers.problem(UploadError.unsupportedPatchType, position: nil)
        response.headers.add(name: "Accept-Patch", value: "application/partial-upload")
        return response
      }
      guard fields.offset != nil else {
        return answers.problem(
          UploadError.malformedUpload("an append names its Upload-Offset"), position: nil)
      }
      guard complete != nil else {
        return answers.problem(
          UploadError.malformedUpload("an append says whether it completes"), position: nil)
      }
      return nil
    }
    let admission: UploadAdmission
    switch decision {
    case .failure(let refusal): return .respond(answers.decorate(refusal.response, position: nil))
    case .success(let admitted): admission = admitted
    }
    let offset = fields.offset ?? 0
    var length = fields.length
    if complete == true, let contentLength {
      // The remaining bytes are the whole rest: the length follows (the store checks it
      // against a length declared before, and against the Upload-Length sent now).
      if let declared = length, declared != offset + contentLength {
        return .respond(
          answers.problem(
            StorageError(
              .lengthMismatch, "Upload-Length \(declared), offset + Content-Length \(offset + contentLength)"),
            position: nil))
      }
      length = offset + contentLength
    }
    let transfer = ResumableTransfer(
      uploads: uploads, kind: .append(id: id, offset: offset, length: length), complete: complete ?? true,
      request: admission.request, version: version, bodyIsEmpty: contentLength == 0)
    return .readBody(uploads.engine.consumer(delegate: transfer))
  }

  /// `OPTIONS` on `/v1/attachments` or an upload URL (caller authenticated): what is allowed,
  /// and the limits.
  func options(
    _ head: HTTPRequestHead, fields: ResumableFields?, caller: UploadCaller, context: RequestContext
  ) -> HeadDecision {
    let isUploadURL = head.path.hasPrefix(Self.path + "/")
    var headers: HTTPHeaders = [
      "Allow": isUploadURL ? "GET, HEAD, PATCH, DELETE, OPTIONS" : "POST, OPTIONS",
      "Cache-Control": "no-store",
    ]
    guard let fields else { return .respond(HTTPResponse(status: 204, headers: headers)) }
    let answers = ResumableAnswers(version: fields.version, uploads: uploads, requestID: context.requestID)
    if let value = answers.limit(
      maxSize: caller.maxBytes, remaining: Int(uploads.configuration.resumableLifetime))
    {
      headers.add(name: "Upload-Limit", value: value)
      headers.add(name: "Accept-Patch", value: "application/partial-upload")
    }
    return .respond(answers.decorate(HTTPResponse(status: 204, headers: headers), position: nil))
  }

  /// `OPTIONS /v1/attachments` (caller authenticated), with the resumable fields it names.
  public func options(_ head: HTTPRequestHead, caller: UploadCaller, context: RequestContext) -> HeadDecision
  {
    options(head, fields: ResumableFields(head), caller: caller, context: context)
  }

  /// The resumable upload `id` of `caller`, or `.notFound`: another tenant's, another token
  /// user's (or a tenant key's, for a token), another protocol's, and an expired one look missing.
  /// Blocking (I/O thread).
  func upload(id: String, caller: UploadCaller) throws -> UploadState {
    guard let upload = try uploads.store.state(tenant: caller.tenant, id: id),
      upload.protocolName == ResumableTransfer.protocolName, upload.owner == caller.user
    else { throw StorageError(.notFound, "no upload \(id) for this caller") }
    return upload
  }
}
