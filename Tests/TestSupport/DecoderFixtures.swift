import Foundation

/// A folder of committed fixtures under Tests/Fixtures, each made by a script in Scripts/ (the
/// README beside the files says how each was made and what it is judged against).
public struct FixtureFolder: Sendable {
  /// The folder in this checkout.
  public let directory: URL

  public init(_ name: String) {
    directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
  }

  /// The bytes of one fixture.
  public func bytes(_ name: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
  }
}

/// The files in Tests/Fixtures/decoders, made by Scripts/make-decoder-fixtures.
public enum DecoderFixtures {
  static let folder = FixtureFolder("decoders")
  /// The fixture directory in this checkout.
  public static var directory: URL { folder.directory }

  /// The bytes of one fixture.
  public static func bytes(_ name: String) throws -> [UInt8] { try folder.bytes(name) }
}

/// The files in Tests/Fixtures/video, made by Scripts/make-video-fixtures (planted private
/// strings in `planted`, the same as the script's PLANTED).
public enum VideoFixtures {
  public static let folder = FixtureFolder("video")

  public static func bytes(_ name: String) throws -> [UInt8] { try folder.bytes(name) }

  /// Every string the generator plants in a metadata carrier: no output may hold any of them.
  public static let planted = [
    "+48.8577+002.2950+035.000/", "PlantedMakeCo", "PlantedPhone 99 Pro", "PlantedOS 27.1",
    "Planted Person Name", "5E1C0A7D-PLANTED-CONTENT-ID", "2026-05-01T10:00:00Z",
  ]
}
