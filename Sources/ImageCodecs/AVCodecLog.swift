private import CAVCodec
import Synchronization

/// Where libavcodec's messages go. Its log is process-wide (`av_log_set_callback`), so this is
/// one switch for the whole process: by default every message is dropped (libavcodec would
/// otherwise print to standard error); the App sets a handler that writes to its event log.
/// Messages describe the input ("Invalid NAL unit size"); they go to logs only, never to a client.
public enum AVCodecLog {
  /// How serious a message is, from libavcodec's `AV_LOG_*` levels.
  public enum Level: Int, Sendable, Comparable {
    case debug = 0
    case info = 1
    case warning = 2
    case error = 3

    public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
  }

  /// One message: its level, the component that logged it ("hevc") and the text, without the
  /// trailing newline.
  public typealias Handler = @Sendable (_ level: Level, _ component: String, _ message: String) -> Void

  private static let handler = Mutex<Handler?>(nil)
  /// The level libavcodec is told once it is loaded (`AV_LOG_QUIET` while no handler is set).
  private static let level = Mutex<Int32>(AV_LOG_QUIET)
  /// Whether libavcodec is loaded and logs through the callback.
  private static let installed = Mutex(false)

  /// Sends messages at `minimum` or above to `handler` (nil: drop them all, the default).
  /// The handler is called on decoding threads, possibly several at once; it must not block.
  /// libavcodec is opened by the first HEVC decoder (see `Sources/DelayLoadAVCodec`), not by this: a
  /// process that never decodes HEVC never maps it.
  public static func setHandler(minimum: Level = .warning, _ newHandler: Handler?) {
    installed.withLock { installed in
      handler.withLock { $0 = newHandler }
      // libavcodec formats nothing above this level (the C callback filters on it).
      let newLevel = newHandler == nil ? AV_LOG_QUIET : avLevel(minimum)
      level.withLock { $0 = newLevel }
      if installed { av_log_set_level(newLevel) }
    }
  }

  /// Installs the callback once, when libavcodec has been loaded and before the first decoder
  /// opens: until then libavcodec would log to standard error, which the service must never do
  /// (and which a sandboxed child may not: the default logger asks whether standard error is a
  /// terminal, an `ioctl` its filter forbids). libavformat and libavfilter log through it too.
  public static func installIfNeeded() {
    installed.withLock { installed in
      guard !installed else { return }
      av_log_set_level(level.withLock { $0 })
      CAVCodec_installLogCallback()
      installed = true
    }
  }

  private static func avLevel(_ level: Level) -> Int32 {
    switch level {
    case .debug: AV_LOG_DEBUG
    case .info: AV_LOG_INFO
    case .warning: AV_LOG_WARNING
    case .error: AV_LOG_ERROR
    }
  }

  fileprivate static func level(_ avLevel: Int32) -> Level {
    switch avLevel {
    case ...AV_LOG_ERROR: .error  // panic and fatal too: what to do about them is the caller's call.
    case ...AV_LOG_WARNING: .warning
    case ...AV_LOG_INFO: .info
    default: .debug
    }
  }

  fileprivate static func deliver(_ avLevel: Int32, _ component: String, _ message: String) {
    guard let current = handler.withLock({ $0 }) else { return }
    current(level(avLevel), component, message)
  }
}

/// Called by the C log callback (`CAVCodec_logCallback` in the shim) with one formatted message.
@c(attachd_avcodec_log_line)
func avcodecLogLine(_ level: Int32, _ component: UnsafePointer<CChar>?, _ message: UnsafePointer<CChar>?) {
  guard let message else { return }
  var text = String(cString: message)
  // libavcodec ends most messages with a newline and a few continue a line in several calls;
  // each call becomes one line here.
  while text.last == "\n" { text.removeLast() }
  guard !text.isEmpty else { return }
  AVCodecLog.deliver(level, component.map { String(cString: $0) } ?? "libav", text)
}
