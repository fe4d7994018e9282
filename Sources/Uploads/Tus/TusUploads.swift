import Foundation
import HTTP
import Server
import Storage

/// tus 1.0 (https://tus.io/protocols/resumable-upload) at `/v1/tus` on the durable upload
/// engine: core, creation, creation-with-upload, creation-defer-length, termination,
/// expiration, checksum and checksum-trailer.
///
/// Every request is authenticated like any upload (key or token, `upload` scope, rate limit: by
/// the App, after `TusProtocol.checkVersion`); an upload answers only its creator — the same
/// tenant and, for a token, the same user — and is "not found" to anyone else, exactly like a
/// missing one. Head decisions run on the event loop and only read headers; everything that
/// touches the store is offloaded.
public struct TusUploads: Sendable {
  let uploads: Uploads

  /// The upload store (tus only talks to the `UploadStore` protocol).
  var store: any UploadStore { uploads.store }

  // MARK: - Dispatch

  /// Decides a request on `/v1/tus` (`id` nil) or `/v1/tus/{id}` whose effective method (after
  /// `X-HTTP-Method-Override`) is `method`, from a caller the App authenticated.
  public func head(
    _ head: HTTPRequestHead, method: String, id: String?, caller: UploadCaller, context: inout RequestContext
  ) -> HeadDecision {
    if let refusal = TusProtocol.checkVersion(head, method: method) {
      return .respond(problem(refusal, context))
    }
    switch (method, id) {
    case ("OPTIONS", _): return .respond(options(for: caller))
    case ("POST", nil): return create(head, caller: caller, context: &context)
    case ("HEAD", let id?): return offset(id: id, caller: caller, context: context)
    case ("GET", let id?): return result(id: id, caller: caller, context: &context)
    case ("PATCH", let id?): return patch(head, id: id, caller: caller, context: &context)
    case ("DELETE", let id?): return terminate(id: id, caller: caller, context: context)
    default: return .respond(problem(UploadError.notFound, context))
    }
  }

  /// The methods each tus path takes, for the router (`HEAD` comes with `GET`).
  public static let collectionMethods = ["POST", "OPTIONS"]
  public static let uploadMethods = ["GET", "PATCH", "DELETE", "OPTIONS"]

  // MARK: - OPTIONS

  /// 204 with what this server speaks. `Tus-Max-Size` is the caller's own: the server's
  /// `uploads.maxBytes`, or less for a token with a smaller `max_bytes`.
  func options(for caller: UploadCaller) -> HTTPResponse {
    HTTPResponse(
      status: 204,
      headers: [
        "Tus-Version": TusProtocol.version,
        "Tus-Extension": TusProtocol.extensions.joined(separator: ","),
        "Tus-Max-Size": String(caller.maxBytes),
        "Tus-Checksum-Algorithm": TusProtocol.checksumAlgorithms.map(\.rawValue).joined(separator: ","),
        "Cache-Control": "no-store",
      ])
  }

  // MARK: - HEAD: offset retrieval

  /// 200 with the settled offset (pre-empting a writer still in flight, so the offset is the one
  /// the next PATCH must name), the length or `Upload-Defer-Length: 1`, the metadata as sent,
  /// `Upload-Expires`, and `Content-Location` once the upload became an attachment.
  func offset(id: String, caller: UploadCaller, context: RequestContext) -> HeadDecision {
    .offload(.io) { [self] _ in
      do {
        guard var state = try visibleState(id: id, caller: caller) else {
          return problem(UploadError.notFound, context)
        }
        if state.status == .receiving {
          guard let settled = try store.settledState(tenant: caller.tenant, id: id) else {
            return problem(UploadError.notFound, context)
          }
          state = settled
        }
        var headers = stateHeaders(state)
        headers.add(name: "Cache-Control", value: "no-store")
        return HTTPResponse(status: 200, headers: headers)
      } catch {
        return problem(error, context)
      }
    }
  }

  /// `Upload-Offset`, `Upload-Length` or `Upload-Defer-Length`, `Upload-Metadata`,
  /// `Upload-Expires` and `Content-Location` (once stored).
  func stateHeaders(_ state: UploadState) -> HTTPHeaders {
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
    headers.add(name: "Upload-Expires", value: Self.expires(state))
    if let attachment = state.result?.attachmentID {
      headers.add(name: "Content-Location", value: uploads.host.attachmentPath(attachment))
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
  func terminate(id: String, caller: UploadCaller, context: RequestContext) -> HeadDecision {
    .offload(.io) { [self] _ in
      do {
        guard try visibleState(id: id, caller: caller) != nil,
          try store.cancel(tenant: caller.tenant, id: id)
        else { return problem(UploadError.notFound, context) }
        return HTTPResponse(status: 204, headers: ["Cache-Control": "no-store"])
      } catch {
        return problem(error, context)
      }
    }
  }

  // MARK: - Ownership

  /// The upload when `caller` made it: the store checks the tenant; here the end user (a
  /// tenant key sees only uploads made with a key, a token only its own user's) and the protocol.
  /// Never disturbs a writer in flight.
  func visibleState(id: String, caller: UploadCaller) throws -> UploadState? {
    guard let state = try store.state(tenant: caller.tenant, id: id),
      state.protocolName == TusProtocol.protocolName, state.owner == caller.user
    else { return nil }
    return state
  }

  // MARK: - Problems

  func problem(_ error: any Error, _ context: RequestContext) -> HTTPResponse {
    uploads.problem(error, requestID: context.requestID)
  }

  func problem(_ error: any Error, requestID: String) -> HTTPResponse {
    uploads.problem(error, requestID: requestID)
  }
}
