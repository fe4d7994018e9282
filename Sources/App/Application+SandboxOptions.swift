import Sandbox

extension Application {
  /// `sandbox.*`: the decode sandbox's child limits and its helper.
  public struct SandboxOptions: Sendable, Equatable {
    /// Address space of one decoding child, bytes (3 GiB: a 200 MP HEIC takes well under it).
    public var memoryLimit = 3 << 30
    /// CPU seconds of one decoding child before the kernel stops it.
    public var cpuSeconds = 60
    /// The helper executable; empty: this program itself (see `helperExecutable`).
    public var helper = ""

    public init() {}

    public func validate() throws(ConfigurationError) {
      guard memoryLimit >= 64 << 20 else {
        throw ConfigurationError("sandbox.memoryLimit must be at least 64 MiB")
      }
      guard (1...3600).contains(cpuSeconds) else {
        throw ConfigurationError("sandbox.cpuSeconds must be 1…3600")
      }
    }

    /// The helper to start: `helper` when set, else this program
    /// (`SandboxConfiguration.thisProgram`).
    public var helperExecutable: String { helper.isEmpty ? SandboxConfiguration.thisProgram : helper }

    /// The sandbox's settings these options describe.
    public func sandboxConfiguration() -> SandboxConfiguration {
      var configuration = SandboxConfiguration()
      configuration.executable = helperExecutable
      configuration.memoryLimit = memoryLimit
      configuration.cpuSeconds = cpuSeconds
      return configuration
    }
  }
}
