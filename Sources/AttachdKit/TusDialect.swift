import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// tus 1.0 (core, `creation`, `termination`) at attachd's `/v1/tus`: every request carries
/// `Tus-Resumable: 1.0.0`, appends are `application/offset+octet-stream` at `Upload-Offset`, and
/// the last one answers `204` with the attachment's `Content-Location`, whose record is read
/// next. No `Upload-Metadata`: attachd uses it for nothing, and a file name can say more about
/// the user than the upload needs.
struct TusDialect: ResumableDialect {
  static let version = "1.0.0"
  /// `POST /v1/tus`.
  let creationURL: URL
  /// The model profile the record describes (tus creations make no renditions; the record of
  /// `/meta?profile=` describes the profile, and its image is made on its first read).
  let profile: String?

  func creation(length: Int64) -> URLRequest {
    var request = request(creationURL, method: "POST")
    request.setValue(String(length), forHTTPHeaderField: "Upload-Length")
    return request
  }

  func append(to uploadURL: URL, offset: Int64, last: Bool) -> URLRequest {
    var request = request(uploadURL, method: "PATCH")
    request.setValue(String(offset), forHTTPHeaderField: "Upload-Offset")
    request.setValue("application/offset+octet-stream", forHTTPHeaderField: "Content-Type")
    return request
  }

  func request(_ url: URL, method: String) -> URLRequest {
    var request = URLRequest(url: url)
    request.httpMethod = method
    request.setValue(Self.version, forHTTPHeaderField: "Tus-Resumable")
    return request
  }

  func attachment(answer: (Data, HTTPURLResponse), transport: Transport) async throws -> Attachment {
    guard let location = answer.1.value(forHTTPHeaderField: "Content-Location"),
      let attachmentURL = URL(string: location, relativeTo: creationURL)?.absoluteURL
    else {
      throw AttachdError(status: answer.1.statusCode, code: "invalid_response", detail: "no Content-Location")
    }
    let meta = attachmentURL.appendingPathComponent("meta").withProfile(profile)
    let (data, _) = try await transport.send(URLRequest(url: meta))
    return try JSONDecoder().decode(Attachment.self, from: data)
  }
}
