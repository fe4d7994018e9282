private import DelayLoadCurl
private import DelayLoadPQ

/// libcurl and libpq are opened on first use (see `Sources/DelayLoadCurl`, `Sources/DelayLoadPQ`): a filesystem + SQLite
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

  // What the first call found; later calls do not try again.
  private static let curlFailure: String? = DelayLoad_curl().map { String(cString: $0) + " (the S3 client)" }
  private static let pqFailure: String? = DelayLoad_pq().map {
    String(cString: $0) + " (the PostgreSQL client)"
  }
}
