import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The client of one attachd: uploads files from disk, reads and deletes attachments.
///
///     let client = AttachdClient(baseURL: URL(string: "https://attachd.example.com")!) {
///       try await myBackend.uploadToken()   // the app's own backend mints it
///     }
///     let attachment = try await client.upload(file: url, profile: "anthropic") { sent, total in … }
public final class AttachdClient: Sendable {
  public let baseURL: URL
  /// Bytes read from the file and sent per request. A file up to this size goes in one plain
  /// `POST`; a larger one as a resumable upload (`resumableProtocol`) of appends this size, so
  /// memory stays at one chunk whatever the file's size, and a dropped connection loses at most
  /// one chunk.
  public let chunkSize: Int
  /// What the package's own resumable client speaks for files over `chunkSize`.
  public let resumableProtocol: ResumableProtocol
  let transport: Transport

  /// `tokenProvider` returns a credential (an upload token, or a tenant key on a server): it is
  /// called for the first request and once more when the server answers `401 token_expired`.
  public init(
    baseURL: URL, chunkSize: Int = 1 << 20, resumableProtocol: ResumableProtocol = .ietfDraft,
    retry: RetryPolicy = RetryPolicy(), session: URLSession = URLSession(configuration: .ephemeral),
    tokenProvider: @escaping @Sendable () async throws -> String
  ) {
    self.baseURL = baseURL
    self.chunkSize = max(64 << 10, chunkSize)
    self.resumableProtocol = resumableProtocol
    self.transport = Transport(session: session, tokens: TokenCache(provider: tokenProvider), retry: retry)
  }

  /// Uploads the file at `file`, streaming it from disk. `profile` names a model profile
  /// (`anthropic`, `openai`, `gemini`, `default`); `progress` is told the bytes sent so far and
  /// the file's size. Cancelling the calling task stops the upload, and the server stores
  /// nothing. Throws `AttachdError` with the server's problem `code`.
  public func upload(
    file: URL, profile: String? = nil, progress: (@Sendable (Int64, Int64) -> Void)? = nil
  ) async throws -> Attachment {
    let source = try FileSource(url: file)
    let url = baseURL.appendingPathComponent("v1/attachments").withProfile(profile)
    #if canImport(Darwin)
      if resumableProtocol == .ietfDraft, #available(iOS 17.0, macOS 14.0, *) {
        return try await SystemUpload(transport: transport, url: url, source: source).run(progress: progress)
      }
    #endif
    if source.size <= Int64(chunkSize) {
      return try await PlainUpload(transport: transport, url: url, source: source).run(progress: progress)
    }
    let dialect: any ResumableDialect =
      switch resumableProtocol {
      case .ietfDraft: IETFDraftDialect(creationURL: url, profile: profile)
      case .tus: TusDialect(creationURL: baseURL.appendingPathComponent("v1/tus"), profile: profile)
      }
    return try await ResumableUpload(
      transport: transport, dialect: dialect, source: source, chunkSize: chunkSize
    )
    .run(progress: progress)
  }

  /// Uploads `files` in one `multipart/form-data` request (a part named `file` each), streamed
  /// from disk: the body is put together in a temporary file by copying each file in chunks, and
  /// sent from that file. Answers one result per file, in order: the attachment, or the
  /// server's problem for that part. When every part is refused, the first refusal is thrown.
  /// Not resumable: a lost connection sends the whole body again (with the same
  /// `Idempotency-Key`).
  public func uploadMultipart(
    files: [URL], profile: String? = nil, progress: (@Sendable (Int64, Int64) -> Void)? = nil
  ) async throws -> [Result<Attachment, AttachdError>] {
    let sources = try files.map(FileSource.init)
    return try await MultipartUpload(
      transport: transport, url: baseURL.appendingPathComponent("v1/attachments").withProfile(profile),
      sources: sources, chunkSize: chunkSize
    )
    .run(progress: progress)
  }

  /// Uploads a file and reports progress as an `AsyncStream` of (sent, total) besides the answer.
  public func uploadWithProgress(file: URL, profile: String? = nil) -> (
    progress: AsyncStream<(sent: Int64, total: Int64)>, result: Task<Attachment, any Error>
  ) {
    let (stream, continuation) = AsyncStream<(sent: Int64, total: Int64)>.makeStream()
    let task = Task {
      defer { continuation.finish() }
      return try await upload(file: file, profile: profile) { continuation.yield((sent: $0, total: $1)) }
    }
    return (stream, task)
  }

  /// The record of attachment `id`.
  public func attachment(id: String) async throws -> Attachment {
    let request = URLRequest(url: baseURL.appendingPathComponent("v1/attachments/\(id)/meta"))
    let (data, _) = try await transport.send(request)
    return try JSONDecoder().decode(Attachment.self, from: data)
  }

  /// Deletes attachment `id`.
  public func delete(id: String) async throws {
    var request = URLRequest(url: baseURL.appendingPathComponent("v1/attachments/\(id)"))
    request.httpMethod = "DELETE"
    _ = try await transport.send(request)
  }
}

/// What the package's own resumable client speaks (on iOS 17+ and macOS 14+, `.ietfDraft` lets
/// the system's `URLSession` upload the file and resume it itself).
public enum ResumableProtocol: Sendable, Equatable {
  /// The IETF *Resumable Uploads for HTTP* draft, interop version 8, at `POST /v1/attachments`.
  case ietfDraft
  /// tus 1.0 at `POST /v1/tus` (the protocol of TUSKit and tus-js-client).
  case tus
}

extension URL {
  /// This URL with the `profile` query when a model profile is asked.
  func withProfile(_ profile: String?) -> URL {
    guard let profile, var components = URLComponents(url: self, resolvingAgainstBaseURL: false) else {
      return self
    }
    components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "profile", value: profile)]
    return components.url ?? self
  }
}

/// A file read in bounded pieces.
struct FileSource: Sendable {
  let url: URL
  let size: Int64

  init(url: URL) throws {
    self.url = url
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
  }

  /// `count` bytes (fewer at the end) from `offset`.
  func read(offset: Int64, count: Int) throws -> Data {
    let handle = try FileHandle(forReadingFrom: url)
    defer { try? handle.close() }
    try handle.seek(toOffset: UInt64(offset))
    return try handle.read(upToCount: count) ?? Data()
  }
}

/// A file small enough for one request: a plain `POST` with an `Idempotency-Key` made here and
/// sent with every retry, so a retry whose first answer was lost is one attachment.
struct PlainUpload {
  let transport: Transport
  let url: URL
  let source: FileSource

  func run(progress: (@Sendable (Int64, Int64) -> Void)?) async throws -> Attachment {
    let body = try source.read(offset: 0, count: Int(source.size))
    var request = URLRequest(url: url)
    request.httpMethod = "POST"
    request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
    request.setValue(UUID().uuidString, forHTTPHeaderField: "Idempotency-Key")
    progress?(0, source.size)
    let (data, _) = try await transport.send(request, body: body)
    progress?(source.size, source.size)
    return try JSONDecoder().decode(Attachment.self, from: data)
  }
}
