import Foundation
import Server

/// `attachd serve`'s body: layer the configuration, prepare the data directory, run the server
/// until SIGTERM/SIGINT has drained it. Here in App, not in the executable, so that the
/// benchmark-only `attachd-bench-unsandboxed` (Sources/BenchUnsandboxed, never shipped) starts
/// exactly the same service with `decoding: .inProcessForBenchmarks`; `serve` itself has no
/// switch that turns the sandbox off.
public enum ServeMain {
  /// Exit status for a command line that cannot be understood (sysexits.h EX_USAGE).
  public static let exitUsage: Int32 = 64
  /// Exit status for an unusable configuration (sysexits.h EX_CONFIG).
  public static let exitConfig: Int32 = 78
  /// Exit status when a storage server cannot be reached at start (sysexits.h EX_UNAVAILABLE).
  public static let exitUnavailable: Int32 = 69

  /// Runs the service; `command` names it in error lines (`attachd serve`).
  public static func run(_ arguments: [String], command: String, decoding: Application.Decoding) -> Int32 {
    MallocTuning.keepFreedBuffersForReuse()
    let options: ServeOptions
    do {
      options = try ServeOptions.parse(arguments)
    } catch {
      printError("\(command): \(error)")
      printError(ServeOptions.help)
      return exitUsage
    }
    if options.wantsHelp {
      print(ServeOptions.help)
      return 0
    }
    let configuration: Application.Configuration
    let accessSink: LogSink
    do {
      configuration = try ConfigurationLoader.load(
        options: options, environment: ProcessInfo.processInfo.environment)
      accessSink = try LogSink.named(configuration.log.access)
    } catch {
      printError("\(command): \(error)")
      return exitConfig
    }
    do {
      try FileManager.default.createDirectory(
        atPath: configuration.storage.dataDirectory, withIntermediateDirectories: true)
    } catch {
      printError("\(command): cannot create data directory \(configuration.storage.dataDirectory)")
      return exitConfig
    }
    let application: Application
    do {
      application = try Application(
        configuration: configuration, accessLog: AccessLog(sink: accessSink),
        eventLog: EventLog(sink: .standardError), decoding: decoding)
    } catch let error as Application.StartError {
      printError("\(command): cannot open storage (\(configuration.storageSummary)): \(error)")
      // A server that is down or not up yet is worth a restart later; anything else needs a fix.
      return error.isUnavailable ? exitUnavailable : exitConfig
    } catch {
      printError("\(command): \(error)")
      return exitConfig
    }
    // A parent may have started us with SIGTERM/SIGINT blocked (threads of libdispatch block
    // them, and posix_spawn passes the mask on); blocked, they would never start the drain.
    // Unblock them before the server starts its threads, which inherit this mask.
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGTERM)
    sigaddset(&signals, SIGINT)
    sigprocmask(SIG_UNBLOCK, &signals, nil)

    let server: Server
    do {
      server = try application.makeServer()
    } catch {
      printError(
        "\(command): cannot listen on \(configuration.server.host):\(configuration.server.port): \(error)")
      return 1
    }
    application.eventLog.info(
      "listening",
      fields: [
        ("address", "\(configuration.server.host):\(server.localPort)"),
        ("data_dir", configuration.storage.dataDirectory), ("storage", configuration.storageSummary),
        ("version", Application.version),
      ])
    // A stack started without keys answers every upload 401 and nothing else says why. (Right
    // after "listening": ServeBinaryTests reads the next line.)
    if configuration.auth.allEntries.isEmpty && configuration.auth.tokens.keys.isEmpty {
      application.eventLog.warning(
        "no keys",
        fields: [
          (
            "detail",
            "no API key and no upload-token issuer is configured: every request but health checks and signed links answers 401; set ATTACHD_API_KEYS or ATTACHD_AUTH_KEYS (docs/configuration.md)"
          )
        ])
    }
    application.logSandbox(waitingUpTo: 10)
    defer {
      application.accessLog.flush()
      application.eventLog.flush()
    }
    defer { application.stopBackgroundWork() }
    do {
      try server.run()
    } catch {
      application.eventLog.warning("server failed", fields: [("detail", String(describing: error))])
      return 1
    }
    application.eventLog.info("stopped")
    return 0
  }

  static func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
  }
}
