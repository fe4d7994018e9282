import Foundation
import HTTP
import Server
import Storage

/// tus 1.0 (https://tus.io/protocols/resumable-upload) at `/v1/tus` on the durable upload
/// engine: core, creation, creation-with-upload, creation-defer-length, termination,
/// expiration, checksum and checksum-trailer.
///
/// Every request is authenticated like any upload (key or token, `upload` scope, rate limit);
/// an upload answers only its creator — the same tenant and, for a token, the same user — and
/// is "not found" to anyone else, exactly like a missing one. Head decisions run on the event
/// loop and only read headers; everything that touches the store is offloaded.
final class TusService: Sendable {
  let attachments: AttachmentService
  /// Where checksummed chunks wait for their check when they outgrow memory (the data
  /// directory: scratch files are unlinked at once and never seen there).
  let scratchDirectory: String

  /// The tus adapter over `attachments`' upload engine; removes scratch files a crash left in
  /// `scratchDirectory` (this process owns it, as it owns the embedded index).
  init(attachments: AttachmentService, scratchDirectory: String) throws {
    self.attachments = attachments
    self.scratchDirectory = scratchDirectory
    try HeldBytes.removeLeftovers(in: scratchDirectory)
  }

  /// The upload engine's store (tus only talks to the `UploadStore` protocol).
  var uploads: any UploadStore { attachments.uploads.store }
  /// The engine's `uploads.*` settings (lifetime, public URL, buffer size).
  var options: Application.UploadOptions { attachments.uploads.options }
  var access: AccessControl { attachments.access }

  // MARK: - Dispatch

  /// Decides a request on `/v1/tus` (`id` nil) or `/v1/tus/{id}` whose effective method (after
  /// `X-HTTP-Method-Override`) is `method`.
  func head(_ head: HTTPRequestHead, method: String, id: String?, context: RequestContext) -> HeadDecision {
    if let refusal = TusProtocol.checkVersion(head, method: method) {
      return .respond(problem(refusal, context))
    }
    let principal: Principal
    switch access.authorize(head, scope: .upload) {
    case .failure(let error): return .respond(problem(error, context))
    case .success(let p): principal = p
    }
    switch (method, id) {
    case ("OPTIONS", _): return .respond(options(for: principal))
    case ("POST", nil): return create(head, principal: principal, context: context)
    case ("HEAD", let id?): return offset(id: id, principal: principal, context: context)
    case ("GET", let id?): return result(id: id, principal: principal, context: context)
    case ("PATCH", let id?): return patch(head, id: id, principal: principal, context: context)
    case ("DELETE", let id?): return terminate(id: id, principal: principal, context: context)
    default: return .respond(problem(AppError.notFound, context))
    }
  }

  /// The methods each tus path takes, for the router (`HEAD` comes with `GET`).
  static let collectionMethods = ["POST", "OPTIONS"]
  static let uploadMethods = ["GET", "PATCH", "DELETE", "OPTIONS"]

  // MARK: - OPTIONS

  /// 204 with what this server speaks. `Tus-Max-Size` is the caller's own: the server's
  /// `uploads.maxBytes`, or less for a token with a smaller `max_bytes`.
  func options(for principal: Principal) -> HTTPResponse {
    let maxSize = access.maxUploadBytes(for: principal, serverLimit: attachments.options.maxUploadBytes)
    return HTTPResponse(
      status: 204,
      headers: [
        "Tus-Version": TusProtocol.version,
        "Tus-Extension": TusProtocol.extensions.joined(separator: ","),
        "Tus-Max-Size": String(maxSize),
        "Tus-Checksum-Algorithm": TusProtocol.checksumAlgorithms.map(\.rawValue).joined(separator: ","),
        "Cache-Control": "no-store",
      ])
  }

  // MARK: - HEAD: offset retrieval

  /// 200 with the settled offset (pre-empting a writer still in flight, so the offset is the one
  /// the next PATCH must name), the length or `Upload-Defer-Length: 1`, the metadata as sent,
  /// `Upload-Expires`, and `Content-Location` once the upload became an attachment.
  func offset(id: String, principal: Principal, context: RequestContext) -> HeadDecision {
    .offload { [self] _ in
      do {
        guard var state = try visibleState(id: id, principal: principal) else {
          return problem(AppError.notFound, context)
        }
        if state.status == .receiving {
          guard let settled = try uploads.settledState(tenant: principal.tenant, id: id) else {
            return problem(AppError.notFound, context)
          }
          state = settled
        }
        var headers = Self.stateHeaders(state)
        headers.add(name: "Cache-Control", value: "no-store")
        return HTTPResponse(status: 200, headers: headers)
      } catch {
        return problem(error, context)
      }
    }
  }

  /// `Upload-Offset`, `Upload-Length` or `Upload-Defer-Length`, `Upload-Metadata`,
  /// `Upload-Expires` and `Content-Location` (once stored).
  static func stateHeaders(_ state: UploadState) -> HTTPHeaders {
    var headers: HTTPHeaders = [:]
    let offset = state.isComplete ? (state.length ?? state.offset) : state.offset
    headers.add(name: "Upload-Offset", value: String(offset))
    if let length = state.length {
      headers.add(name: "Upload-Length", value: String(length))
    } else {
      headers.add(name: "Upload-Defer-Length", value: "1")
    }
    if !state.metadata.isEmpty {
      headers.add(name: "Upload-Metadata", value: String(decoding: state.metadata, as: UTF8.self))
    }
    // Complete or not, the URL answers (HEAD, GET) until then.
    headers.add(name: "Upload-Expires", value: expires(state))
    if let attachment = state.result?.attachmentID {
      headers.add(name: "Content-Location", value: Application.attachmentsPath + "/" + attachment)
    }
    return headers
  }

  /// `Upload-Expires` in RFC 9110 date form.
  static func expires(_ state: UploadState) -> String {
    HTTPDateCache.string(epochSeconds: Int64(state.expiresAt.timeIntervalSince1970.rounded(.down)))
  }

  // MARK: - DELETE: termination

  /// 204 once the upload and its bytes are gone (a writer in flight is stopped first); the URL
  /// is a 404 from then on. An attachment the upload already became stays.
  func terminate(id: String, principal: Principal, context: RequestContext) -> HeadDecision {
    .offload { [self] _ in
      do {
        guard try visibleState(id: id, principal: principal) != nil,
          try uploads.cancel(tenant: principal.tenant, id: id)
        else { return problem(AppError.notFound, context) }
        return HTTPResponse(status: 204, headers: ["Cache-Control": "no-store"])
      } catch {
        return problem(error, context)
      }
    }
  }

  // MARK: - Ownership

  /// The upload when `principal` made it: the store checks the tenant; here the end user (a
  /// tenant key sees only uploads made with a key, a token only its own user's) and the protocol.
  /// Never disturbs a writer in flight.
  func visibleState(id: String, principal: Principal) throws -> UploadState? {
    guard let state = try uploads.state(tenant: principal.tenant, id: id),
      state.protocolName == TusProtocol.protocolName, state.owner == principal.user
    else { return nil }
    return state
  }

  // MARK: - Problems

  func problem(_ error: any Error, _ context: RequestContext) -> HTTPResponse {
    attachments.problem(error, requestID: context.requestID)
  }

  func problem(_ error: any Error, requestID: String) -> HTTPResponse {
    attachments.problem(error, requestID: requestID)
  }
}
