private import Crypto
import Foundation

/// Multipart uploads: an object assembled from parts uploaded one by one, possibly over a long
/// time and from several processes (the state to carry is `S3MultipartUpload` and the
/// `S3UploadedPart`s, or `listParts` recovers it). Each part is at least 5 MiB except the last,
/// at most 5 GiB, numbered 1…10 000. An upload S3 has not been told to complete or abort keeps
/// its parts (and costs storage) until it is aborted: an expiry sweep should `listMultipartUploads`
/// and abort the stale ones.
extension S3Client {
  /// The smallest part S3 accepts, except for an upload's last part (5 MiB).
  public static let minimumPartSize = 5 * 1024 * 1024
  /// The largest part S3 accepts (5 GiB).
  public static let maximumPartSize = 5 * 1024 * 1024 * 1024
  /// The most parts one upload can have.
  public static let maximumPartCount = 10_000

  /// Starts a multipart upload to `key`.
  public func createMultipartUpload(_ key: String, contentType: String? = nil) throws -> S3MultipartUpload {
    try Self.checkKey(key)
    var headers: [(String, String)] = []
    if let contentType { headers.append(("Content-Type", contentType)) }
    let operation = "CREATE MULTIPART \(key)"
    let response = try send(operation) {
      S3Request(
        method: "POST", key: key, query: [("uploads", "")], headers: headers, upload: Self.noBody,
        bodyLimit: Self.xmlLimit)
    }
    try check(response, operation)
    guard let id = try Self.parseXML(response, operation).value("UploadId"), !id.isEmpty else {
      throw StorageError(.io, "S3 \(operation): no UploadId in the answer")
    }
    return S3MultipartUpload(key: key, uploadId: id)
  }

  /// Uploads part `number` (1…10 000) of `upload`; uploading a number again replaces that part.
  ///
  /// `sha256` as in `putObject`. Every part but the last must be at least `minimumPartSize`;
  /// S3 (and `completeMultipartUpload`) enforce that only when the upload is completed.
  public func uploadPart(_ upload: S3MultipartUpload, number: Int, body: S3Body, sha256: String? = nil)
    throws -> S3UploadedPart
  {
    guard (1...Self.maximumPartCount).contains(number) else {
      throw StorageError(.invalidArgument, "part number \(number) is outside 1-\(Self.maximumPartCount)")
    }
    let operation = "UPLOAD PART \(number) of \(upload.key)"
    return try withUpload(body, sha256: sha256) { source, hash in
      guard source.count <= Self.maximumPartSize else {
        throw StorageError(.invalidArgument, "part \(number) is larger than 5 GiB")
      }
      let response = try send(operation) {
        S3Request(
          method: "PUT", key: upload.key,
          query: [("partNumber", String(number)), ("uploadId", upload.uploadId)],
          upload: source, payloadSHA256: hash)
      }
      try check(response, operation)
      guard let etag = response.headers["etag"], !etag.isEmpty else {
        throw StorageError(.io, "S3 \(operation): no ETag in the answer")
      }
      return S3UploadedPart(number: number, etag: etag, size: source.count)
    }
  }

  /// Assembles the object from `parts` (ascending numbers, each but the last at least
  /// `minimumPartSize`) and returns its ETag.
  ///
  /// If an attempt's answer is lost after S3 completed the upload, the retry finds no such
  /// upload and this throws `.notFound`; `headObject(upload.key)` then tells whether it landed.
  @discardableResult
  public func completeMultipartUpload(_ upload: S3MultipartUpload, parts: [S3UploadedPart]) throws -> String?
  {
    let operation = "COMPLETE MULTIPART \(upload.key)"
    guard !parts.isEmpty, parts.count <= Self.maximumPartCount else {
      throw StorageError(.invalidArgument, "\(operation): 1-\(Self.maximumPartCount) parts needed")
    }
    for (previous, part) in zip(parts, parts.dropFirst()) {
      guard previous.number < part.number else {
        throw StorageError(.invalidArgument, "\(operation): part numbers must ascend")
      }
      guard previous.size >= Self.minimumPartSize else {
        throw StorageError(
          .invalidArgument, "\(operation): part \(previous.number) has \(previous.size) bytes, under 5 MiB")
      }
    }
    var document = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    for part in parts {
      document +=
        "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(Self.escapeXML(part.etag))</ETag></Part>"
    }
    document += "</CompleteMultipartUpload>"
    let bytes = Array(document.utf8)
    let response = try bytes.withUnsafeBytes { body in
      // S3 may fail a completion after its 200 header went out: the body is then an <Error>.
      try send(operation, retryOn: Self.isRetryableWithErrorBody) {
        S3Request(
          method: "POST", key: upload.key, query: [("uploadId", upload.uploadId)],
          headers: [("Content-Type", "application/xml")], upload: .memory(body),
          payloadSHA256: Hex.encode(SHA256.hash(body)), bodyLimit: Self.xmlLimit)
      }
    }
    try check(response, operation, errorBodyIsFailure: true)
    return try Self.parseXML(response, operation).value("ETag")
  }

  /// Abandons the upload and frees its parts; an upload that is already gone is not an error.
  public func abortMultipartUpload(_ upload: S3MultipartUpload) throws {
    let operation = "ABORT MULTIPART \(upload.key)"
    let response = try send(operation) {
      S3Request(method: "DELETE", key: upload.key, query: [("uploadId", upload.uploadId)])
    }
    if response.status == 404 { return }
    try check(response, operation)
  }

  /// The parts uploaded so far, in number order (every page of ListParts).
  ///
  /// A part number uploaded twice is listed once by AWS; SeaweedFS 4.48 lists every upload of it.
  /// Identical entries (a retried upload of the same bytes) are merged here; differing ones are
  /// kept as the server sent them, and completion uses the ETags the caller passes.
  public func listParts(_ upload: S3MultipartUpload) throws -> [S3UploadedPart] {
    let operation = "LIST PARTS \(upload.key)"
    var parts: [S3UploadedPart] = []
    var seen: Set<S3UploadedPart> = []
    var marker: String? = nil
    repeat {
      var query = [("uploadId", upload.uploadId), ("max-parts", "1000")]
      if let marker { query.append(("part-number-marker", marker)) }
      let response = try send(operation) {
        S3Request(method: "GET", key: upload.key, query: query, bodyLimit: Self.xmlLimit)
      }
      try check(response, operation)
      let root = try Self.parseXML(response, operation)
      for entry in root.children("Part") {
        guard let number = entry.value("PartNumber").flatMap({ Int($0) }), let etag = entry.value("ETag"),
          let size = entry.value("Size").flatMap({ Int($0) })
        else { throw StorageError(.io, "S3 \(operation): a part without PartNumber, ETag or Size") }
        let part = S3UploadedPart(number: number, etag: etag, size: size)
        if seen.insert(part).inserted { parts.append(part) }
      }
      let next = root.value("NextPartNumberMarker")
      marker = root.value("IsTruncated") == "true" && next != marker ? next : nil
    } while marker != nil
    return parts
  }

  /// The uploads under `prefix` that were started and neither completed nor aborted.
  public func listMultipartUploads(prefix: String) throws -> [S3PendingUpload] {
    let operation = "LIST MULTIPART \(prefix)"
    var uploads: [S3PendingUpload] = []
    var markers: (key: String, id: String)? = nil
    repeat {
      var query = [("uploads", ""), ("prefix", prefix), ("max-uploads", "1000"), ("encoding-type", "url")]
      if let markers { query += [("key-marker", markers.key), ("upload-id-marker", markers.id)] }
      let response = try send(operation) {
        S3Request(method: "GET", key: nil, query: query, bodyLimit: Self.xmlLimit)
      }
      try check(response, operation)
      let root = try Self.parseXML(response, operation)
      for entry in root.children("Upload") {
        guard let encoded = entry.value("Key"), let key = S3URI.decode(encoded, plusIsSpace: true),
          let id = entry.value("UploadId"),
          let initiated = entry.value("Initiated").flatMap(S3Date.parseISO8601)
        else { throw StorageError(.io, "S3 \(operation): an upload without Key, UploadId or Initiated") }
        uploads.append(
          S3PendingUpload(upload: S3MultipartUpload(key: key, uploadId: id), initiated: initiated))
      }
      let nextKey = root.value("NextKeyMarker").flatMap { S3URI.decode($0, plusIsSpace: true) }
      let nextID = root.value("NextUploadIdMarker")
      if root.value("IsTruncated") == "true", let nextKey, let nextID,
        !(nextKey == markers?.key && nextID == markers?.id)
      {
        markers = (nextKey, nextID)
      } else {
        markers = nil
      }
    } while markers != nil
    return uploads
  }

  /// A zero-byte body: POSTs without one still go out as sized uploads (`Content-Length: 0`), so
  /// that libcurl adds no form Content-Type of its own.
  static var noBody: UploadSource { .memory(UnsafeRawBufferPointer(start: nil, count: 0)) }

  private static func escapeXML(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
      .replacingOccurrences(of: ">", with: "&gt;")
  }
}
