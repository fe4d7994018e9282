import Foundation
import HTTP
import Server
import Storage
import Synchronization

/// The upload layer: one durable upload engine, and the three ways a body reaches it — a plain
/// `POST` (held in memory, or spooled into a throwaway upload above `spoolThreshold`), the IETF
/// resumable-upload draft and tus 1.0 — each a thin adapter on the engine. The App only
/// authenticates the caller and wires routes to the adapters (`plain`, `resumable`, `tus`).
///
/// Every adapter ends the same way: a complete body goes through `complete(…)` (claim, process
/// on the CPU workers through the caller's `UploadDestination`, record, answer), and a repeat
/// of a finished upload or of an idempotent request is answered by `UploadAnswer.replay`.
public final class Uploads: Sendable {
  /// What the upload layer needs to know beyond the upload store's own settings.
  public struct Configuration: Sendable, Equatable {
    /// Plain bodies longer than this spool to the upload store instead of memory.
    public var spoolThreshold = 4 << 20
    /// How long a resumable upload lives after its creation, seconds.
    public var resumableLifetime = 86_400.0
    /// Bytes one body buffers before it is written out (also a tus chunk's memory before it spills).
    public var writeBufferBytes = 256 << 10
    /// Seconds received bytes may wait before a commit makes them durable.
    public var commitInterval = 5.0
    /// The server's cap on one upload body (`uploads.maxBytes`).
    public var maxUploadBytes = 64 << 20
    /// Most file parts in one multipart upload.
    public var maxParts = 10
    /// Largest opaque metadata an upload keeps (tus `Upload-Metadata`).
    public var maxMetadataBytes = 4096
    /// `server.publicBaseURL`, normalised; "" builds upload URLs from the request's `Host`.
    public var publicBaseURL = ""

    public init() {}
  }

  /// The settings in force.
  public let configuration: Configuration
  /// The App's error table, counters and URL space.
  let host: any UploadHost
  /// The durable upload engine.
  public let engine: UploadEngine
  /// Where idempotent plain uploads claim their keys and record their answers.
  let idempotency: AttachmentStore
  /// `tenant \n key` of idempotent uploads whose body is still arriving or being processed.
  let keysInFlight = Mutex<Set<String>>([])
  /// Where tus chunks wait for their checksum when they outgrow memory.
  let scratchDirectory: String

  /// The upload layer over `store`; `scratchDirectory` holds tus chunks waiting for their
  /// checksum (files a crash left there are removed now: this process owns it).
  public init(
    configuration: Configuration, store: any UploadStore, idempotency: AttachmentStore, host: any UploadHost,
    scratchDirectory: String
  ) throws {
    self.configuration = configuration
    self.host = host
    self.idempotency = idempotency
    self.engine = UploadEngine(
      store: store, commitInterval: .milliseconds(Int64((configuration.commitInterval * 1000).rounded())))
    self.scratchDirectory = scratchDirectory
    try HeldBytes.removeLeftovers(in: scratchDirectory)
  }

  /// Plain `POST /v1/attachments` bodies.
  public var plain: PlainUploads { PlainUploads(uploads: self) }
  /// IETF resumable uploads at `/v1/uploads/{id}`.
  public var resumable: ResumableUploads { ResumableUploads(uploads: self) }
  /// tus 1.0 at `/v1/tus`.
  public var tus: TusUploads { TusUploads(uploads: self) }

  /// The upload store.
  public var store: any UploadStore { engine.store }

  /// Starts the commit timer.
  public func start() { engine.start() }

  /// Stops the commit timer (once the server has stopped).
  public func stop() { engine.stop() }

  // MARK: - Problems

  /// The problem answer for `error` (the App's table), counted and logged there.
  func problem(_ error: any Error, requestID: String) -> HTTPResponse {
    host.problemResponse(host.publicError(for: error), for: error, requestID: requestID)
  }
}

extension Uploads {
  /// What upload URLs are built on: `publicBaseURL` (the one setting for every absolute link
  /// attachd gives out), else the request's `Host` with `http`, or `https` when the proxy in
  /// front says so (`X-Forwarded-Proto`): a resumable client needs an absolute URL even when the
  /// other links stay relative. A `Host` that is not a plain host[:port] gives a relative URL
  /// (the path alone).
  func baseURL(_ head: HTTPRequestHead) -> String {
    if !configuration.publicBaseURL.isEmpty { return configuration.publicBaseURL }
    guard let host = head.headers.first(name: "Host"), !host.isEmpty, host.utf8.count <= 255,
      host.utf8.allSatisfy({ Self.hostCharacters.contains($0) })
    else { return "" }
    let proto = head.headers.first(name: "X-Forwarded-Proto")?.lowercased()
    return (proto == "https" ? "https://" : "http://") + host
  }

  /// Letters, digits, `-`, `.`, `:`, `[`, `]` (host names, IPv4, bracketed IPv6, a port).
  private static let hostCharacters: Set<UInt8> = Set(
    Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:[]".utf8))
}
