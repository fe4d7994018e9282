#if canImport(Darwin)
  import Foundation

  /// iOS 17+ and macOS 14+: one `URLSession` upload task from the file. The system streams the
  /// file from disk, and when attachd answers the creation with `104 Upload Resumption
  /// Supported` it resumes the upload by itself after a dropped connection (the IETF draft; see
  /// docs/resumable.md). This file is not compiled on Linux (see docs/client.md).
  @available(iOS 17.0, macOS 14.0, *)
  struct SystemUpload {
    let transport: Transport
    let url: URL
    let source: FileSource

    func run(progress: (@Sendable (Int64, Int64) -> Void)?) async throws -> Attachment {
      var request = URLRequest(url: url)
      request.httpMethod = "POST"
      request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
      request.setValue(UUID().uuidString, forHTTPHeaderField: "Idempotency-Key")
      let (data, _) = try await transport.send(
        request, file: source.url, progress: progress.map(ProgressDelegate.init))
      progress?(source.size, source.size)
      return try JSONDecoder().decode(Attachment.self, from: data)
    }
  }
#endif
