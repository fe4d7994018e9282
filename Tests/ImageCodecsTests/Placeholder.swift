import Testing

@Suite struct ImageCodecsTestsPlaceholder {
  @Test func moduleBuilds() { #expect(Bool(true)) }
}
