import Crypto

/// `Upload-Metadata` (tus 1.0 creation): comma-separated `key base64value` pairs, read strictly.
///
/// Keys are 1…255 visible ASCII characters without a comma, unique; a value is canonical padded
/// base64 (RFC 4648 §4), possibly empty, in which case the space may be left out. Spaces or tabs
/// around a pair are allowed, as in any HTTP list; anything else is refused whole. The value is
/// kept as the client sent it, so that HEAD echoes it exactly, and is never logged: it carries
/// file names.
struct TusMetadata: Sendable, Equatable {
  /// The header value as sent (trimmed), echoed on HEAD.
  var text: String
  /// The pairs, values decoded, in the order sent.
  var pairs: [(key: String, value: [UInt8])]

  static func == (lhs: TusMetadata, rhs: TusMetadata) -> Bool {
    lhs.text == rhs.text && lhs.pairs.elementsEqual(rhs.pairs) { $0.key == $1.key && $0.value == $1.value }
  }

  /// The most pairs accepted (a metadata header is a handful of names, not a database).
  static let maxPairs = 64
  /// The longest key.
  static let maxKeyBytes = 255

  /// Parses `text`; throws `TusError.invalidMetadata` for anything outside the grammar or over
  /// `maxBytes`.
  init(parsing text: String, maxBytes: Int) throws(TusError) {
    let trimmed = text.trimmingASCIIWhitespace()
    guard !trimmed.isEmpty, trimmed.utf8.count <= maxBytes else { throw .invalidMetadata }
    var pairs: [(key: String, value: [UInt8])] = []
    var keys = Set<String>()
    for element in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
      let pair = element.trimmingASCIIWhitespace()
      let parts = pair.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
      let key = parts[0]
      guard (1...Self.maxKeyBytes).contains(key.utf8.count),
        key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") })
      else { throw .invalidMetadata }
      var value: [UInt8] = []
      if parts.count == 2 {
        guard let decoded = Base64.decode(parts[1]) else { throw .invalidMetadata }
        value = decoded
      }
      guard keys.insert(String(key)).inserted, pairs.count < Self.maxPairs else { throw .invalidMetadata }
      pairs.append((String(key), value))
    }
    self.text = String(trimmed)
    self.pairs = pairs
  }

  /// The decoded value of `key`, if sent.
  func value(_ key: String) -> [UInt8]? { pairs.first { $0.key == key }?.value }
}
