private import CTurboJPEG
private import JPEGWarnings

/// The one rule for JPEGs that libjpeg decodes with warnings. Every browser shows such files,
/// vips and Pillow too; refusing what a user sees on their own phone is a bug, but a picture
/// must never be padded with grey where its data is missing.
///
/// TurboJPEG decodes strictly first (`TJFLAG_STOPONWARNING`): a clean file costs nothing more.
/// When it stops at a warning, the whole file is read with libjpeg (`JPEGWarnings`: TurboJPEG
/// says neither which warnings nor where) and every warning is judged:
///
/// - accepted: **extraneous bytes** before a marker (stray bytes between segments, after a
///   scan, before EOI), and a **scan whose data ends inside the image's last MCU row** (an
///   encoder's short final bytes: at most part of that row is decoded from zeros);
/// - refused as `corrupt`: a scan whose data ends **before** its last MCU row (the rest would be
///   grey), a **bad Huffman or arithmetic code**, restart markers out of step (lost MCUs), any
///   other warning, more warnings than are kept, and any libjpeg error;
/// - refused as `truncated`: the bytes end **before EOI** (a cut upload: worth sending again).
///
/// An accepted file is then decoded (or transformed) by TurboJPEG without stopping at warnings.
/// Bytes after EOI are not a warning: libjpeg never reads them, and no output carries them (every
/// output is encoded or transformed afresh and verified to end at EOI). A CMYK file without an
/// Adobe marker is not a warning either: see `CMYKConversion`.
enum JPEGRecovery {
  /// Scans read at most, as TurboJPEG's `TJFLAG_LIMITSCANS`.
  static let maxScans = 500

  /// Runs a TurboJPEG call on `data` under the rule; `call` takes the flags and returns its
  /// status. Throws the refusal, or TurboJPEG's own error.
  static func run(
    _ data: UnsafeRawBufferPointer, handle: TJHandle, context: String, _ call: (Int32) -> Int32
  ) throws {
    if call(TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) == 0 { return }
    guard handle.stoppedAtWarning else { throw handle.error(data, context: context) }
    try judge(data, context: context)
    if call(TJFLAG_LIMITSCANS) != 0, !handle.stoppedAtWarning { throw handle.error(data, context: context) }
  }

  /// Returns when the rule accepts every warning libjpeg gives for `data`; else throws why not.
  static func judge(_ data: UnsafeRawBufferPointer, context: String) throws {
    let report = read(data)
    func refuse(_ kind: CodecError.Kind, _ why: String) -> CodecError {
      CodecError(kind, codec: JPEGCodec.codec, "\(context): \(why) (\(report.message))")
    }
    if report.failed { throw refuse(.corrupt, "libjpeg stopped") }
    if report.count > report.warnings.count { throw refuse(.corrupt, "\(report.count) warnings") }
    for warning in report.warnings {
      switch warning.kind {
      case JPEGWarningExtraneousBytes:
        continue
      case JPEGWarningScanEndedEarly where warning.row >= warning.rows - 1:
        continue
      case JPEGWarningScanEndedEarly:
        throw refuse(.corrupt, "scan \(warning.scan) ends in MCU row \(warning.row + 1) of \(warning.rows)")
      case JPEGWarningEndOfFile:
        throw refuse(.truncated, "the data ends before EOI")
      default:
        throw refuse(.corrupt, "libjpeg warning \(warning.code)")
      }
    }
  }

  /// What libjpeg reports for `data`, as Swift values.
  private static func read(_ data: UnsafeRawBufferPointer) -> (
    failed: Bool, count: Int, warnings: [JPEGWarning], message: String
  ) {
    var report = JPEGWarningsReport()
    JPEGWarnings_read(
      data.baseAddress?.assumingMemoryBound(to: UInt8.self), data.count, Int32(maxScans), &report)
    let kept = withUnsafeBytes(of: report.warnings) { raw in
      Array(raw.bindMemory(to: JPEGWarning.self).prefix(Int(report.count)))
    }
    let message = withUnsafeBytes(of: report.message) { raw in
      String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    return (report.failed != 0, Int(report.count), kept, message)
  }
}

extension TJHandle {
  /// Whether the handle's last call stopped at (or finished with) a libjpeg warning, not an error.
  var stoppedAtWarning: Bool { tjGetErrorCode(raw) == Int32(TJERR_WARNING.rawValue) }
}
