import Testing

@Suite struct HTTPTestsPlaceholder {
  @Test func moduleBuilds() { #expect(Bool(true)) }
}
