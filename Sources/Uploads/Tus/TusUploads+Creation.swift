import Foundation
import HTTP
import Server
import Storage

extension TusUploads {
  /// What a creation request asks for, read from its head.
  struct Creation: Sendable {
    /// The declared length, or nil when deferred.
    var length: Int?
    /// The most bytes this caller's upload may hold (the server's cap or a token's `max_bytes`).
    var maxLength: Int
    /// `Upload-Metadata` as sent, or empty.
    var metadata: String
  }

  /// `POST /v1/tus`: reads `Upload-Length` or `Upload-Defer-Length: 1`, `Upload-Metadata`, and
  /// creates the upload (201 + absolute `Location` + `Upload-Expires`). With a body
  /// (creation-with-upload) the bytes go in like a PATCH at offset 0.
  func create(_ head: HTTPRequestHead, caller: UploadCaller, context: inout RequestContext) -> HeadDecision {
    let creation: Creation
    do {
      creation = try readCreation(head, caller: caller)
    } catch {
      return .respond(problem(error, context))
    }
    let location: @Sendable (String) -> String = { [self] id in self.location(for: id, head: head) }
    let requestID = context.requestID
    if TusProtocol.hasBody(head) {
      guard TusProtocol.isOffsetStream(head) else {
        return .respond(problem(TusError.contentTypeRequired, context))
      }
      return createWithUpload(head, creation: creation, caller: caller, location: location, context: &context)
    }
    return .offload(.io) { [self] _ in
      do {
        let state = try store.create(newUpload(creation, caller: caller))
        return HTTPResponse(
          status: 201,
          headers: [
            "Location": location(state.id), "Upload-Expires": Self.expires(state),
            "Cache-Control": "no-store",
          ])
      } catch {
        return problem(error, requestID: requestID)
      }
    }
  }

  /// The creation headers, checked in the order a client can fix them: length, size, metadata.
  func readCreation(_ head: HTTPRequestHead, caller: UploadCaller) throws -> Creation {
    guard !head.headers.contains(name: "Upload-Concat") else { throw TusError.concatenationUnsupported }
    let deferred = try TusProtocol.defersLength(head)
    let length = try TusProtocol.uploadLength(head)
    guard deferred != (length != nil) else { throw TusError.uploadLengthRequired }
    let maxLength = caller.maxBytes
    if let length {
      // An empty upload is an empty image: refused now, as a plain upload without a body is.
      guard length > 0 else { throw UploadError.emptyUpload }
      guard length <= maxLength else {
        throw caller.overLimit(maxLength, serverLimit: uploads.configuration.maxUploadBytes)
      }
    }
    var metadata = ""
    // An empty value means no metadata: tuspy sends `Upload-Metadata:` with nothing after it.
    if let text = try TusProtocol.single(head, "Upload-Metadata", or: .invalidMetadata),
      !text.trimmingASCIIWhitespace().isEmpty
    {
      metadata = try TusMetadata(parsing: text, maxBytes: uploads.configuration.maxMetadataBytes).text
    }
    return Creation(length: length, maxLength: maxLength, metadata: metadata)
  }

  func newUpload(_ creation: Creation, caller: UploadCaller) -> NewUpload {
    NewUpload(
      tenant: caller.tenant, owner: caller.user, length: creation.length, maxLength: creation.maxLength,
      metadata: Array(creation.metadata.utf8), protocolName: TusProtocol.protocolName,
      lifetime: uploads.configuration.resumableLifetime)
  }

  /// The absolute URL of upload `id`, built like every upload URL (`server.publicBaseURL`, else
  /// the request's `Host` and `X-Forwarded-Proto`; the path alone, which tus allows, when the
  /// `Host` is unusable).
  func location(for id: String, head: HTTPRequestHead) -> String {
    uploads.baseURL(head) + TusProtocol.path + "/" + id
  }
}
