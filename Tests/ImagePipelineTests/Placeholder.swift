import Testing

@Suite struct ImagePipelineTestsPlaceholder {
  @Test func moduleBuilds() { #expect(Bool(true)) }
}
