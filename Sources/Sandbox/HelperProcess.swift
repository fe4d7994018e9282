import Dispatch
import Foundation
import Glibc
import SandboxShims
import Synchronization

/// The server's side of one running helper: its pid, its socket, the requests waiting for their
/// child's end, and a thread that reads the replies. When the helper goes (it died, or it was
/// retired and its last child ended), every request still waiting is answered `unavailable`.
final class HelperProcess: Sendable {
  /// One request waiting for its child's end.
  final class Waiter: Sendable {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<SandboxExit, SandboxError>?>(nil)

    func finish(_ outcome: Result<SandboxExit, SandboxError>) {
      let first = result.withLock { slot -> Bool in
        guard slot == nil else { return false }
        slot = outcome
        return true
      }
      if first { done.signal() }
    }
  }

  private struct State {
    var pending: [UInt64: Waiter] = [:]
    var layers: SandboxLayers?
    var gone = false
    var retiring = false
    var started = 0
  }

  let pid: pid_t
  private let socket: Int32
  private let state = Mutex(State())
  private let readySignal = DispatchSemaphore(value: 0)
  /// Told once, from the reader thread, when the helper has gone.
  private let onGone: @Sendable (HelperProcess, String) -> Void

  /// Spawns the helper. Call from a thread that lives as long as the helper may: the helper is
  /// killed when the thread that spawned it ends (`PR_SET_PDEATHSIG`).
  init(configuration: SandboxConfiguration, onGone: @escaping @Sendable (HelperProcess, String) -> Void)
    throws(SandboxError)
  {
    var pair: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0
    else {
      throw .system("socketpair", errno)
    }
    let arguments = [configuration.executable] + configuration.helperArguments + configuration.helperSettings
    var cArguments = arguments.map { strdup($0) }
    cArguments.append(nil)
    defer { for argument in cArguments { free(argument) } }
    var pid: pid_t = 0
    let error = SandboxShims_spawnHelper(configuration.executable, cArguments, pair[1], &pid)
    close(pair[1])
    guard error == 0 else {
      close(pair[0])
      throw .system("posix_spawn \(configuration.executable)", error)
    }
    self.pid = pid
    self.socket = pair[0]
    self.onGone = onGone
    let thread = Thread { [self] in readReplies() }
    thread.name = "attachd-sandbox"
    thread.start()
  }

  /// Waits up to `seconds` for the helper to say it is locked down; its layers, or nil.
  func waitReady(seconds: Double) -> SandboxLayers? {
    _ = readySignal.wait(timeout: .now() + seconds)
    return state.withLock { $0.gone ? nil : $0.layers }
  }

  /// The layers the helper reported, once ready.
  var layers: SandboxLayers? { state.withLock { $0.layers } }

  /// Children started through this helper.
  var started: Int { state.withLock { $0.started } }

  var isGone: Bool { state.withLock { $0.gone } }

  /// Sends request `id` for `job` with its two memory files; the waiter hears its end.
  func start(id: UInt64, job: String, parameters: [UInt8], input: Int32, output: Int32) throws(SandboxError)
    -> Waiter
  {
    let waiter = Waiter()
    let accepted = state.withLock { state -> Bool in
      guard !state.gone, !state.retiring else { return false }
      state.pending[id] = waiter
      state.started += 1
      return true
    }
    guard accepted else { throw .unavailable("the helper is being replaced") }
    let bytes = SandboxWire.encode(.run(id: id, job: job, parameters: parameters))
    let descriptors = [input, output]
    let sent = bytes.withUnsafeBytes { buffer in
      descriptors.withUnsafeBufferPointer {
        SandboxShims_sendWithDescriptors(socket, buffer.baseAddress, buffer.count, $0.baseAddress, 2)
      }
    }
    if sent < 0 {
      let code = errno
      _ = state.withLock { $0.pending.removeValue(forKey: id) }
      throw .system("sendmsg to the sandbox helper", code)
    }
    return waiter
  }

  /// Asks the helper to kill request `id`'s child.
  func kill(id: UInt64) {
    let bytes = SandboxWire.encode(.kill(id: id))
    _ = bytes.withUnsafeBytes { SandboxShims_sendWithDescriptors(socket, $0.baseAddress, $0.count, nil, 0) }
  }

  /// Takes no new request; the helper is let go once its last child has ended.
  func retire() {
    let idle = state.withLock { state -> Bool in
      state.retiring = true
      return state.pending.isEmpty
    }
    if idle { shutdown(socket, Int32(SHUT_RDWR)) }
  }

  /// Kills the helper (and with it every child).
  func terminate() {
    Glibc.kill(pid, SIGKILL)
    shutdown(socket, Int32(SHUT_RDWR))
  }

  private func readReplies() {
    var reason = "its socket closed"
    var buffer = [UInt8](repeating: 0, count: SandboxWire.maximumMessage)
    loop: while true {
      var none: Int32 = 0
      let got = buffer.withUnsafeMutableBytes {
        SandboxShims_receiveWithDescriptors(socket, $0.baseAddress, $0.count, nil, 0, &none)
      }
      if got <= 0 {
        if got < 0 { reason = "recvmsg: " + String(cString: strerror(errno)) }
        break
      }
      let reply: SandboxWire.Reply
      do {
        reply = try SandboxWire.decodeReply(Array(buffer.prefix(got)))
      } catch {
        reason = "\(error)"
        Glibc.kill(pid, SIGKILL)
        break
      }
      switch reply {
      case .ready(let layers):
        state.withLock { $0.layers = layers }
        readySignal.signal()
      case .finished(let id, let exit):
        let (waiter, letGo) = state.withLock { state -> (Waiter?, Bool) in
          let waiter = state.pending.removeValue(forKey: id)
          return (waiter, state.retiring && state.pending.isEmpty)
        }
        waiter?.finish(.success(exit))
        if letGo { break loop }
      }
    }
    let waiting = state.withLock { state -> [Waiter] in
      state.gone = true
      defer { state.pending = [:] }
      return Array(state.pending.values)
    }
    readySignal.signal()
    for waiter in waiting { waiter.finish(.failure(.unavailable("the sandbox helper ended: \(reason)"))) }
    close(socket)
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    onGone(self, reason)
  }
}
