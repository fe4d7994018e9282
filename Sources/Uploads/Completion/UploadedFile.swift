import Storage

/// One file's bytes as the pipeline reads them: a buffer of its own (a body held in memory),
/// or a range of a completed upload's body read in place (a spooled body's file mapping, which
/// this value keeps alive). Never copied to be read.
public struct UploadedFile: Sendable {
  private enum Backing: Sendable {
    case owned([UInt8])
    case mapped(any UploadBody, Range<Int>)
  }

  private let backing: Backing

  /// Bytes held in memory.
  public init(_ bytes: [UInt8]) { backing = .owned(bytes) }

  /// `range` of `body` (the whole body when nil), read in place.
  public init(_ body: any UploadBody, range: Range<Int>? = nil) {
    let range = range ?? 0..<body.count
    precondition(range.lowerBound >= 0 && range.upperBound <= body.count, "range outside the body")
    backing = .mapped(body, range)
  }

  /// The number of bytes.
  public var count: Int {
    switch backing {
    case .owned(let bytes): bytes.count
    case .mapped(_, let range): range.count
    }
  }

  /// The open file these bytes are a range of (valid while this value lives), when they were
  /// spooled: for copies made by the kernel, which leave this process's resident set alone.
  public var file: (descriptor: Int32, range: Range<Int>)? {
    switch backing {
    case .owned: nil
    case .mapped(let upload, let range): upload.fileDescriptor.map { ($0, range) }
    }
  }

  /// Calls `body` with the bytes; the pointer is valid only during the call.
  public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
    switch backing {
    case .owned(let bytes):
      return try bytes.withUnsafeBytes(body)
    case .mapped(let upload, let range):
      return try upload.withUnsafeBytes { whole in try body(UnsafeRawBufferPointer(rebasing: whole[range])) }
    }
  }
}
