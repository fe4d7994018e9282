/// An HTTP protocol version (only 1.0 and 1.1 are parsed).
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
  public var major: UInt8
  public var minor: UInt8
  public init(major: UInt8, minor: UInt8) {
    self.major = major
    self.minor = minor
  }
  public static let http1_0 = HTTPVersion(major: 1, minor: 0)
  public static let http1_1 = HTTPVersion(major: 1, minor: 1)
  public var description: String { "HTTP/\(major).\(minor)" }
}

/// Header fields in arrival order; names compare case-insensitively (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Sequence, Equatable, ExpressibleByDictionaryLiteral {
  public typealias Element = (name: String, value: String)
  public private(set) var fields: [Element] = []

  public init() {}
  public init(_ fields: [(String, String)]) { self.fields = fields.map { (name: $0.0, value: $0.1) } }
  public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

  public var count: Int { fields.count }
  public func makeIterator() -> IndexingIterator<[Element]> { fields.makeIterator() }

  /// Appends a field (duplicates are kept, in order).
  public mutating func add(name: String, value: String) { fields.append((name: name, value: value)) }

  /// Replaces every field called `name` with one field.
  public mutating func replaceOrAdd(name: String, value: String) {
    remove(name: name)
    add(name: name, value: value)
  }

  public mutating func remove(name: String) {
    fields.removeAll { $0.name.utf8.elementsEqualCaseInsensitive(name.utf8) }
  }

  /// All values of fields called `name`, in order.
  public subscript(name: String) -> [String] {
    fields.lazy.filter { $0.name.utf8.elementsEqualCaseInsensitive(name.utf8) }.map(\.value)
  }

  /// The first value of a field called `name`.
  public func first(name: String) -> String? {
    fields.first { $0.name.utf8.elementsEqualCaseInsensitive(name.utf8) }?.value
  }

  public func contains(name: String) -> Bool { first(name: name) != nil }

  public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
    lhs.fields.count == rhs.fields.count
      && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
  }
}

extension Sequence where Element == UInt8 {
  /// ASCII case-insensitive comparison (header names, tokens).
  @inlinable
  public func elementsEqualCaseInsensitive<S: Sequence>(_ other: S) -> Bool where S.Element == UInt8 {
    self.elementsEqual(other) { a, b in
      (a | (a &- 0x41 < 26 ? 0x20 : 0)) == (b | (b &- 0x41 < 26 ? 0x20 : 0))
    }
  }
}

/// How the body of a message is delimited (RFC 9112 §6.3).
public enum HTTPBodyFraming: Sendable, Equatable {
  case none
  case contentLength(UInt64)
  case chunked
}

/// A parsed request line plus header block.
public struct HTTPRequestHead: Sendable, Equatable {
  public var method: String
  /// The request-target exactly as sent (origin-form `/path?query` in practice).
  public var target: String
  public var version: HTTPVersion
  public var headers: HTTPHeaders
  /// How the body is framed; decided by the parser from Content-Length / Transfer-Encoding.
  public var framing: HTTPBodyFraming
  /// Whether the connection may be reused after this exchange (version + Connection header).
  public var keepAlive: Bool
  /// `Expect: 100-continue` was sent.
  public var expectsContinue: Bool

  public init(
    method: String, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = [:],
    framing: HTTPBodyFraming = .none, keepAlive: Bool = true, expectsContinue: Bool = false
  ) {
    self.method = method
    self.target = target
    self.version = version
    self.headers = headers
    self.framing = framing
    self.keepAlive = keepAlive
    self.expectsContinue = expectsContinue
  }

  /// The path part of the target (before `?`).
  public var path: Substring {
    target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
  }
  /// The query part of the target (after `?`), if any.
  public var query: Substring? {
    guard let i = target.firstIndex(of: "?") else { return nil }
    return target[target.index(after: i)...]
  }
}
