import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The package's own resumable client: it creates the upload with an empty body and the file's
/// length, then appends the file in chunks read from disk; after a lost connection it asks the
/// server for its offset (`HEAD`) and goes on from there — the server's offset is the truth,
/// bytes it did not make durable are sent again. What the requests look like is the `dialect`'s
/// (the IETF draft or tus 1.0); this loop is the same for both.
///
/// Why its own and not `URLSession`'s: swift-corelibs-foundation speaks neither protocol, and
/// iOS 16 neither; on iOS 17+ the system's upload tasks resume by themselves (see
/// docs/client.md), and this client works there too.
struct ResumableUpload {
  let transport: Transport
  let dialect: any ResumableDialect
  let source: FileSource
  let chunkSize: Int

  func run(progress: (@Sendable (Int64, Int64) -> Void)?) async throws -> Attachment {
    let uploadURL = try await create()
    do {
      return try await append(to: uploadURL, progress: progress)
    } catch is CancellationError {
      // The server keeps an incomplete upload until it expires; say at once that it is gone.
      let transport = self.transport
      let request = dialect.request(uploadURL, method: "DELETE")
      await Task.detached { _ = try? await transport.send(request, retryable: false) }.value
      throw CancellationError()
    }
  }

  /// The creation request, answered 201 with the upload's URL.
  func create() async throws -> URL {
    let (_, response) = try await transport.send(dialect.creation(length: source.size), body: Data())
    guard let location = response.value(forHTTPHeaderField: "Location"),
      let url = URL(string: location, relativeTo: dialect.creationURL)?.absoluteURL
    else {
      throw AttachdError(status: response.statusCode, code: "invalid_response", detail: "no upload URL")
    }
    return url
  }

  /// Appends from the server's offset until the file is in; the last append's answer leads to
  /// the record.
  func append(to uploadURL: URL, progress: (@Sendable (Int64, Int64) -> Void)?) async throws -> Attachment {
    var offset: Int64 = 0
    var failures = 0
    progress?(0, source.size)
    while true {
      try Task.checkCancellation()
      let count = Int(min(Int64(chunkSize), source.size - offset))
      let last = offset + Int64(count) == source.size
      let request = dialect.append(to: uploadURL, offset: offset, last: last)
      do {
        let chunk = try source.read(offset: offset, count: count)
        // Not retried inside: after a failure the offset must be asked for first.
        let answer = try await transport.send(request, body: chunk, retryable: false)
        failures = 0
        offset += Int64(count)
        progress?(offset, source.size)
        if last { return try await dialect.attachment(answer: answer, transport: transport) }
      } catch let error as AttachdError where error.isRetryable || error.code == "upload_offset_mismatch" {
        failures += 1
        guard failures < transport.retry.attempts else { throw error }
        if error.code != "upload_offset_mismatch" {
          try await transport.retry.wait(attempt: failures, retryAfter: error.retryAfter)
        }
        offset = try await serverOffset(uploadURL)
        progress?(offset, source.size)
      }
    }
  }

  /// `HEAD` on the upload: the offset the server made durable (`Upload-Offset` in both protocols).
  func serverOffset(_ uploadURL: URL) async throws -> Int64 {
    let (_, response) = try await transport.send(dialect.request(uploadURL, method: "HEAD"))
    guard let offset = response.value(forHTTPHeaderField: "Upload-Offset").flatMap(Int64.init) else {
      throw AttachdError(status: response.statusCode, code: "invalid_response", detail: "no Upload-Offset")
    }
    return offset
  }
}

/// The requests of one resumable protocol, for `ResumableUpload`'s loop.
protocol ResumableDialect: Sendable {
  /// Where uploads are created.
  var creationURL: URL { get }
  /// Creates an upload of `length` bytes (sent with an empty body).
  func creation(length: Int64) -> URLRequest
  /// Appends the body at `offset`; `last` when it brings the file's last byte.
  func append(to uploadURL: URL, offset: Int64, last: Bool) -> URLRequest
  /// A request on the upload with the protocol's headers (`HEAD`, `DELETE`).
  func request(_ url: URL, method: String) -> URLRequest
  /// The attachment the last append made, from that append's answer.
  func attachment(answer: (Data, HTTPURLResponse), transport: Transport) async throws -> Attachment
}

/// The IETF *Resumable Uploads for HTTP* draft, interop version 8 (what iOS 26 sends): creation
/// with `Upload-Complete: ?0`, appends with `Upload-Offset` and `Upload-Complete`, and the last
/// append answers the record.
struct IETFDraftDialect: ResumableDialect {
  static let interop = "8"
  /// `POST /v1/attachments`.
  let creationURL: URL
  /// The model profile, sent as the `profile` query of every append: the server reads it from the
  /// request that completes the upload (the upload URL it answers carries no query).
  let profile: String?

  func creation(length: Int64) -> URLRequest {
    var request = request(creationURL, method: "POST")
    request.setValue("?0", forHTTPHeaderField: "Upload-Complete")
    request.setValue(String(length), forHTTPHeaderField: "Upload-Length")
    request.setValue(UUID().uuidString, forHTTPHeaderField: "Idempotency-Key")
    return request
  }

  func append(to uploadURL: URL, offset: Int64, last: Bool) -> URLRequest {
    var request = request(uploadURL.withProfile(profile), method: "PATCH")
    request.setValue(String(offset), forHTTPHeaderField: "Upload-Offset")
    request.setValue(last ? "?1" : "?0", forHTTPHeaderField: "Upload-Complete")
    request.setValue("application/partial-upload", forHTTPHeaderField: "Content-Type")
    return request
  }

  func request(_ url: URL, method: String) -> URLRequest {
    var request = URLRequest(url: url)
    request.httpMethod = method
    request.setValue(Self.interop, forHTTPHeaderField: "Upload-Draft-Interop-Version")
    return request
  }

  func attachment(answer: (Data, HTTPURLResponse), transport: Transport) async throws -> Attachment {
    try JSONDecoder().decode(Attachment.self, from: answer.0)
  }
}
