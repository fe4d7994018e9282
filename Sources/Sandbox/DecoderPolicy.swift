import Glibc
import SandboxShims

/// The system calls a decoding child may make once it is locked down: memory, its own threads
/// (the codecs that use them), futexes, clocks, its own descriptors, and exit. Everything else
/// kills it. The list was made by running every corpus file and HEIF conformance file through
/// the pipeline under the filter; a call it lacks shows up as a violation in those tests.
enum DecoderPolicy {
  /// The filter for a child whose only descriptors are `descriptors` (input, output, the
  /// diagnostics pipe) and whose pid is `pid` (signals only to itself: `abort` raises SIGABRT).
  static func filter(descriptors: [Int32], pid: Int32) -> SeccompFilter {
    var filter = SeccompFilter()
    let own = descriptors.map { UInt32(bitPattern: $0) }
    // Reading and writing only what it was handed (it reads its input through a mapping, and
    // writes its output into one; the diagnostics pipe takes the runtime's crash messages).
    for call in [SYS_read, SYS_write, SYS_pread64, SYS_pwrite64, SYS_readv, SYS_writev, SYS_lseek, SYS_fstat]
    {
      filter.add(Int32(call), .allowIfOneOf(argument: 0, values: own))
    }
    filter.add(Int32(SYS_close))
    // fstat through newfstatat(fd, "", AT_EMPTY_PATH): never a path.
    filter.add(Int32(SYS_newfstatat), .allowWithBits(argument: 3, mask: UInt32(SANDBOX_AT_EMPTY_PATH)))
    // Memory: never executable (every library is loaded before the child starts).
    filter.add(Int32(SYS_mmap), .allowWithoutBits(argument: 2, mask: UInt32(PROT_EXEC)))
    filter.add(Int32(SYS_mprotect), .allowWithoutBits(argument: 2, mask: UInt32(PROT_EXEC)))
    for call in [SYS_munmap, SYS_brk, SYS_madvise, SYS_mremap] { filter.add(Int32(call)) }
    // Threads of the codecs that use them (dav1d, libde265): clone for threads only; clone3
    // fails so that glibc falls back to clone, whose flags the filter can see.
    filter.add(Int32(SYS_clone), .allowWithBits(argument: 0, mask: UInt32(SandboxShims_CLONE_THREAD)))
    filter.add(Int32(SYS_clone3), .fail(errno: ENOSYS))
    for call in [
      SYS_futex, SYS_set_robust_list, SYS_get_robust_list, SYS_rseq, SYS_set_tid_address, SYS_sched_yield,
      SYS_sched_getaffinity, SYS_exit, SYS_exit_group, SYS_gettid, SYS_getpid, SYS_rt_sigprocmask,
      SYS_rt_sigaction, SYS_rt_sigreturn, SYS_sigaltstack, SYS_restart_syscall, SYS_clock_gettime,
      SYS_clock_getres, SYS_gettimeofday, SYS_nanosleep, SYS_clock_nanosleep, SYS_getrandom, SYS_membarrier,
      SYS_sched_getparam, SYS_sched_getscheduler, SYS_getuid, SYS_geteuid, SYS_getgid, SYS_getegid,
    ] {
      filter.add(Int32(call))
    }
    // Thread names (PR_SET_NAME, PR_GET_NAME), nothing else of prctl.
    filter.add(
      Int32(SYS_prctl), .allowIfOneOf(argument: 0, values: [UInt32(PR_SET_NAME), UInt32(PR_GET_NAME)]))
    // Reading its own limits (pthread_create asks for the stack limit), never setting one.
    filter.add(Int32(SYS_prlimit64), .allowIfNull(argument: 2))
    // Signals to itself only (abort, a thread's own).
    filter.add(Int32(SYS_tgkill), .allowIfOneOf(argument: 0, values: [UInt32(bitPattern: pid)]))
    filter.add(Int32(SYS_kill), .allowIfOneOf(argument: 0, values: [UInt32(bitPattern: pid)]))
    // NUMA probes (libnuma through x265): no NUMA here.
    for call in [SYS_set_mempolicy, SYS_get_mempolicy, SYS_mbind] {
      filter.add(Int32(call), .fail(errno: ENOSYS))
    }
    // glibc's malloc opens /proc/sys/vm/overcommit_memory (read-only, close-on-exec) the first
    // time it shrinks a thread's heap, and takes a failure as "do not shrink, advise instead";
    // a decoder thread freeing a large buffer gets there (found by Scripts/fuzz-sandbox). The
    // child opens nothing: that one shape fails with EACCES, any other openat is a violation.
    filter.add(
      Int32(SYS_openat),
      .failIfOneOf(argument: 2, values: [UInt32(O_RDONLY | O_CLOEXEC)], errno: EACCES))
    return filter
  }
}
