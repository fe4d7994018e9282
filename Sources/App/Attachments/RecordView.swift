import ImagePipeline
import Storage

/// What a JSON record shows of one attachment: its row, the renditions stored so far, which
/// profile the top level describes, and how links are written.
struct RecordView {
  /// One profile's image as the record lists it: its size always (a pure function of the
  /// stored image's), its bytes and hash once it exists.
  struct Image {
    var width: Int
    var height: Int
    var bytes: Int?
    var blob: BlobHash?
  }

  var record: AttachmentRecord
  /// Stored renditions by profile name.
  var renditions: [String: Rendition]
  /// The profile the top-level fields and `url` describe.
  var profile: ModelProfile
  /// The profile the tenant's plain `url` (no `?profile=`) serves.
  var tenantDefault: ModelProfile
  /// `server.publicBaseURL` ("" for relative links).
  var baseURL: String
  /// The signed path (`…?exp=…&sig=…`), when the record carries one.
  var signedPath: String?
  /// A video's MP4 job (nil for a photo, or when the index could not be asked).
  var videoJob: VideoJob? = nil

  /// `profile`'s image: the stored default itself when the profile keeps its size, else the
  /// rendition (bytes and hash nil until it is made).
  func image(of profile: ModelProfile) -> Image {
    let size = profile.size(ofStored: record.width, record.height)
    if size == (record.width, record.height) {
      return Image(width: record.width, height: record.height, bytes: record.bytes, blob: record.blob)
    }
    let stored = renditions[profile.rawValue]
    return Image(
      width: stored?.width ?? size.width, height: stored?.height ?? size.height, bytes: stored?.bytes,
      blob: stored?.blob)
  }

  /// The path of `profile`'s image: the plain path for the tenant's default (unless
  /// `explicit`), else with `?profile=`.
  func path(_ profile: ModelProfile, explicit: Bool = false) -> String {
    let plain = Application.attachmentsPath + "/" + record.id
    return !explicit && profile == tenantDefault ? plain : plain + "?profile=" + profile.rawValue
  }

  /// The path of a video's frame `number` (from 1), sized for `profile` when one is named.
  func framePath(_ number: Int, profile: ModelProfile? = nil) -> String {
    Application.attachmentsPath + "/" + record.id + "?frame=\(number)"
      + (profile.map { "&profile=" + $0.rawValue } ?? "")
  }

  /// `path` as a link (absolute with a public base URL).
  func link(_ path: String) -> String { baseURL + path }
}
