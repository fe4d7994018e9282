import Glibc
import SandboxShims

/// One decoding child, from the fork to its exit: it keeps only its input (at 3), its output
/// (at 4) and its diagnostics pipe (at 2), limits itself, installs its seccomp filter, runs the
/// job and exits. Every failure to lock down ends it at once (exit 71): a job never runs with
/// a layer missing.
enum SandboxChild {
  static let inputDescriptor: Int32 = 3
  static let outputDescriptor: Int32 = 4
  static let diagnosticsDescriptor: Int32 = 2

  /// The signals a fault kills with; their handlers (the runtime's backtracer) are reset so
  /// the child dies of the signal itself, which the helper reports.
  static let faultSignals = [SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGXCPU]

  static func run(
    job: SandboxJob, parameters: [UInt8], input: Int32, output: Int32, diagnostics: Int32,
    settings: HelperSettings
  ) -> Never {
    _ = SandboxShims_parentDeathSignal(SIGKILL)
    // Move the three descriptors to their places (through high numbers, so no move clobbers
    // another), and close everything else.
    let moved = [input, output, diagnostics].map { fcntl($0, F_DUPFD_CLOEXEC, 100) }
    guard moved.allSatisfy({ $0 >= 0 }),
      dup2(moved[0], inputDescriptor) >= 0, dup2(moved[1], outputDescriptor) >= 0,
      dup2(moved[2], diagnosticsDescriptor) >= 0
    else { SandboxShims_exit(71) }
    _ = SandboxShims_closeFrom(outputDescriptor + 1)
    close(0)
    close(1)
    for signal in faultSignals { Glibc.signal(signal, SIG_DFL) }
    let limit = UInt64(settings.memoryLimit)
    let cpu = UInt64(settings.cpuSeconds)
    guard SandboxShims_limit(SandboxShims_RLIMIT_AS, limit, limit) == 0,
      SandboxShims_limit(SandboxShims_RLIMIT_CPU, cpu, cpu + 1) == 0,
      SandboxShims_limit(SandboxShims_RLIMIT_FSIZE, 0, 0) == 0,
      SandboxShims_limit(SandboxShims_RLIMIT_CORE, 0, 0) == 0,
      SandboxShims_noNewPrivileges() == 0, SandboxShims_notDumpable() == 0
    else { SandboxShims_exit(71) }
    guard let inputMap = map(inputDescriptor, writable: false),
      let outputMap = map(outputDescriptor, writable: true), outputMap.size >= SandboxOutput.headerBytes
    else { SandboxShims_exit(71) }
    let filter = DecoderPolicy.filter(
      descriptors: [diagnosticsDescriptor, inputDescriptor, outputDescriptor], pid: getpid())
    do { try filter.install() } catch { SandboxShims_exit(71) }
    var out = SandboxOutput(base: outputMap.base!, size: outputMap.size)
    job.run(UnsafeRawBufferPointer(start: inputMap.base, count: inputMap.size), parameters, &out)
    SandboxShims_exit(0)
  }

  /// Maps the whole of `fd` (nil base for an empty file).
  private static func map(_ fd: Int32, writable: Bool) -> (base: UnsafeMutableRawPointer?, size: Int)? {
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    let size = Int(info.st_size)
    guard size > 0 else { return (nil, 0) }
    let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
    let flags = writable ? MAP_SHARED : MAP_PRIVATE
    let base = mmap(nil, size, protection, flags, fd, 0)
    guard let base, base != MAP_FAILED else { return nil }
    return (base, size)
  }
}
