import HTTP
import Server

/// `POST /v1/attachments`: the body is the image (any `Content-Type`) or `multipart/form-data`
/// with file parts. A request that offers an IETF resumable upload (an interop version and
/// completeness) creates one instead.
public struct PlainUploads: Sendable {
  let uploads: Uploads

  /// Decides an upload from its head (the caller is authenticated): a resumable creation, or
  /// the checks of `Uploads.admit` and then the body, in memory or spooled.
  public func head(_ head: HTTPRequestHead, caller: UploadCaller, context: inout RequestContext)
    -> HeadDecision
  {
    if let resumable = ResumableFields(head), resumable.complete != nil {
      return uploads.resumable.creation(head, fields: resumable, caller: caller, context: &context)
    }
    let admission: UploadAdmission
    switch uploads.admit(head, caller: caller, context: &context) {
    case .failure(let refusal): return .respond(refusal.response)
    case .success(let admitted): admission = admitted
    }
    do {
      return .readBody(
        try PlainUploadConsumer(
          uploads: uploads, request: admission.request, boundary: admission.boundary,
          expectedBytes: admission.expectedBytes))
    } catch {
      return .respond(uploads.problem(error, requestID: context.requestID))
    }
  }
}
