import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The package's own resumable client: the IETF *Resumable Uploads for HTTP* draft, interop
/// version 8 (what iOS 26 sends). It creates the upload with an empty body and its length, then
/// appends the file in chunks read from disk; after a lost connection it asks the server for
/// its offset (`HEAD`) and goes on from there — the server's offset is the truth, bytes it did
/// not make durable are sent again.
///
/// Why its own and not `URLSession`'s: swift-corelibs-foundation does not speak the draft, and
/// iOS 16 neither; on iOS 17+ the system's upload tasks resume by themselves (see
/// docs/client.md), and this client works there too.
struct ResumableUpload {
  static let interop = "8"
  let transport: Transport
  let creationURL: URL
  let source: FileSource
  let chunkSize: Int

  func run(progress: (@Sendable (Int64, Int64) -> Void)?) async throws -> Attachment {
    let uploadURL = try await create()
    do {
      return try await append(to: uploadURL, progress: progress)
    } catch is CancellationError {
      // The server keeps an incomplete upload until it expires; say at once that it is gone.
      let transport = self.transport
      let request = Self.request(uploadURL, method: "DELETE")
      await Task.detached { _ = try? await transport.send(request, retryable: false) }.value
      throw CancellationError()
    }
  }

  /// `POST` with `Upload-Complete: ?0` and no body: the server answers 201 with the upload's URL.
  func create() async throws -> URL {
    var request = Self.request(creationURL, method: "POST")
    request.setValue("?0", forHTTPHeaderField: "Upload-Complete")
    request.setValue(String(source.size), forHTTPHeaderField: "Upload-Length")
    request.setValue(UUID().uuidString, forHTTPHeaderField: "Idempotency-Key")
    let (_, response) = try await transport.send(request, body: Data())
    guard let location = response.value(forHTTPHeaderField: "Location"),
      let url = URL(string: location, relativeTo: creationURL)?.absoluteURL
    else {
      throw AttachdError(status: response.statusCode, code: "invalid_response", detail: "no upload URL")
    }
    return url
  }

  /// Appends from the server's offset until the file is in; the last append answers the record.
  func append(to uploadURL: URL, progress: (@Sendable (Int64, Int64) -> Void)?) async throws -> Attachment {
    var offset: Int64 = 0
    var failures = 0
    progress?(0, source.size)
    while true {
      try Task.checkCancellation()
      let count = Int(min(Int64(chunkSize), source.size - offset))
      let last = offset + Int64(count) == source.size
      var request = Self.request(uploadURL, method: "PATCH")
      request.setValue(String(offset), forHTTPHeaderField: "Upload-Offset")
      request.setValue(last ? "?1" : "?0", forHTTPHeaderField: "Upload-Complete")
      request.setValue("application/partial-upload", forHTTPHeaderField: "Content-Type")
      do {
        let chunk = try source.read(offset: offset, count: count)
        // Not retried inside: after a failure the offset must be asked for first.
        let (data, _) = try await transport.send(request, body: chunk, retryable: false)
        failures = 0
        offset += Int64(count)
        progress?(offset, source.size)
        if last { return try JSONDecoder().decode(Attachment.self, from: data) }
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

  /// `HEAD` on the upload: the offset the server made durable.
  func serverOffset(_ uploadURL: URL) async throws -> Int64 {
    let (_, response) = try await transport.send(Self.request(uploadURL, method: "HEAD"))
    guard let offset = response.value(forHTTPHeaderField: "Upload-Offset").flatMap(Int64.init) else {
      throw AttachdError(status: response.statusCode, code: "invalid_response", detail: "no Upload-Offset")
    }
    return offset
  }

  static func request(_ url: URL, method: String) -> URLRequest {
    var request = URLRequest(url: url)
    request.httpMethod = method
    request.setValue(interop, forHTTPHeaderField: "Upload-Draft-Interop-Version")
    return request
  }
}
