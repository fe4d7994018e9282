import App
import Foundation
import Server

/// `attachd serve`: layer the configuration, prepare the data directory, run the server
/// until SIGTERM/SIGINT has drained it.
enum ServeCommand {
  /// Exit status for an unusable configuration (sysexits.h EX_CONFIG).
  static let exitConfig: Int32 = 78
  /// Exit status when a storage server cannot be reached at start (sysexits.h EX_UNAVAILABLE).
  static let exitUnavailable: Int32 = 69

  static func run(_ arguments: [String]) -> Int32 {
    MallocTuning.keepFreedBuffersForReuse()
    let options: ServeOptions
    do {
      options = try ServeOptions.parse(arguments)
    } catch {
      CLI.printError("attachd serve: \(error)")
      CLI.printError(ServeOptions.help)
      return CLI.exitUsage
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
      CLI.printError("attachd serve: \(error)")
      return exitConfig
    }
    do {
      try FileManager.default.createDirectory(
        atPath: configuration.storage.dataDirectory, withIntermediateDirectories: true)
    } catch {
      CLI.printError("attachd serve: cannot create data directory \(configuration.storage.dataDirectory)")
      return exitConfig
    }
    let application: Application
    do {
      application = try Application(
        configuration: configuration, accessLog: AccessLog(sink: accessSink),
        eventLog: EventLog(sink: .standardError))
    } catch let error as Application.StartError {
      CLI.printError("attachd serve: cannot open storage (\(configuration.storageSummary)): \(error)")
      // A server that is down or not up yet is worth a restart later; anything else needs a fix.
      return error.isUnavailable ? exitUnavailable : exitConfig
    } catch {
      CLI.printError("attachd serve: \(error)")
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
      CLI.printError(
        "attachd serve: cannot listen on \(configuration.server.host):\(configuration.server.port): \(error)")
      return 1
    }
    application.eventLog.info(
      "listening",
      fields: [
        ("address", "\(configuration.server.host):\(server.localPort)"),
        ("data_dir", configuration.storage.dataDirectory), ("storage", configuration.storageSummary),
        ("version", Application.version),
      ])
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
}
