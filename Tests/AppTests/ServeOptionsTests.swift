import Testing

@testable import App

@Suite struct ServeOptionsTests {
  @Test func flagsTakeTheirValueAfterASpaceOrAnEqualsSign() throws {
    let options = try ServeOptions.parse([
      "--host", "0.0.0.0", "--port=0", "--data-dir", "/d", "--config=c.json",
    ])
    #expect(options.configPath == "c.json")
    #expect(
      options.settings == [
        .init(flag: "--host", value: "0.0.0.0"), .init(flag: "--port", value: "0"),
        .init(flag: "--data-dir", value: "/d"),
      ])
    #expect(!options.wantsHelp)
  }

  @Test func helpIsRecognised() throws {
    #expect(try ServeOptions.parse(["--help"]).wantsHelp)
    #expect(try ServeOptions.parse(["-h"]).wantsHelp)
  }

  @Test(arguments: [
    (["--prot", "1"], "unknown option --prot"),
    (["--port"], "--port needs a value"),
    (["serve"], #"unexpected argument "serve""#),
    (["--bogus=1"], "unknown option --bogus"),
  ])
  func badCommandLinesAreUsageErrors(arguments: [String], message: String) {
    #expect(throws: UsageError(message)) { try ServeOptions.parse(arguments) }
  }

  @Test func helpListsEverySettingWithItsVariable() {
    for key in ConfigurationKey.all {
      #expect(ServeOptions.help.contains(key.path))
      #expect(ServeOptions.help.contains(key.environment))
    }
  }
}
