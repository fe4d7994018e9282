/// An element of a small XML document, as S3 answers in (listings, upload ids, errors).
///
/// Our own parser rather than FoundationXML: that would add libxml2 to the runtime image for
/// documents this simple. It reads elements, attributes (skipped), character data with the five
/// predefined and numeric entities, CDATA, comments and processing instructions; it refuses a
/// DOCTYPE (S3 never sends one, and it is where entity-expansion attacks live), mismatched tags
/// and nesting deeper than 64.
struct XMLTree: Equatable {
  /// The local name (any namespace prefix removed).
  var name: String
  /// The element's own character data, entities decoded, not trimmed.
  var text: String
  /// The child elements in document order.
  var children: [XMLTree]

  /// The first child called `name`.
  func child(_ name: String) -> XMLTree? { children.first { $0.name == name } }

  /// Every child called `name`.
  func children(_ name: String) -> [XMLTree] { children.filter { $0.name == name } }

  /// The text of the first child called `name`.
  func value(_ name: String) -> String? { child(name)?.text }

  /// Parses a whole document and returns its root element.
  static func parse(_ bytes: [UInt8]) throws -> XMLTree {
    var parser = Parser(bytes: bytes)
    return try parser.document()
  }
}

private struct Parser {
  let bytes: [UInt8]
  var index = 0
  static let maximumDepth = 64

  init(bytes: [UInt8]) {
    self.bytes = bytes
    // A UTF-8 byte order mark.
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
  }

  mutating func document() throws -> XMLTree {
    try skipMisc()
    guard peek() == UInt8(ascii: "<") else { throw malformed("no root element") }
    let root = try element(depth: 1)
    try skipMisc()
    guard index == bytes.count else { throw malformed("content after the root element") }
    return root
  }

  /// Whitespace, comments and processing instructions between top-level constructs.
  private mutating func skipMisc() throws {
    while index < bytes.count {
      if isSpace(bytes[index]) {
        index += 1
      } else if starts(with: "<?") {
        try skip(past: "?>")
      } else if starts(with: "<!--") {
        try skip(past: "-->")
      } else if starts(with: "<!") {
        throw malformed("DOCTYPE and other declarations are not accepted")
      } else {
        return
      }
    }
  }

  /// An element starting at `<`, through its end tag.
  private mutating func element(depth: Int) throws -> XMLTree {
    guard depth <= Self.maximumDepth else { throw malformed("nesting deeper than \(Self.maximumDepth)") }
    index += 1  // "<"
    let qualifiedName = try name()
    // Attributes (S3 sends only xmlns) are skipped; quoted values may contain ">".
    var quote: UInt8? = nil
    while true {
      guard let byte = peek() else { throw malformed("unterminated start tag <\(qualifiedName)>") }
      index += 1
      if let open = quote {
        if byte == open { quote = nil }
      } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
        quote = byte
      } else if byte == UInt8(ascii: ">") {
        break
      } else if byte == UInt8(ascii: "/"), peek() == UInt8(ascii: ">") {
        index += 1
        return XMLTree(name: localName(qualifiedName), text: "", children: [])
      }
    }
    var text: [UInt8] = []
    var children: [XMLTree] = []
    while true {
      guard let byte = peek() else { throw malformed("<\(qualifiedName)> is not closed") }
      if byte == UInt8(ascii: "&") {
        try entity(into: &text)
      } else if byte != UInt8(ascii: "<") {
        text.append(byte)
        index += 1
      } else if starts(with: "</") {
        index += 2
        let closing = try name()
        while let space = peek(), isSpace(space) { index += 1 }
        guard closing == qualifiedName, peek() == UInt8(ascii: ">") else {
          throw malformed("</\(closing)> does not close <\(qualifiedName)>")
        }
        index += 1
        return XMLTree(
          name: localName(qualifiedName), text: String(decoding: text, as: UTF8.self), children: children)
      } else if starts(with: "<![CDATA[") {
        index += 9
        let start = index
        try skip(past: "]]>")
        text += bytes[start..<(index - 3)]
      } else if starts(with: "<!--") {
        try skip(past: "-->")
      } else if starts(with: "<?") {
        try skip(past: "?>")
      } else if starts(with: "<!") {
        throw malformed("declarations are not accepted inside elements")
      } else {
        children.append(try element(depth: depth + 1))
      }
    }
  }

  private mutating func name() throws -> String {
    let start = index
    while let byte = peek(), !isSpace(byte), byte != UInt8(ascii: ">"), byte != UInt8(ascii: "/") {
      index += 1
    }
    guard index > start else { throw malformed("a tag without a name") }
    return String(decoding: bytes[start..<index], as: UTF8.self)
  }

  /// `&lt;` `&gt;` `&amp;` `&quot;` `&apos;` `&#NN;` `&#xHH;`, appended as UTF-8.
  private mutating func entity(into text: inout [UInt8]) throws {
    guard let end = bytes[index...].prefix(16).firstIndex(of: UInt8(ascii: ";")) else {
      throw malformed("an unterminated entity")
    }
    let body = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
    index = end + 1
    switch body {
    case "lt": text.append(UInt8(ascii: "<"))
    case "gt": text.append(UInt8(ascii: ">"))
    case "amp": text.append(UInt8(ascii: "&"))
    case "quot": text.append(UInt8(ascii: "\""))
    case "apos": text.append(UInt8(ascii: "'"))
    default:
      let scalar: UInt32?
      if body.hasPrefix("#x") || body.hasPrefix("#X") {
        scalar = UInt32(body.dropFirst(2), radix: 16)
      } else if body.hasPrefix("#") {
        scalar = UInt32(body.dropFirst(), radix: 10)
      } else {
        scalar = nil
      }
      guard let value = scalar, value != 0, let character = Unicode.Scalar(value) else {
        throw malformed("an unknown entity &\(body.prefix(12));")
      }
      text += Array(String(Character(character)).utf8)
    }
  }

  private mutating func skip(past terminator: String) throws {
    let marker = Array(terminator.utf8)
    while index + marker.count <= bytes.count {
      if bytes[index..<(index + marker.count)].elementsEqual(marker) {
        index += marker.count
        return
      }
      index += 1
    }
    throw malformed("no \(terminator) before the end")
  }

  private func starts(with prefix: String) -> Bool {
    bytes[index...].starts(with: prefix.utf8)
  }

  private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

  private func isSpace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  private func localName(_ qualified: String) -> String {
    qualified.split(separator: ":").last.map(String.init) ?? qualified
  }

  private func malformed(_ reason: String) -> StorageError {
    StorageError(.io, "S3 sent malformed XML: \(reason) (at byte \(index))")
  }
}
