import Foundation

/// Bytes to upload: memory that stays valid for the call, or a file (all of it, or a byte range).
///
/// Either way the size is known before the request starts, so it goes out with a Content-Length:
/// S3 refuses an unsized (chunked) PUT.
public enum S3Body {
  /// Bytes in memory.
  case bytes(UnsafeRawBufferPointer)
  /// The bytes of a file, or of `range` within it; read twice (hashed, then sent).
  case file(path: String, range: Range<Int>? = nil)
  /// The bytes in `range` of an open file (e.g. an unlinked temporary file); the caller keeps
  /// the descriptor open through the call. Read twice, as `file`.
  case descriptor(Int32, range: Range<Int>)
}

/// What S3 reports about one stored object.
public struct S3ObjectInfo: Sendable, Hashable {
  /// The object's key.
  public var key: String
  /// Its size in bytes.
  public var size: Int
  /// When it was last written (whole seconds on most servers).
  public var lastModified: Date
  /// Its entity tag as S3 quotes it (`"…"`), when the server sent one.
  public var etag: String?

  /// An object description.
  public init(key: String, size: Int, lastModified: Date, etag: String?) {
    self.key = key
    self.size = size
    self.lastModified = lastModified
    self.etag = etag
  }
}

/// One page of a ListObjectsV2 listing.
public struct S3ObjectPage: Sendable, Hashable {
  /// The objects on this page, in key order.
  public var objects: [S3ObjectInfo]
  /// Pass this to get the next page; nil on the last page.
  public var nextContinuationToken: String?
}

/// What a GET learnt before its first body byte: enough to write a response's headers.
public struct S3ReadStart: Sendable, Hashable {
  /// The whole object's size.
  public var objectSize: Int
  /// The bytes that will be delivered: the requested range clamped to the object.
  public var range: Range<Int>
  /// The object's entity tag, when the server sent one.
  public var etag: String?
}

/// A multipart upload in progress: what every later call on it needs. Codable, so that an upload
/// engine can keep it in its own state.
public struct S3MultipartUpload: Sendable, Hashable, Codable {
  /// The key the object will have once completed.
  public var key: String
  /// The id S3 gave the upload.
  public var uploadId: String

  /// An upload known by its key and id (from `createMultipartUpload` or a listing).
  public init(key: String, uploadId: String) {
    self.key = key
    self.uploadId = uploadId
  }
}

/// One uploaded part of a multipart upload.
public struct S3UploadedPart: Sendable, Hashable, Codable {
  /// Its number, 1…10 000; parts are assembled in number order.
  public var number: Int
  /// The entity tag S3 returned for it, needed to complete the upload.
  public var etag: String
  /// Its size in bytes.
  public var size: Int

  /// A part as `uploadPart` or `listParts` reports it.
  public init(number: Int, etag: String, size: Int) {
    self.number = number
    self.etag = etag
    self.size = size
  }
}

/// A multipart upload that was started and neither completed nor aborted.
public struct S3PendingUpload: Sendable, Hashable {
  /// The upload's key and id.
  public var upload: S3MultipartUpload
  /// When it was started.
  public var initiated: Date
}

/// Timestamps as S3 writes them.
enum S3Date {
  /// `2026-12-01T19:12:42Z` or `2026-12-01T19:12:42.123Z` (listings).
  static func parseISO8601(_ text: String) -> Date? {
    let bytes = Array(text.utf8)
    guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
      bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
      bytes.last == UInt8(ascii: "Z"),
      let year = number(bytes[0..<4]), let month = number(bytes[5..<7]), let day = number(bytes[8..<10]),
      let hour = number(bytes[11..<13]), let minute = number(bytes[14..<16]),
      let second = number(bytes[17..<19])
    else { return nil }
    var fraction = 0.0
    if bytes.count > 20 {
      guard bytes[19] == UInt8(ascii: "."), let digits = number(bytes[20..<(bytes.count - 1)]) else {
        return nil
      }
      fraction = Double(digits) / pow(10, Double(bytes.count - 21))
    }
    return date(year, month, day, hour, minute, second).map { $0.addingTimeInterval(fraction) }
  }

  /// `Tue, 01 Dec 2026 19:12:42 GMT` (the Last-Modified header, RFC 9110's IMF-fixdate).
  static func parseHTTP(_ text: String) -> Date? {
    let fields = text.split(separator: " ")
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    guard fields.count == 6, fields[5] == "GMT", let day = Int(fields[1]),
      let month = months.firstIndex(of: String(fields[2])), let year = Int(fields[3])
    else { return nil }
    let time = fields[4].split(separator: ":").compactMap { Int($0) }
    guard time.count == 3 else { return nil }
    return date(year, month + 1, day, time[0], time[1], time[2])
  }

  private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
    guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ (48...57).contains($0) }) else {
      return nil
    }
    return digits.reduce(0) { $0 * 10 + Int($1 - 48) }
  }

  private static func date(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int)
    -> Date?
  {
    guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour),
      (0...59).contains(minute),
      (0...60).contains(second)
    else { return nil }
    // Days from the civil date (Howard Hinnant's algorithm): no time zone or locale involved.
    let shiftedYear = month <= 2 ? year - 1 : year
    let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
    let yearOfEra = shiftedYear - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    let days = era * 146_097 + dayOfEra - 719_468
    return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3_600 + minute * 60 + second))
  }
}
