import Glibc

/// Jobs that prove the sandbox holds (`attachd sandbox check`, the tests): each tries one thing
/// a compromised decoder would, and must be stopped; plus a few that exercise the plumbing.
/// They are harmless in a production binary: only the server can ask its helper for a job.
public enum SandboxProbes {
  /// Opens a file (`parameters` names it; /etc/passwd by default): the filter kills it.
  public static let openFile = SandboxJob(name: "probe.open") { _, parameters, output in
    let path = parameters.isEmpty ? "/etc/passwd" : String(decoding: parameters, as: UTF8.self)
    let fd = open(path, O_RDONLY)
    output.append(Array("opened \(fd)".utf8))
  }

  /// Opens a file the way glibc's malloc probes /proc/sys/vm/overcommit_memory (read-only,
  /// close-on-exec): the filter fails it with EACCES and the child goes on (`opened -1 errno 13`).
  public static let openLikeMalloc = SandboxJob(name: "probe.open-like-malloc") { _, parameters, output in
    let path =
      parameters.isEmpty ? "/proc/sys/vm/overcommit_memory" : String(decoding: parameters, as: UTF8.self)
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    output.append(Array("opened \(fd) errno \(fd < 0 ? errno : 0)".utf8))
  }

  /// Connects to 127.0.0.1 (`parameters`: the port as text).
  public static let connectLoopback = SandboxJob(name: "probe.connect") { _, parameters, output in
    let port = UInt16(String(decoding: parameters, as: UTF8.self)) ?? 80
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    output.append(Array("connected \(fd) \(result)".utf8))
  }

  /// Runs /bin/sh.
  public static let execute = SandboxJob(name: "probe.exec") { _, _, output in
    var arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup("true"), nil]
    execv("/bin/sh", &arguments)
    output.append(Array("executed".utf8))
  }

  /// Reads another process's environment (`parameters`: its pid as text): the server's holds
  /// its secrets.
  public static let readEnvironment = SandboxJob(name: "probe.environ") { _, parameters, output in
    let path = "/proc/\(String(decoding: parameters, as: UTF8.self))/environ"
    let fd = open(path, O_RDONLY)
    var buffer = [UInt8](repeating: 0, count: 256)
    let got = fd >= 0 ? read(fd, &buffer, buffer.count) : -1
    output.append(Array("read \(got)".utf8))
  }

  /// Allocates memory 64 MiB at a time until refused (the address-space limit counts what is
  /// mapped, so one byte a chunk is touched: the probe stays quick); writes how far it got.
  public static let allocate = SandboxJob(name: "probe.allocate") { _, _, output in
    let chunk = 64 << 20
    var total = 0
    while total < 1 << 40 {
      guard let block = mmap(nil, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
        block != MAP_FAILED
      else { break }
      block.storeBytes(of: 1, as: UInt8.self)
      total += chunk
    }
    output.append(Array("allocated \(total >> 20) MiB".utf8))
  }

  /// Spins on the CPU until stopped.
  public static let spin = SandboxJob(name: "probe.spin") { _, _, output in
    var x: UInt64 = 1
    while x != 0 { x = x &* 6_364_136_223_846_793_005 &+ 1 }
    output.append(Array("\(x)".utf8))
  }

  /// Copies its input to its output (the plumbing).
  public static let echo = SandboxJob(name: "probe.echo") { input, _, output in
    output.append(input)
  }

  /// Sleeps `parameters` milliseconds, then echoes (a child to kill from outside).
  public static let sleep = SandboxJob(name: "probe.sleep") { input, parameters, output in
    let milliseconds = Int(String(decoding: parameters, as: UTF8.self)) ?? 1000
    var time = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
    var left = timespec()
    while nanosleep(&time, &left) != 0 && errno == EINTR { time = left }
    output.append(input)
  }

  /// Dies of `parameters` (a signal number as text: 11 SIGSEGV, 6 SIGABRT …).
  public static let crash = SandboxJob(name: "probe.crash") { _, parameters, output in
    let signal = Int32(String(decoding: parameters, as: UTF8.self)) ?? SIGSEGV
    if signal == SIGABRT { abort() }
    raise(signal)
    output.append(Array("survived".utf8))
  }

  /// Reports its own lockdown as /proc would show it, from inside (seccomp mode, no new privs,
  /// uid), without opening a file: the checks the test makes from outside, made by the child.
  public static let identity = SandboxJob(name: "probe.identity") { _, _, output in
    output.append(Array("uid \(getuid()) pid \(getpid())".utf8))
  }

  /// Every probe and plumbing job.
  public static let all: [SandboxJob] = [
    openFile, openLikeMalloc, connectLoopback, execute, readEnvironment, allocate, spin, echo, sleep, crash,
    identity,
  ]
}
