import HTTP
import Server

extension Application.ServerOptions {
  /// The `Server.Configuration` these options describe (0 threads = the server's default,
  /// one per core).
  public func serverConfiguration() -> Server.Configuration {
    var config = configuration
    if eventLoops > 0 { config.loopCount = eventLoops }
    if workerThreads > 0 { config.workerThreads = workerThreads }
    return config
  }
}

extension Application {
  /// Binds the server for this application (its configuration mapped from `server`; access
  /// log and metrics come through `completed(_:)`), and tells `/readyz` when it drains.
  public func makeServer(handleSignals: Bool = true) throws -> Server {
    var config = configuration.server.serverConfiguration()
    config.handleSignals = handleSignals
    config.ioThreads = configuration.uploads.ioThreads
    if configuration.server.workerThreads == 0, configuration.storage.backend == .s3 {
      // A worker stores what it made before it takes the next image: on S3 + PostgreSQL that
      // is network round trips (a PUT, a transaction) during which its core would sit idle
      // with one thread per core. Twice as many threads keep the cores busy; the memory
      // budget, not the thread count, bounds how many images are decoded at once.
      config.workerThreads = 2 * config.workerThreads
    }
    let server = try Server(configuration: config, handler: self)
    startBackgroundWork()
    // Weak: the server holds this application as its handler.
    readiness.setDrainingCheck { [weak server] in server?.isDraining ?? true }
    metrics.registry.onCollect { [weak server, metrics] in
      metrics.workerQueueDepth.set(server?.pool.queueDepth ?? 0)
    }
    return server
  }
}
