import Foundation
import Testing

@testable import App

@Suite struct ReadmeTests {
  @Test func theReadmeListsEverySettingWithItsVariableAndFlag() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    for key in ConfigurationKey.all {
      let row = try #require(readme.split(separator: "\n").first { $0.hasPrefix("| `\(key.path)` |") })
      #expect(row.contains("`\(key.environment)`"))
      if let flag = key.flag { #expect(row.contains("`\(flag)`")) }
    }
  }
}
