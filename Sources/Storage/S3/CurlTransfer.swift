import Glibc

/// Bytes a request uploads: memory the caller keeps alive for the call, or part of an open file.
enum UploadSource {
  case memory(UnsafeRawBufferPointer)
  case file(descriptor: Int32, path: String, offset: Int, count: Int)

  /// How many bytes are sent (the request's Content-Length).
  var count: Int {
    switch self {
    case .memory(let bytes): bytes.count
    case .file(_, _, _, let count): count
    }
  }
}

/// The status line and headers of a final (non-1xx) response.
struct ResponseHead {
  /// The HTTP status code.
  var status: Int
  /// Header values by lower-cased name (the last one wins).
  var headers: [String: String]
}

/// The state of one attempt of one exchange, shared with libcurl's callbacks.
///
/// Upload bytes come from `upload`; a 2xx body goes to `onBody` when one is given, and every
/// other body is collected (up to `bodyLimit` bytes). A closure that throws stops the transfer,
/// and its error is kept in `callbackError` for the caller to rethrow.
final class CurlTransfer {
  private let upload: UploadSource?
  private var uploadOffset = 0
  private let bodyLimit: Int
  private let onResponse: ((ResponseHead) throws -> Void)?
  private let onBody: ((UnsafeRawBufferPointer) throws -> Void)?

  /// The current response's status (1xx until the final one arrives).
  private(set) var status = 0
  /// The current response's headers.
  private(set) var headers: [String: String] = [:]
  /// True once the final response's headers have all arrived.
  private(set) var headComplete = false
  /// The collected body (non-2xx, or every body when there is no `onBody`).
  private(set) var body: [UInt8] = []
  /// True when the body was longer than `bodyLimit` and the rest was dropped.
  private(set) var bodyTruncated = false
  /// Bytes handed to `onBody`.
  private(set) var delivered = 0
  /// What `onResponse` or `onBody` threw, or a read error of the upload file.
  private(set) var callbackError: (any Error)?

  init(
    upload: UploadSource?, bodyLimit: Int, onResponse: ((ResponseHead) throws -> Void)? = nil,
    onBody: ((UnsafeRawBufferPointer) throws -> Void)? = nil
  ) {
    self.upload = upload
    self.bodyLimit = bodyLimit
    self.onResponse = onResponse
    self.onBody = onBody
  }

  /// The final response's status and headers.
  var head: ResponseHead { ResponseHead(status: status, headers: headers) }

  private var isSuccess: Bool { (200..<300).contains(status) }

  /// One header line (with its CRLF), a status line, or the blank line that ends a header block.
  func receiveHeader(_ line: UnsafeRawBufferPointer) -> Bool {
    // Bytes, not Characters: "\r\n" is one Character, which a check for "\n" does not match.
    var end = line.count
    while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
    let text = String(decoding: UnsafeRawBufferPointer(rebasing: line[0..<end]), as: UTF8.self)
    if text.hasPrefix("HTTP/") {
      // A new response (after `100 Continue`, or a retry on a fresh connection) starts over.
      let fields = text.split(separator: " ", maxSplits: 2)
      status = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
      headers = [:]
      headComplete = false
      return true
    }
    if text.isEmpty {
      guard status >= 200, !headComplete else { return true }
      headComplete = true
      guard let onResponse else { return true }
      do {
        try onResponse(head)
        return true
      } catch {
        callbackError = error
        return false
      }
    }
    guard let colon = text.firstIndex(of: ":") else { return true }
    let name = text[..<colon].lowercased()
    let value = text[text.index(after: colon)...].trimmingSpaces()
    headers[name] = value
    return true
  }

  /// A piece of the response body.
  func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
    if isSuccess, let onBody {
      do {
        try onBody(bytes)
        delivered += bytes.count
        return true
      } catch {
        callbackError = error
        return false
      }
    }
    let room = bodyLimit - body.count
    if bytes.count > room { bodyTruncated = true }
    body.append(contentsOf: bytes.prefix(max(0, room)))
    return true
  }

  /// Fills `space` with the next upload bytes; returns how many (0 at the end), nil on error.
  func sendBody(into space: UnsafeMutableRawBufferPointer) -> Int? {
    guard let upload else { return 0 }
    let count = min(space.count, upload.count - uploadOffset)
    guard count > 0 else { return 0 }
    switch upload {
    case .memory(let bytes):
      space.baseAddress!.copyMemory(from: bytes.baseAddress! + uploadOffset, byteCount: count)
    case .file(let descriptor, let path, let offset, _):
      let target = UnsafeMutableRawBufferPointer(rebasing: space[0..<count])
      do {
        let read = try FileSystem.readAll(descriptor, into: target, at: offset + uploadOffset, path: path)
        guard read == count else {
          throw StorageError(.io, "\(path) became shorter while it was uploaded")
        }
      } catch {
        callbackError = error
        return nil
      }
    }
    uploadOffset += count
    return count
  }

  /// Starts the upload again at `offset` (curl resends a body on a fresh connection).
  func rewind(to offset: Int) -> Bool {
    guard let upload, (0...upload.count).contains(offset) else { return false }
    uploadOffset = offset
    return true
  }
}

extension Substring {
  /// Without leading and trailing spaces and tabs.
  fileprivate func trimmingSpaces() -> String {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) })
    else { return "" }
    return String(self[first...last])
  }
}
