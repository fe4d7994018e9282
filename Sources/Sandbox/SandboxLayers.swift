/// Which isolation layers the helper (and so every decoding child) runs under. Seccomp, the
/// rlimits and a uid other than 0 are mandatory: a helper that cannot set them up never says
/// it is ready. Namespaces and Landlock are used where the kernel or container runtime allows.
public struct SandboxLayers: Sendable, Equatable, CustomStringConvertible {
  /// The helper's uid and gid after dropping privileges (65534 when started as root).
  public var uid: UInt32 = 0
  public var gid: UInt32 = 0
  /// Whether the helper was started as root and gave that up.
  public var droppedRoot = false
  /// New user, network, IPC, mount and PID namespaces.
  public var userNamespace = false
  public var networkNamespace = false
  public var ipcNamespace = false
  public var mountNamespace = false
  public var pidNamespace = false
  /// The Landlock ABI in force (no filesystem access at all), 0 when none.
  public var landlockABI = 0
  /// Why an optional layer is off (`userns: Operation not permitted`, …).
  public var notes: [String] = []

  public init() {}

  public var description: String {
    var parts = ["seccomp: kill by default", "rlimits: address space, CPU, no files, no core", "uid \(uid)"]
    var namespaces: [String] = []
    if userNamespace { namespaces.append("user") }
    if networkNamespace { namespaces.append("net") }
    if ipcNamespace { namespaces.append("ipc") }
    if mountNamespace { namespaces.append("mnt") }
    if pidNamespace { namespaces.append("pid") }
    parts.append("namespaces: " + (namespaces.isEmpty ? "none" : namespaces.joined(separator: ",")))
    parts.append(landlockABI > 0 ? "landlock ABI \(landlockABI)" : "landlock: none")
    return parts.joined(separator: "; ")
  }

  func write(to out: inout WireWriter) {
    out.u32(uid)
    out.u32(gid)
    var flags: UInt32 = 0
    for (index, on) in [
      droppedRoot, userNamespace, networkNamespace, ipcNamespace, mountNamespace, pidNamespace,
    ].enumerated() where on {
      flags |= 1 << index
    }
    out.u32(flags)
    out.u32(UInt32(landlockABI))
    out.u32(UInt32(notes.count))
    for note in notes { out.string(note) }
  }

  init(from reader: inout WireReader) throws(SandboxError) {
    uid = try reader.u32()
    gid = try reader.u32()
    let flags = try reader.u32()
    droppedRoot = flags & 1 != 0
    userNamespace = flags & 2 != 0
    networkNamespace = flags & 4 != 0
    ipcNamespace = flags & 8 != 0
    mountNamespace = flags & 16 != 0
    pidNamespace = flags & 32 != 0
    landlockABI = Int(try reader.u32())
    let count = try reader.u32()
    guard count <= 16 else { throw .protocolViolation("too many notes") }
    for _ in 0..<count { notes.append(try reader.string()) }
  }
}

/// How one decoding child ended, as its helper saw it.
public struct SandboxExit: Sendable, Equatable {
  /// Its exit code, when it exited.
  public var code: Int32?
  /// The signal that ended it, when one did.
  public var signal: Int32?
  /// Its pid (in the helper's PID namespace, when it has one): no two jobs share one.
  public var pid: Int32 = 0
  /// Whether the helper killed it (its deadline passed, or its client left).
  public var killedByHelper = false
  /// CPU time it used, microseconds (user + system).
  public var cpuMicroseconds: UInt64 = 0
  /// Its peak resident memory, KiB.
  public var maxResidentKiB: UInt64 = 0
  /// From the helper receiving the request to the child running, nanoseconds.
  public var forkNanoseconds: UInt64 = 0
  /// From the child running to its end, nanoseconds.
  public var runNanoseconds: UInt64 = 0
  /// The end of what it wrote to its diagnostics pipe (the runtime's last words), at most
  /// `maximumDiagnostics` bytes. Written by untrusted code: for classification, never logged raw.
  public var diagnostics: [UInt8] = []

  static let maximumDiagnostics = 512

  public init() {}

  func write(to out: inout WireWriter) {
    out.byte(code == nil ? 0 : 1)
    out.u32(UInt32(bitPattern: code ?? 0))
    out.byte(signal == nil ? 0 : 1)
    out.u32(UInt32(bitPattern: signal ?? 0))
    out.u32(UInt32(bitPattern: pid))
    out.byte(killedByHelper ? 1 : 0)
    out.u64(cpuMicroseconds)
    out.u64(maxResidentKiB)
    out.u64(forkNanoseconds)
    out.u64(runNanoseconds)
    out.bytes(Array(diagnostics.suffix(Self.maximumDiagnostics)))
  }

  init(from reader: inout WireReader) throws(SandboxError) {
    let hasCode = try reader.byte() != 0
    let code = Int32(bitPattern: try reader.u32())
    self.code = hasCode ? code : nil
    let hasSignal = try reader.byte() != 0
    let signal = Int32(bitPattern: try reader.u32())
    self.signal = hasSignal ? signal : nil
    pid = Int32(bitPattern: try reader.u32())
    killedByHelper = try reader.byte() != 0
    cpuMicroseconds = try reader.u64()
    maxResidentKiB = try reader.u64()
    forkNanoseconds = try reader.u64()
    runNanoseconds = try reader.u64()
    diagnostics = try reader.bytes()
    guard diagnostics.count <= Self.maximumDiagnostics else {
      throw .protocolViolation("diagnostics too long")
    }
  }
}
