import HTTP
import ImagePipeline
import Server
import Uploads

// The edge of an upload: what its outcome is on the wire, written in this one place for every
// way a body arrives (plain, spooled, IETF resumable, tus), which the upload layer then dresses
// in its protocol's fields and records for repeats.
extension AttachmentService {
  /// One file: 201 with its record and `Location`, or the file's problem. Several (multipart):
  /// 201 with a list when at least one was stored (failed files as problem objects with their
  /// `part` index) and `Location` of the first stored; when every file failed, the first
  /// failure's problem. A refusal of the whole upload is its problem.
  func answer(_ outcome: UploadOutcome, describing profile: ModelProfile, requestID: String) -> UploadAnswer {
    let results: [Result<StoredAttachment, any Error>?]
    let multipart: Bool
    switch outcome {
    case .refused(let error):
      return UploadAnswer(attachmentID: nil, response: problem(error, requestID: requestID))
    case .processed(let isMultipart, let processed):
      (multipart, results) = (isMultipart, processed)
    }
    var body: [UInt8] = multipart ? [UInt8(ascii: "[")] : []
    var first: StoredAttachment?
    var firstFailure: (any Error)?
    var listed = 0
    for (index, result) in results.enumerated() {
      guard let result else { continue }
      if multipart && listed > 0 { body.append(UInt8(ascii: ",")) }
      listed += 1
      switch result {
      case .success(let stored):
        first = first ?? stored
        AttachmentJSON.record(view(stored.record, stored.renditions, profile: profile), into: &body)
      case .failure(let error):
        firstFailure = firstFailure ?? error
        guard multipart else { break }
        let entry = ErrorTable.publicError(for: error)
        ErrorTable.countRejection(entry, metrics: metrics, volume: volume)
        AttachmentJSON.partError(entry, part: index, into: &body)
      }
    }
    guard let first else {
      let error = firstFailure ?? UploadError.malformedUpload("no file part")
      return UploadAnswer(attachmentID: nil, response: problem(error, requestID: requestID))
    }
    body.append(contentsOf: multipart ? Array("]\n".utf8) : [0x0A])
    let location = options.link(Application.attachmentsPath + "/" + first.record.id)
    return UploadAnswer(
      attachmentID: first.record.id,
      response: HTTPResponse(
        status: 201,
        headers: ["Content-Type": "application/json", "Location": location, "Cache-Control": "no-store"],
        body: .bytes(body)))
  }
}
