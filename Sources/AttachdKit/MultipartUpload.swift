import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Files in one `multipart/form-data` `POST`, a part named `file` each. The body is written to
/// a temporary file by copying each file `chunkSize` bytes at a time, and `URLSession` sends that
/// file (`upload(for:fromFile:)`), so no file is ever read whole; the temporary file goes when
/// the upload ends, cancelled or not.
struct MultipartUpload {
  let transport: Transport
  let url: URL
  let sources: [FileSource]
  let chunkSize: Int

  func run(progress: (@Sendable (Int64, Int64) -> Void)?) async throws -> [Result<Attachment, AttachdError>] {
    let boundary = "attachdkit-" + UUID().uuidString
    let body = try MultipartBody.write(sources, boundary: boundary, chunkSize: chunkSize)
    defer { try? FileManager.default.removeItem(at: body.url) }
    var request = URLRequest(url: url)
    request.httpMethod = "POST"
    request.setValue("multipart/form-data; boundary=\(boundary)", forHTTPHeaderField: "Content-Type")
    request.setValue(UUID().uuidString, forHTTPHeaderField: "Idempotency-Key")
    progress?(0, body.size)
    let (data, _) = try await transport.send(
      request, file: body.url, progress: progress.map(ProgressDelegate.init))
    progress?(body.size, body.size)
    return try JSONDecoder().decode([PartAnswer].self, from: data).map(\.result)
  }
}

/// One entry of a multipart upload's answer: a stored record, or the problem of a refused part.
struct PartAnswer: Decodable {
  let result: Result<Attachment, AttachdError>

  init(from decoder: any Decoder) throws {
    if let attachment = try? Attachment(from: decoder) {
      result = .success(attachment)
    } else {
      result = .failure(try ProblemBody(from: decoder).error(status: nil, retryAfter: nil))
    }
  }
}

/// The temporary file that holds a multipart body.
enum MultipartBody {
  /// Writes the parts of `sources` to a new temporary file: its URL and size.
  static func write(_ sources: [FileSource], boundary: String, chunkSize: Int) throws -> (
    url: URL, size: Int64
  ) {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
      "attachdkit-\(UUID().uuidString).multipart")
    guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
    }
    do {
      let output = try FileHandle(forWritingTo: url)
      defer { try? output.close() }
      for (index, source) in sources.enumerated() {
        try output.write(contentsOf: Data(partHead(index: index, source: source, boundary: boundary).utf8))
        var offset: Int64 = 0
        while offset < source.size {
          let chunk = try source.read(offset: offset, count: chunkSize)
          if chunk.isEmpty { break }
          try output.write(contentsOf: chunk)
          offset += Int64(chunk.count)
        }
        try output.write(contentsOf: Data("\r\n".utf8))
      }
      try output.write(contentsOf: Data("--\(boundary)--\r\n".utf8))
      return (url, Int64(try output.offset()))
    } catch {
      try? FileManager.default.removeItem(at: url)
      throw error
    }
  }

  /// A part's boundary and headers. The file name is `upload-<n>` with the file's extension: the
  /// server needs one to take the part, and the name on the device is the user's business.
  static func partHead(index: Int, source: FileSource, boundary: String) -> String {
    let suffix = source.url.pathExtension.filter { $0.isLetter || $0.isNumber }
    let name = "upload-\(index + 1)" + (suffix.isEmpty ? "" : "." + suffix)
    return "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(name)\"\r\n"
      + "Content-Type: application/octet-stream\r\n\r\n"
  }
}
