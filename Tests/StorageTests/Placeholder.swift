import Testing

@Suite struct StorageTestsPlaceholder {
  @Test func moduleBuilds() { #expect(Bool(true)) }
}
