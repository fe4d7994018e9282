/// A `multipart/form-data` body as browsers and `curl -F` send it: file parts and fields.
public struct MultipartForm: Sendable {
  public let boundary: String
  private var parts: [UInt8] = []

  public init(boundary: String = "attachd-test-form-7MA4YWxkTrZu0gW") {
    self.boundary = boundary
  }

  /// The `Content-Type` the body needs.
  public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

  /// The whole body, closing delimiter included.
  public var body: [UInt8] { parts + Array("--\(boundary)--\r\n".utf8) }

  /// Adds a file part.
  public mutating func addFile(
    _ name: String, filename: String, _ bytes: [UInt8], contentType: String = "application/octet-stream"
  ) {
    parts += Array(
      ("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\n"
        + "Content-Type: \(contentType)\r\n\r\n").utf8)
    parts += bytes + Array("\r\n".utf8)
  }

  /// Adds a plain field.
  public mutating func addField(_ name: String, _ value: String) {
    parts += Array(
      "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
  }
}
