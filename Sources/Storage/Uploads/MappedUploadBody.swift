import Glibc

/// A completed spool file (or a downloaded upload's temporary file) mapped read-only: the
/// pipeline reads the upload in place, no copy.
///
/// Safe against SIGBUS: a mapped file is never shortened. Spool files are truncated only while
/// their upload is receiving (a writer opening, start-up recovery), and a completed upload never
/// returns to receiving; cancel and expiry unlink the file, which leaves the mapping intact.
final class MappedUploadBody: UploadBody, @unchecked Sendable {
  // Immutable after init and read-only memory: sharing across threads is safe.
  private let base: UnsafeRawPointer?
  let count: Int
  /// The mapped file, kept open (a duplicate of the caller's descriptor) for kernel-side copies.
  let fileDescriptor: Int32?

  /// Maps the first `length` bytes of the file at `path`; throws `.corrupt` when it is shorter.
  convenience init(path: String, length: Int) throws {
    guard length > 0 else {
      // mmap refuses a zero length; an empty upload has no file to map.
      try self.init(descriptor: -1, length: 0, label: path)
      return
    }
    let fd = try FileSystem.open(path, O_RDONLY)
    defer { FileSystem.close(fd) }
    try self.init(descriptor: fd, length: length, label: path)
  }

  /// Maps the first `length` bytes of the open file `descriptor` (which may be closed afterwards:
  /// the mapping keeps the file); throws `.corrupt` when it is shorter.
  init(descriptor fd: Int32, length: Int, label: String) throws {
    guard length > 0 else {
      base = nil
      count = 0
      fileDescriptor = nil
      return
    }
    let size = Int(try FileSystem.status(fd, path: label).st_size)
    guard size >= length else {
      throw StorageError(.corrupt, "spool file \(label) holds \(size) of \(length) bytes")
    }
    let mapped = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0)
    guard let mapped, mapped != MAP_FAILED else {
      throw FileSystem.error("mmap", label, errno: errno)
    }
    // The pipeline reads all of it soon, in an order of its own (HEIF jumps between boxes and
    // tiles): read ahead now, keep what was read. Advice only: a failure changes nothing.
    _ = madvise(mapped, length, MADV_WILLNEED)
    base = UnsafeRawPointer(mapped)
    count = length
    let kept = fcntl(fd, F_DUPFD_CLOEXEC, 3)
    fileDescriptor = kept >= 0 ? kept : nil
  }

  deinit {
    if let base { munmap(UnsafeMutableRawPointer(mutating: base), count) }
    if let fileDescriptor { Glibc.close(fileDescriptor) }
  }

  func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
    try body(UnsafeRawBufferPointer(start: base, count: count))
  }
}
