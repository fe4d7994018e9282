@testable import App

/// A strict reader of the Prometheus text format 0.0.4, enough to check what the registry writes.
struct PrometheusText {
  struct Line: Equatable {
    var name: String
    var labels: [String: String]
    var value: Double
  }

  struct FormatError: Error, CustomStringConvertible {
    var description: String
  }

  var lines: [Line] = []
  var types: [String: String] = [:]
  var help: [String: String] = [:]

  /// The value of the sample with exactly these labels, or nil.
  func value(_ name: String, _ labels: [String: String]) -> Double? {
    lines.first { $0.name == name && $0.labels == labels }?.value
  }

  static func parse(_ text: String) throws -> PrometheusText {
    var result = PrometheusText()
    guard text.isEmpty || text.hasSuffix("\n") else { throw FormatError(description: "no final line feed") }
    var currentFamily: String?
    for raw in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
      let line = String(raw)
      if line.hasPrefix("# HELP ") {
        let rest = line.dropFirst(7)
        guard let space = rest.firstIndex(of: " ") else {
          throw FormatError(description: "bad HELP: \(line)")
        }
        result.help[String(rest[..<space])] = String(rest[rest.index(after: space)...])
      } else if line.hasPrefix("# TYPE ") {
        let parts = line.dropFirst(7).split(separator: " ")
        guard parts.count == 2, ["counter", "gauge", "histogram"].contains(parts[1]) else {
          throw FormatError(description: "bad TYPE: \(line)")
        }
        let name = String(parts[0])
        guard result.types[name] == nil, result.help[name] != nil else {
          throw FormatError(description: "TYPE repeated or without HELP: \(line)")
        }
        result.types[name] = String(parts[1])
        currentFamily = name
      } else {
        let sample = try parseSample(line)
        guard let family = currentFamily,
          sample.name == family || belongsToHistogram(sample.name, family, result)
        else { throw FormatError(description: "sample outside its family: \(line)") }
        result.lines.append(sample)
      }
    }
    return result
  }

  private static func belongsToHistogram(_ name: String, _ family: String, _ result: PrometheusText) -> Bool {
    result.types[family] == "histogram" && ["_bucket", "_sum", "_count"].contains { name == family + $0 }
  }

  private static func parseSample(_ line: String) throws -> Line {
    var chars = Array(line.unicodeScalars)[...]
    var name = ""
    while let c = chars.first, c != "{", c != " " {
      name.unicodeScalars.append(c)
      chars.removeFirst()
    }
    guard !name.isEmpty, MetricsRegistry.isValidName(name) else {
      throw FormatError(description: "bad name: \(line)")
    }
    var labels: [String: String] = [:]
    if chars.first == "{" {
      chars.removeFirst()
      while chars.first != "}" {
        var labelName = ""
        while let c = chars.first, c != "=" {
          labelName.unicodeScalars.append(c)
          chars.removeFirst()
        }
        guard chars.popFirst() == "=", chars.popFirst() == "\"" else {
          throw FormatError(description: "bad label: \(line)")
        }
        var value = ""
        while true {
          guard let c = chars.popFirst() else {
            throw FormatError(description: "unterminated value: \(line)")
          }
          if c == "\"" { break }
          if c == "\\" {
            switch chars.popFirst() {
            case "\\": value += "\\"
            case "\"": value += "\""
            case "n": value += "\n"
            default: throw FormatError(description: "bad escape: \(line)")
            }
          } else {
            value.unicodeScalars.append(c)
          }
        }
        guard labels.updateValue(value, forKey: labelName) == nil else {
          throw FormatError(description: "repeated label: \(line)")
        }
        if chars.first == "," { chars.removeFirst() }
      }
      chars.removeFirst()
    }
    guard chars.popFirst() == " " else { throw FormatError(description: "no space before value: \(line)") }
    let text = String(String.UnicodeScalarView(chars))
    let value: Double? =
      switch text {
      case "+Inf": .infinity
      case "-Inf": -.infinity
      default: Double(text)
      }
    guard let value else { throw FormatError(description: "bad value: \(line)") }
    return Line(name: name, labels: labels, value: value)
  }
}
