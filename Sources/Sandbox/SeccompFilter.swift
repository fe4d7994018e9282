import Glibc
import SandboxShims

/// A seccomp-BPF program built from rules, one per system call: allow it, allow it when an
/// argument passes a check, or fail it with an errno. Anything without a rule kills the whole
/// process (`SECCOMP_RET_KILL_PROCESS`: the parent sees SIGSYS), as does a call from another
/// architecture's ABI (x32 included).
///
/// The program is a chain of blocks, one per rule: compare the call number, on a match run the
/// rule's check and return; else fall through to the next block. Argument checks look at the low
/// 32 bits of an argument (descriptors, flags and protections are 32-bit).
struct SeccompFilter: Sendable {
  /// What a rule does with a call.
  enum Action: Sendable, Equatable {
    case allow
    /// Allowed when argument `index` has none of the bits of `mask` set.
    case allowWithoutBits(argument: Int, mask: UInt32)
    /// Allowed when argument `index` has every bit of `mask` set.
    case allowWithBits(argument: Int, mask: UInt32)
    /// Allowed when argument `index` (low 32 bits) is one of `values`.
    case allowIfOneOf(argument: Int, values: [UInt32])
    /// Allowed when argument `index` is zero (all 64 bits: a null pointer).
    case allowIfNull(argument: Int)
    /// Fails with `errno` instead of running (a probe the libraries survive).
    case fail(errno: Int32)
    /// Fails with `errno` when argument `index` (low 32 bits) is one of `values`; kills otherwise
    /// (a probe of one known shape the libraries survive; any other use is a violation).
    case failIfOneOf(argument: Int, values: [UInt32], errno: Int32)
  }

  struct Rule: Sendable, Equatable {
    var call: Int32
    var action: Action
  }

  private(set) var rules: [Rule] = []

  mutating func add(_ call: Int32, _ action: Action = .allow) {
    precondition(!rules.contains { $0.call == call }, "one rule per system call (\(call))")
    rules.append(Rule(call: call, action: action))
  }

  // seccomp_data: nr at 0, arch at 4, instruction pointer at 8, args at 16 + 8·i.
  private static let numberOffset: UInt32 = 0
  private static let archOffset: UInt32 = 4
  private static func argumentLow(_ index: Int) -> UInt32 { 16 + 8 * UInt32(index) }
  private static func argumentHigh(_ index: Int) -> UInt32 { 20 + 8 * UInt32(index) }

  static let retAllow: UInt32 = 0x7fff_0000  // SECCOMP_RET_ALLOW
  static let retKillProcess: UInt32 = 0x8000_0000  // SECCOMP_RET_KILL_PROCESS
  static let retErrno: UInt32 = 0x0005_0000  // SECCOMP_RET_ERRNO

  // BPF opcodes (linux/bpf_common.h).
  private static let loadWord: UInt16 = 0x20  // BPF_LD | BPF_W | BPF_ABS
  private static let jumpEqual: UInt16 = 0x15  // BPF_JMP | BPF_JEQ | BPF_K
  private static let jumpSet: UInt16 = 0x45  // BPF_JMP | BPF_JSET | BPF_K
  private static let ret: UInt16 = 0x06  // BPF_RET | BPF_K

  private static func statement(_ code: UInt16, _ k: UInt32) -> SandboxFilterInstruction {
    SandboxFilterInstruction(code: code, jt: 0, jf: 0, k: k)
  }

  private static func jump(_ code: UInt16, _ k: UInt32, _ whenTrue: Int, _ whenFalse: Int)
    -> SandboxFilterInstruction
  {
    SandboxFilterInstruction(code: code, jt: UInt8(whenTrue), jf: UInt8(whenFalse), k: k)
  }

  /// The instructions: architecture check, the x32 ABI refused, one block per rule, kill.
  func program() -> [SandboxFilterInstruction] {
    var out: [SandboxFilterInstruction] = [
      Self.statement(Self.loadWord, Self.archOffset),
      Self.jump(Self.jumpEqual, SandboxShims_auditArch(), 1, 0),
      Self.statement(Self.ret, Self.retKillProcess),
      Self.statement(Self.loadWord, Self.numberOffset),
    ]
    #if arch(x86_64)
      // x32 calls have bit 30 set in their number: another ABI, refused.
      out += [Self.jump(Self.jumpSet, 0x4000_0000, 0, 1), Self.statement(Self.ret, Self.retKillProcess)]
    #endif
    for rule in rules {
      let body = Self.block(rule.action)
      precondition(body.count < 255, "a rule's block is too long for a BPF jump")
      out.append(Self.jump(Self.jumpEqual, UInt32(bitPattern: rule.call), 0, body.count))
      out += body
    }
    out.append(Self.statement(Self.ret, Self.retKillProcess))
    return out
  }

  /// A rule's instructions after its call number matched; each path returns.
  private static func block(_ action: Action) -> [SandboxFilterInstruction] {
    let allow = statement(ret, retAllow)
    let kill = statement(ret, retKillProcess)
    switch action {
    case .allow:
      return [allow]
    case .fail(let errno):
      return [statement(ret, retErrno | (UInt32(errno) & 0xffff))]
    case .allowWithoutBits(let argument, let mask):
      return [statement(loadWord, argumentLow(argument)), jump(jumpSet, mask, 0, 1), kill, allow]
    case .allowWithBits(let argument, let mask):
      // Every bit set: (arg & mask) == mask, checked bit group by bit group with JSET on each bit.
      var out = [statement(loadWord, argumentLow(argument))]
      for bit in 0..<32 where mask & (1 << bit) != 0 {
        out += [jump(jumpSet, 1 << bit, 1, 0), kill]
      }
      return out + [allow]
    case .allowIfOneOf(let argument, let values):
      return oneOf(argument: argument, values: values, then: allow, otherwise: kill)
    case .failIfOneOf(let argument, let values, let errno):
      let fail = statement(ret, retErrno | (UInt32(errno) & 0xffff))
      return oneOf(argument: argument, values: values, then: fail, otherwise: kill)
    case .allowIfNull(let argument):
      return [
        statement(loadWord, argumentLow(argument)), jump(jumpEqual, 0, 0, 2),
        statement(loadWord, argumentHigh(argument)), jump(jumpEqual, 0, 1, 0), kill, allow,
      ]
    }
  }

  /// `then` when argument `argument` is one of `values`, else `otherwise`.
  private static func oneOf(
    argument: Int, values: [UInt32], then: SandboxFilterInstruction, otherwise: SandboxFilterInstruction
  ) -> [SandboxFilterInstruction] {
    var out = [statement(loadWord, argumentLow(argument))]
    for (index, value) in values.enumerated() {
      // On a match jump to `then` at the end (past the remaining compares and `otherwise`).
      out.append(jump(jumpEqual, value, values.count - index, 0))
    }
    return out + [otherwise, then]
  }

  /// Installs the program on the calling thread (and what it starts later). No-new-privileges
  /// must be set first.
  func install() throws(SandboxError) {
    let instructions = program()
    let result = instructions.withUnsafeBufferPointer {
      SandboxShims_installFilter($0.baseAddress, UInt16($0.count))
    }
    if result != 0 { throw SandboxError.system("seccomp", errno) }
  }
}
