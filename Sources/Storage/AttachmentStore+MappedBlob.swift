import Glibc

extension AttachmentStore {
  /// Calls `body` with a blob's bytes mapped read-only, never held in memory whole: the blob
  /// store's own file where it has one, else (S3) the blob streamed into an unlinked temporary
  /// file in `scratchDirectory` first. For a video job's source, which may be hundreds of MiB.
  /// `body` also gets the open file the bytes are mapped from (`UploadBody.fileDescriptor`), for
  /// copies the kernel makes.
  public func withMappedBlob<T>(
    _ hash: BlobHash, scratchDirectory: String, _ body: (UnsafeRawBufferPointer, Int32?) throws -> T
  ) throws -> T {
    let size = try blobs.size(of: hash)
    if let path = blobs.path(for: hash) {
      let mapped = try MappedUploadBody(path: path, length: size)
      return try mapped.withUnsafeBytes { try body($0, mapped.fileDescriptor) }
    }
    let file = try TemporaryFile(directory: scratchDirectory)
    var offset = 0
    try blobs.read(
      hash, range: nil, start: { _ in },
      body: { chunk in
        try file.write(chunk, at: offset)
        offset += chunk.count
      })
    guard offset == size else {
      throw StorageError(.corrupt, "blob \(hash.hex) read \(offset) of \(size) bytes")
    }
    let mapped = try MappedUploadBody(descriptor: file.descriptor, length: size, label: file.label)
    return try mapped.withUnsafeBytes { try body($0, mapped.fileDescriptor) }
  }
}
