private import DelayLoad

/// libcurl and libpq are opened on first use (see `Sources/DelayLoad`): a filesystem + SQLite
/// service, and `attachd process`, never map them. Every path into either library asks here
/// first, so a machine without one gets a clear error naming it, where the store is opened.
enum DelayedLibrary {
  /// Opens libcurl.so.4 (once per process); throws `.unavailable` with dlopen's reason.
  static func curl() throws(StorageError) {
    if let failure = curlFailure { throw StorageError(.unavailable, failure) }
  }

  /// Opens libpq.so.5 (once per process); throws `.unavailable` with dlopen's reason.
  static func pq() throws(StorageError) {
    if let failure = pqFailure { throw StorageError(.unavailable, failure) }
  }

  private static let curlFailure: String? = open("libcurl.so.4 (the S3 client)", DelayLoad_curl)
  private static let pqFailure: String? = open("libpq.so.5 (the PostgreSQL client)", DelayLoad_pq)

  private static func open(
    _ name: String, _ load: (UnsafeMutablePointer<CChar>?, Int) -> Int32
  ) -> String? {
    var reason = [CChar](repeating: 0, count: 256)
    let loaded = reason.withUnsafeMutableBufferPointer { load($0.baseAddress, $0.count) }
    if loaded == 1 { return nil }
    let detail = reason.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    return "\(name) cannot be loaded: \(detail)"
  }
}
