/// The few Structured Field (RFC 9651) items the resumable-upload fields use: Integer and
/// Boolean items, parsed strictly, and a Dictionary of integers written.
enum StructuredField {
  /// A bare Integer item: optional `-`, 1 to 15 digits, nothing else (surrounding spaces are
  /// trimmed, as field parsing does). Parameters are not accepted: no field here defines any.
  static func integer(_ text: String) -> Int? {
    let value = trimmed(text)
    var digits = value[...]
    let negative = digits.first == "-"
    if negative { digits = digits.dropFirst() }
    guard (1...15).contains(digits.count), digits.allSatisfy({ $0 >= "0" && $0 <= "9" }),
      let magnitude = Int(digits)
    else { return nil }
    return negative ? -magnitude : magnitude
  }

  /// A non-negative Integer item (offsets and lengths).
  static func count(_ text: String) -> Int? {
    guard let value = integer(text), value >= 0 else { return nil }
    return value
  }

  /// A Boolean item: `?1` or `?0`.
  static func boolean(_ text: String) -> Bool? {
    switch trimmed(text) {
    case "?1": true
    case "?0": false
    default: nil
    }
  }

  /// A Boolean item as text.
  static func boolean(_ value: Bool) -> String { value ? "?1" : "?0" }

  /// A Dictionary of Integer members as text: `a=1, b=2`.
  static func dictionary(_ members: [(key: String, value: Int)]) -> String {
    members.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
  }

  private static func trimmed(_ text: String) -> Substring {
    var value = text[...]
    while value.first == " " || value.first == "\t" { value = value.dropFirst() }
    while value.last == " " || value.last == "\t" { value = value.dropLast() }
    return value
  }
}
