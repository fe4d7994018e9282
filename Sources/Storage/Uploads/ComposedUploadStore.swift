import Foundation

/// A public upload store that is a `LeasedUploadStore` over one pair of backends, under a name
/// of its own (`FileUploadStore`, `S3UploadStore`): every `UploadStore` call goes to `leased`,
/// so the public types add only how they are opened and what they report.
protocol ComposedUploadStore: UploadStore {
  associatedtype Rows: UploadRows
  associatedtype Bytes: UploadBytes where Bytes.Row == Rows.Row

  /// The store doing the work.
  var leased: LeasedUploadStore<Rows, Bytes> { get }
}

// Public although the protocol is not: these are the `UploadStore` witnesses of the public types.
extension ComposedUploadStore {
  public func create(_ upload: NewUpload) throws -> UploadState { try leased.create(upload) }

  public func state(tenant: String, id: String) throws -> UploadState? {
    try leased.state(tenant: tenant, id: id)
  }

  public func openWriter(
    tenant: String, id: String, offset: Int?, length: Int?, onPreempted: @escaping @Sendable () -> Void
  ) throws -> any UploadWriter {
    try leased.openWriter(tenant: tenant, id: id, offset: offset, length: length, onPreempted: onPreempted)
  }

  @discardableResult
  public func setLength(tenant: String, id: String, length: Int) throws -> UploadState {
    try leased.setLength(tenant: tenant, id: id, length: length)
  }

  public func complete(tenant: String, id: String) throws -> UploadCompletion {
    try leased.complete(tenant: tenant, id: id)
  }

  @discardableResult
  public func recordResult(tenant: String, id: String, result: UploadResult) throws -> UploadState {
    try leased.recordResult(tenant: tenant, id: id, result: result)
  }

  public func abandonProcessing(tenant: String, id: String) throws {
    try leased.abandonProcessing(tenant: tenant, id: id)
  }

  @discardableResult
  public func cancel(tenant: String, id: String) throws -> Bool { try leased.cancel(tenant: tenant, id: id) }

  public func deleteExpired(limit: Int) throws -> [String] { try leased.deleteExpired(limit: limit) }

  /// The upload slots of this process (tests check that none leaks).
  var slots: UploadSlots { leased.slots }
}
