import Foundation
import Testing

@testable import App

/// The configuration reference (`docs/configuration.md`) against `ConfigurationKey.all`, which
/// the loader and `attachd serve --help` read: a setting added, renamed or given a new default
/// in the code fails here until its row says so.
@Suite struct ReadmeTests {
  /// The rows of the reference's table: one per setting, each starting with its path.
  static func referenceRows() throws -> [Substring] {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let reference = try String(
      contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
    return reference.split(separator: "\n").filter { $0.hasPrefix("| `") }
  }

  @Test func theReadmeListsEverySettingWithItsVariableAndFlag() throws {
    let rows = try Self.referenceRows()
    for key in ConfigurationKey.all {
      let row = try #require(rows.first { $0.hasPrefix("| `\(key.path)` |") })
      #expect(row.contains("`\(key.environment)`"))
      if let flag = key.flag { #expect(row.contains("`\(flag)`")) }
    }
  }

  @Test func theConfigurationReferenceListsNoSettingTheCodeLacks() throws {
    let paths = Set(ConfigurationKey.all.map(\.path))
    for row in try Self.referenceRows() {
      let path = String(row.dropFirst(3).prefix { $0 != "`" })
      let known = paths.contains(path)
      #expect(known, "\(path) is in docs/configuration.md but not in the code")
    }
  }

  @Test func theConfigurationReferenceShowsEachSettingsDefault() throws {
    let rows = try Self.referenceRows()
    for key in ConfigurationKey.all {
      let row = try #require(rows.first { $0.hasPrefix("| `\(key.path)` |") })
      // Columns: key, environment, flag, default, meaning. The default cell may add a unit or a
      // gloss after the value (`10` s, `0` = one per core): it starts with the code's text, and
      // its first word is the code's first word (so `10` never passes for `1`). A setting with no
      // default (empty text) is shown as "none".
      let code = key.defaultText.isEmpty ? "none" : key.defaultText
      let cells = row.split(separator: "|", omittingEmptySubsequences: false)
      try #require(cells.count >= 6)
      let shown = cells[4].trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "")
      let firstWord = { (text: String) in text.prefix { $0 != " " } }
      #expect(
        shown.hasPrefix(code) && firstWord(shown) == firstWord(code),
        "\(key.path): docs/configuration.md shows \"\(shown)\", the code \"\(code)\"")
    }
  }
}
