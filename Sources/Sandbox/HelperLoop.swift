import Glibc
import SandboxShims

/// The helper's event loop: requests from the socket, children's ends from a signalfd (SIGCHLD:
/// available everywhere, a container runtime's default seccomp profile included), their
/// diagnostics from their pipes. Single-threaded.
struct HelperLoop {
  /// One running child.
  struct Child {
    var id: UInt64
    var pid: pid_t
    /// The read end of the child's diagnostics pipe (its standard error), -1 once at EOF.
    var diagnostics: Int32
    var tail: [UInt8] = []
    var received: UInt64
    var forked: UInt64
    var killed = false
  }

  let settings: HelperSettings
  let jobs: [String: SandboxJob]
  private var children: [Child] = []
  private let socket = SandboxHelper.socketDescriptor
  /// Readable when a child ended.
  private let childEnded: Int32

  init(settings: HelperSettings, jobs: [String: SandboxJob]) {
    self.settings = settings
    self.jobs = jobs
    childEnded = SandboxShims_childSignalFD()
    if childEnded < 0 {
      SandboxHelper.fatal("attachd sandbox helper: signalfd: \(String(cString: strerror(errno)))")
    }
  }

  func send(_ reply: SandboxWire.Reply) {
    let bytes = SandboxWire.encode(reply)
    let sent = bytes.withUnsafeBytes {
      SandboxShims_sendWithDescriptors(socket, $0.baseAddress, $0.count, nil, 0)
    }
    // The server is gone: nothing is left to do for anyone.
    if sent < 0 { shutDown() }
  }

  mutating func run() -> Never {
    while true {
      var fds = [
        pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
        pollfd(fd: childEnded, events: Int16(POLLIN), revents: 0),
      ]
      for child in children { fds.append(pollfd(fd: child.diagnostics, events: Int16(POLLIN), revents: 0)) }
      let ready = poll(&fds, nfds_t(fds.count), -1)
      if ready < 0 {
        if errno == EINTR { continue }
        SandboxHelper.fatal("attachd sandbox helper: poll: \(String(cString: strerror(errno)))")
      }
      // Children first: their slots may be reused by the request handling below.
      for index in children.indices where fds[2 + index].revents != 0 { drain(&children[index]) }
      if fds[1].revents != 0 {
        SandboxShims_drainSignalFD(childEnded)
        for index in children.indices.reversed() { reap(index) }
      }
      if fds[0].revents != 0 { receive() }
    }
  }

  /// One message from the server.
  private mutating func receive() {
    var buffer = [UInt8](repeating: 0, count: SandboxWire.maximumMessage)
    var descriptors: [Int32] = [-1, -1]
    var count: Int32 = 0
    let got = buffer.withUnsafeMutableBytes { bytes in
      descriptors.withUnsafeMutableBufferPointer {
        SandboxShims_receiveWithDescriptors(socket, bytes.baseAddress, bytes.count, $0.baseAddress, 2, &count)
      }
    }
    if got <= 0 {
      if got < 0 && (errno == EAGAIN || errno == EINTR) { return }
      shutDown()  // the server closed its end (or died)
    }
    let handed = Array(descriptors.prefix(Int(count)))
    guard let request = try? SandboxWire.decodeRequest(Array(buffer.prefix(got))) else {
      SandboxHelper.fatal("attachd sandbox helper: unreadable request")
    }
    switch request {
    case .run(let id, let name, let parameters):
      guard handed.count == 2, let job = jobs[name] else {
        for fd in handed { close(fd) }
        var exit = SandboxExit()
        exit.code = 127
        send(.finished(id: id, exit))
        return
      }
      start(id: id, job: job, parameters: parameters, input: handed[0], output: handed[1])
    case .kill(let id):
      for fd in handed { close(fd) }
      if let index = children.firstIndex(where: { $0.id == id }) {
        children[index].killed = true
        kill(children[index].pid, SIGKILL)
      }
    }
  }

  /// Forks the child of request `id`.
  private mutating func start(id: UInt64, job: SandboxJob, parameters: [UInt8], input: Int32, output: Int32) {
    let received = Self.now()
    var pipeEnds: [Int32] = [-1, -1]
    guard SandboxShims_pipe(&pipeEnds) == 0 else {
      close(input)
      close(output)
      var exit = SandboxExit()
      exit.code = 126
      send(.finished(id: id, exit))
      return
    }
    let pid = SandboxShims_fork()
    if pid == 0 {
      SandboxShims_unblockChildSignal()
      SandboxChild.run(
        job: job, parameters: parameters, input: input, output: output, diagnostics: pipeEnds[1],
        settings: settings)
    }
    close(input)
    close(output)
    close(pipeEnds[1])
    guard pid > 0 else {
      close(pipeEnds[0])
      var exit = SandboxExit()
      exit.code = 126
      send(.finished(id: id, exit))
      return
    }
    children.append(Child(id: id, pid: pid, diagnostics: pipeEnds[0], received: received, forked: Self.now()))
  }

  /// Keeps the last bytes the child wrote to its diagnostics pipe.
  private func drain(_ child: inout Child) {
    guard child.diagnostics >= 0 else { return }
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let got = buffer.withUnsafeMutableBytes { read(child.diagnostics, $0.baseAddress, $0.count) }
      if got > 0 {
        child.tail += buffer.prefix(got)
        if child.tail.count > SandboxExit.maximumDiagnostics {
          child.tail.removeFirst(child.tail.count - SandboxExit.maximumDiagnostics)
        }
        continue
      }
      if got == 0 || (errno != EAGAIN && errno != EINTR) {
        // End of file: poll a descriptor that says nothing more, never again.
        close(child.diagnostics)
        child.diagnostics = -1
      }
      return
    }
  }

  /// Collects the child at `index` if it ended, and tells the server.
  private mutating func reap(_ index: Int) {
    var status: Int32 = 0
    var usage = rusage()
    let pid = SandboxShims_reap(children[index].pid, &status, &usage)
    guard pid == children[index].pid else { return }
    var child = children.remove(at: index)
    drain(&child)
    if child.diagnostics >= 0 { close(child.diagnostics) }
    var exit = SandboxExit()
    var value: Int32 = 0
    if SandboxShims_exited(status, &value) != 0 { exit.code = value }
    if SandboxShims_signaled(status, &value) != 0 { exit.signal = value }
    exit.pid = child.pid
    exit.killedByHelper = child.killed
    exit.cpuMicroseconds =
      UInt64(max(0, usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)) * 1_000_000
      + UInt64(max(0, usage.ru_utime.tv_usec + usage.ru_stime.tv_usec))
    exit.maxResidentKiB = UInt64(max(0, usage.ru_maxrss))
    exit.forkNanoseconds = child.forked &- child.received
    exit.runNanoseconds = Self.now() &- child.forked
    exit.diagnostics = child.tail
    send(.finished(id: child.id, exit))
  }

  /// Kills every child and ends the helper.
  private func shutDown() -> Never {
    for child in children { kill(child.pid, SIGKILL) }
    SandboxShims_exit(0)
  }

  static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }
}
