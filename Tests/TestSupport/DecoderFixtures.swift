import Foundation

/// The files in Tests/Fixtures/decoders, made by Scripts/make-decoder-fixtures (its docstring and
/// the README beside them say how each was made and what it is judged against).
public enum DecoderFixtures {
  /// The fixture directory in this checkout.
  public static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures/decoders")

  /// The bytes of one fixture.
  public static func bytes(_ name: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
  }
}
