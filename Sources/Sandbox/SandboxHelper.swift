import Glibc
import SandboxShims

/// The helper process: started once by the server (`Sandbox`) from this same executable, with
/// no environment but `LD_BIND_NOW=1` and only the descriptors it is handed (its socket at 3; /dev/null at 0
/// and 1; the server's standard error at 2). It prepares every job (loads the codec libraries),
/// drops root, enters new namespaces where it may, gives up all filesystem access (Landlock),
/// and then forks **one child per request**: the child locks itself down further (rlimits,
/// not dumpable, a seccomp filter that kills by default), runs the job over the input memory
/// file into the output memory file, and exits. A child never serves a second request.
///
/// The helper is single-threaded (it must be: it forks), and waits on its socket and on its
/// children's ends (a signalfd of SIGCHLD) with `poll`.
public enum SandboxHelper {
  /// Where the server puts the helper's socket.
  public static let socketDescriptor: Int32 = 3

  /// Runs the helper until its socket closes; never returns. `arguments` are the settings the
  /// server passed (`SandboxConfiguration.helperSettings`).
  public static func run(arguments: [String], jobs: [SandboxJob]) -> Never {
    guard let settings = HelperSettings(arguments) else { fatal("attachd sandbox helper: bad arguments") }
    _ = SandboxShims_closeFrom(socketDescriptor + 1)
    _ = SandboxShims_parentDeathSignal(SIGKILL)
    // Time zone data is read from /etc/localtime at the first local-time call (lcms2 stamps the
    // date of a profile it builds): the helper's clock is UTC, settled now, so no child opens it.
    setenv("TZ", "UTC", 1)
    tzset()
    for job in jobs { job.prepare() }
    var layers = SandboxLayers()
    do {
      try lockDown(settings, layers: &layers)
    } catch {
      fatal("attachd sandbox helper: \(error)")
    }
    // The first child in a new PID namespace is its init: the loop runs there, and this
    // process only waits for it (and dies with it).
    if layers.pidNamespace { becomeInit() }
    var loop = HelperLoop(settings: settings, jobs: Dictionary(jobs.map { ($0.name, $0) }) { a, _ in a })
    loop.send(.ready(layers))
    loop.run()
  }

  /// Drops root (mandatory when root), enters namespaces and Landlock (where allowed).
  static func lockDown(_ settings: HelperSettings, layers: inout SandboxLayers) throws(SandboxError) {
    if geteuid() == 0 || getuid() == 0 {
      let id = settings.unprivilegedID
      guard id != 0 else { throw .lockdownFailed("the unprivileged id is 0") }
      guard SandboxShims_becomeUser(id) == 0 else { throw .system("setresuid", errno) }
      layers.droppedRoot = true
    }
    guard getuid() != 0, geteuid() != 0 else { throw .lockdownFailed("still root") }
    layers.uid = getuid()
    layers.gid = getgid()
    // A user namespace first: inside it the helper may make the others, unprivileged.
    if SandboxShims_unshare(SandboxShims_CLONE_NEWUSER) == 0 {
      layers.userNamespace = true
    } else {
      layers.notes.append("user namespace: " + String(cString: strerror(errno)))
    }
    for (flag, name) in [
      (SandboxShims_CLONE_NEWNET, "network"), (SandboxShims_CLONE_NEWIPC, "ipc"),
      (SandboxShims_CLONE_NEWNS, "mount"), (SandboxShims_CLONE_NEWPID, "pid"),
    ] {
      if SandboxShims_unshare(flag) == 0 {
        switch name {
        case "network": layers.networkNamespace = true
        case "ipc": layers.ipcNamespace = true
        case "mount": layers.mountNamespace = true
        default: layers.pidNamespace = true
        }
      } else {
        layers.notes.append("\(name) namespace: " + String(cString: strerror(errno)))
      }
    }
    guard SandboxShims_noNewPrivileges() == 0 else { throw .system("prctl(PR_SET_NO_NEW_PRIVS)", errno) }
    let abi = SandboxShims_landlockABI()
    if abi > 0 {
      if SandboxShims_landlockDenyAll(abi) == 0 {
        layers.landlockABI = Int(abi)
      } else {
        layers.notes.append("landlock: " + String(cString: strerror(errno)))
      }
    } else {
      layers.notes.append("landlock: " + String(cString: strerror(errno)))
    }
    guard SandboxShims_notDumpable() == 0 else { throw .system("prctl(PR_SET_DUMPABLE)", errno) }
  }

  /// Forks the PID namespace's init, which returns and runs the loop; this process waits for
  /// it and exits with its status.
  private static func becomeInit() {
    let pid = SandboxShims_fork()
    if pid < 0 { fatal("attachd sandbox helper: fork: \(String(cString: strerror(errno)))") }
    if pid == 0 {
      _ = SandboxShims_parentDeathSignal(SIGKILL)
      return
    }
    _ = close(socketDescriptor)
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    var code: Int32 = 0
    var signal: Int32 = 0
    if SandboxShims_exited(status, &code) != 0 { SandboxShims_exit(code) }
    if SandboxShims_signaled(status, &signal) != 0 { SandboxShims_exit(128 + signal) }
    SandboxShims_exit(1)
  }

  static func fatal(_ message: String) -> Never {
    let line = message + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    SandboxShims_exit(70)
  }
}
