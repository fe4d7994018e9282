#if canImport(PhotosUI) && canImport(CoreTransferable)
  import CoreTransferable
  import Foundation
  import UniformTypeIdentifiers

  /// A photo (or movie) from `PhotosPicker` as a file: `try await item.loadTransferable(type:
  /// PickedFile.self)`, then `client.upload(file: picked.url)`. The picker hands over its file
  /// only for the duration of the importing closure, so the closure copies it into the app's
  /// temporary directory (Apple's rule for `FileRepresentation`); the bytes never pass through
  /// memory. Delete `url` when the upload is done. Not compiled on Linux (no PhotosUI there).
  @available(iOS 16.0, macOS 13.0, *)
  public struct PickedFile: Transferable, Sendable {
    public let url: URL

    public static var transferRepresentation: some TransferRepresentation {
      FileRepresentation(importedContentType: .image) { received in try PickedFile(copying: received.file) }
      FileRepresentation(importedContentType: .movie) { received in try PickedFile(copying: received.file) }
    }

    init(copying file: URL) throws {
      let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "AttachdKit", isDirectory: true)
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      url = directory.appendingPathComponent(UUID().uuidString).appendingPathExtension(file.pathExtension)
      try FileManager.default.copyItem(at: file, to: url)
    }
  }
#endif
