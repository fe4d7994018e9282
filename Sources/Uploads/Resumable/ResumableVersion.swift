/// One interop version of the IETF *Resumable Uploads for HTTP* draft
/// (draft-ietf-httpbis-resumable-upload), as a client names it in `Upload-Draft-Interop-Version`
/// and as attachd answers it. Every difference between the versions is a field here, so the
/// adapter asks the version instead of comparing numbers.
///
/// | interop | drafts | sent by | completeness | append `Content-Type` | `Upload-Length` | `Upload-Limit` | progress `104` | non-completing append | problem types | `Upload-Offset` on final answers |
/// |---|---|---|---|---|---|---|---|---|---|---|
/// | 3 | -01 | iOS 17 | `Upload-Incomplete` (inverted) | any | — | — | — | 201 | — | yes |
/// | 4 | -02 | — | `Upload-Complete` | any | — | — | — | 201 | — | yes |
/// | 5 | -03 | iOS 18.0 | `Upload-Complete` | any | — | — | yes | 201 | — | yes |
/// | 6 | -04, -05 | iOS 18.1+ | `Upload-Complete` | `application/partial-upload` | yes (-05) | `max-size`, `expires` | yes | 201 | offset, completed | yes |
/// | 7 | -06 … -08 | — | `Upload-Complete`, required on appends | `application/partial-upload` | yes | `max-size`, `max-age` | yes | 204 | + inconsistent length | no (`Upload-Complete` only) |
/// | 8 | -09 … -11 | iOS 26 | as 7 | as 7 | yes | as 7, required in the `104` and `HEAD` | yes | 204 | as 7; an append past the length invalidates the upload | no |
///
/// Common to all: the `104 (Upload Resumption Supported)` to a creation carries the echoed
/// `Upload-Draft-Interop-Version` and the absolute `Location` of the upload; offset retrieval is
/// `HEAD` → 204 with `Upload-Offset`, completeness and `Cache-Control: no-store`; an append at
/// the wrong offset is 409 with the right `Upload-Offset`; cancellation is `DELETE` → 204; a
/// request with no or an unknown interop version is not a resumable upload at all.
struct ResumableVersion: Sendable, Hashable, CustomStringConvertible {
  /// The `Upload-Draft-Interop-Version` value.
  let number: Int

  /// The versions attachd speaks, oldest first.
  static let all = (3...8).map(ResumableVersion.init(number:))

  /// The version a request names, or nil (absent, malformed, or one attachd does not speak).
  static func named(_ value: String?) -> ResumableVersion? {
    guard let value, let number = StructuredField.integer(value) else { return nil }
    return all.first { $0.number == number }
  }

  var description: String { "interop \(number)" }

  /// The drafts that define it.
  var drafts: String {
    switch number {
    case 3: "-01"
    case 4: "-02"
    case 5: "-03"
    case 6: "-04, -05"
    case 7: "-06 … -08"
    default: "-09 … -11"
    }
  }

  /// Version 3 says `Upload-Incomplete: ?1` where later ones say `Upload-Complete: ?0`.
  var usesIncompleteField: Bool { number == 3 }

  /// The name of the completeness field.
  var completenessField: String { usesIncompleteField ? "Upload-Incomplete" : "Upload-Complete" }

  /// The completeness field's value for `complete`.
  func completenessValue(_ complete: Bool) -> String {
    StructuredField.boolean(usesIncompleteField ? !complete : complete)
  }

  /// Appends must say `Content-Type: application/partial-upload` (draft -04 on).
  var requiresPartialUploadType: Bool { number >= 6 }

  /// `Upload-Length` is a field of this version (draft -05, interop 6, on).
  var hasUploadLength: Bool { number >= 6 }

  /// `Upload-Limit` is a field of this version (draft -04 on).
  var hasUploadLimit: Bool { number >= 6 }

  /// The `Upload-Limit` key of the upload's remaining lifetime: `expires` (-04, -05), renamed
  /// `max-age` in -06.
  var lifetimeLimitKey: String { number >= 7 ? "max-age" : "expires" }

  /// Progress `104`s with `Upload-Offset` while a body arrives (draft -03 on).
  var sendsProgress: Bool { number >= 5 }

  /// The status acknowledging an append (or creation) that did not complete the upload: 201
  /// up to -05, any 2xx (204 in the examples) from -06.
  var incompleteAppendStatus: Int { number >= 7 ? 204 : 201 }

  /// Final answers carry `Upload-Offset` (and completeness) whether they succeed or fail: a
  /// MUST up to -05, and Apple's client of those versions checks it. From -06 only completeness
  /// is required on appends, and `Upload-Offset` only on a 409.
  var offsetOnFinalResponses: Bool { number <= 6 }

  /// An append must carry the completeness field (-06 on); before, its absence meant complete.
  var appendRequiresCompleteness: Bool { number >= 7 }

  /// The mismatching-offset and completed-upload problem types (draft -04 on).
  var hasUploadProblemTypes: Bool { number >= 6 }

  /// The inconsistent-length problem type (draft -06 on).
  var hasLengthProblemType: Bool { number >= 7 }

  /// A completing append with no body at the final offset of an upload already complete gets
  /// the recorded answer again (a client that lost it asks this way). Drafts -04 … -08
  /// (interop 6 and 7) say an append to a completed upload MUST be refused with the
  /// completed-upload problem type and name no exception, so those versions get the 400 once
  /// the upload has an answer; the versions before problem types, and interop 8, keep the
  /// replay. An upload complete with no answer recorded (its processing died with a node) is
  /// processed by that append at every version (`ResumableTransfer.openWriter`).
  var replaysRepeatedCompletion: Bool { number < 6 || number >= 8 }

  /// An append past the upload's known length makes the upload invalid (draft -08 on): it is
  /// deleted, and later requests on it answer 404.
  var invalidatesOnLengthExceeded: Bool { number >= 8 }

  /// The problem type URIs (IANA HTTP Problem Types registry, as the drafts register them).
  static let mismatchingOffsetType =
    "https://iana.org/assignments/http-problem-types#mismatching-upload-offset"
  static let completedUploadType = "https://iana.org/assignments/http-problem-types#completed-upload"
  static let inconsistentLengthType =
    "https://iana.org/assignments/http-problem-types#inconsistent-upload-length"
}
