import HTTP

/// The resumable-upload fields of one request, read as its interop version spells them.
///
/// A field that is malformed or repeated is ignored, as the drafts ask of Structured Fields
/// ("other values MUST cause the entire header field to be ignored"): a creation whose
/// completeness field is unreadable is then an ordinary upload, an append without a readable
/// `Upload-Offset` a 400.
struct ResumableFields: Sendable, Equatable {
  /// The interop version the request names.
  var version: ResumableVersion
  /// Whether the request completes the upload (`Upload-Complete`, or `Upload-Incomplete`
  /// inverted for version 3); nil when absent.
  var complete: Bool?
  /// `Upload-Offset`.
  var offset: Int?
  /// `Upload-Length` (versions that define it).
  var length: Int?
  /// Whether any resumable field other than the version is present at all (even unreadable):
  /// offset retrieval and cancellation must carry none.
  var carriesUploadFields: Bool

  /// The fields of `head`, or nil when it names no interop version attachd speaks: then it is
  /// not a resumable request.
  init?(_ head: HTTPRequestHead) {
    guard let version = ResumableVersion.named(Self.single(head, "Upload-Draft-Interop-Version")) else {
      return nil
    }
    self.version = version
    complete = Self.single(head, version.completenessField).flatMap(StructuredField.boolean).map {
      version.usesIncompleteField ? !$0 : $0
    }
    offset = Self.single(head, "Upload-Offset").flatMap(StructuredField.count)
    length = version.hasUploadLength ? Self.single(head, "Upload-Length").flatMap(StructuredField.count) : nil
    carriesUploadFields = ["Upload-Offset", "Upload-Complete", "Upload-Incomplete", "Upload-Length"].contains
    {
      head.headers.contains(name: $0)
    }
  }

  /// The only value of field `name`; nil when absent or repeated.
  private static func single(_ head: HTTPRequestHead, _ name: String) -> String? {
    let values = head.headers[name]
    return values.count == 1 ? values[0] : nil
  }
}
