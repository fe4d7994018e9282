// The Linux calls the decode sandbox makes that Swift cannot reach directly: variadic or
// macro-built ones (prctl, CMSG_* for passing descriptors, BPF program install), syscalls glibc
// 2.36 has no wrapper for (landlock_*, pidfd_*, close_range on old headers), and constants newer
// than Debian 12's kernel headers (Landlock ABI 4–6). Each returns -1 with errno set on failure,
// like the calls it wraps.
#ifndef ATTACHD_SANDBOX_SHIMS_H
#define ATTACHD_SANDBOX_SHIMS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/resource.h>
#include <linux/filter.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/// `AT_EMPTY_PATH` (fstat through newfstatat), which glibc shows only under _GNU_SOURCE.
#define SANDBOX_AT_EMPTY_PATH 0x1000

/// One BPF instruction (`struct sock_filter`), re-exported for Swift.
typedef struct sock_filter SandboxFilterInstruction;

// MARK: Descriptors over a Unix socket

/// Sends `length` bytes and `count` descriptors (SCM_RIGHTS) as one message.
ssize_t SandboxShims_sendWithDescriptors(int socket, const void *bytes, size_t length, const int *descriptors,
                                         int count);

/// Receives one message into `buffer` and up to `capacity` descriptors (close-on-exec) into
/// `descriptors`; `*received` is how many came. A message with more descriptors than
/// `capacity` has the extra ones closed and fails with EMSGSIZE.
ssize_t SandboxShims_receiveWithDescriptors(int socket, void *buffer, size_t length, int *descriptors,
                                            int capacity, int *received);

// MARK: Process lockdown

/// `prctl(PR_SET_NO_NEW_PRIVS, 1)`: no exec can ever gain privileges again (and seccomp may be
/// installed unprivileged).
int SandboxShims_noNewPrivileges(void);
/// `prctl(PR_SET_DUMPABLE, 0)`: no core dump, no ptrace attach by the same uid, /proc/<pid>
/// owned by root.
int SandboxShims_notDumpable(void);
/// `prctl(PR_SET_PDEATHSIG, signal)`: the process gets `signal` when its parent thread exits.
int SandboxShims_parentDeathSignal(int signal);
/// Installs a seccomp-BPF filter of `count` instructions (no_new_privs must be set).
int SandboxShims_installFilter(const SandboxFilterInstruction *instructions, unsigned short count);
/// The seccomp mode of the calling thread as /proc reports it (0, 1, 2), or -1.
int SandboxShims_seccompMode(void);
/// The AUDIT_ARCH value of the architecture the filter must check.
uint32_t SandboxShims_auditArch(void);

/// The Landlock ABI version the kernel offers, or -1 (errno says why: ENOSYS, EOPNOTSUPP).
int SandboxShims_landlockABI(void);
/// Restricts the calling thread (and its future children) with a Landlock ruleset that handles
/// every filesystem right the `abi` knows — and, from ABI 4, TCP bind/connect, from ABI 6
/// abstract Unix sockets and signals — and grants none.
int SandboxShims_landlockDenyAll(int abi);

/// `setgroups(0, NULL)`, `setresgid(id, id, id)`, `setresuid(id, id, id)` in that order.
int SandboxShims_becomeUser(uint32_t id);
/// `pipe2(ends, O_CLOEXEC | O_NONBLOCK)`.
int SandboxShims_pipe(int ends[2]);

/// `unshare(flags)`.
int SandboxShims_unshare(int flags);
/// The namespace flags, for Swift.
extern const int SandboxShims_CLONE_NEWUSER, SandboxShims_CLONE_NEWNET, SandboxShims_CLONE_NEWIPC,
    SandboxShims_CLONE_NEWNS, SandboxShims_CLONE_NEWPID, SandboxShims_CLONE_THREAD;

/// `setrlimit(resource, {soft, hard})`.
int SandboxShims_limit(int resource, uint64_t soft, uint64_t hard);
extern const int SandboxShims_RLIMIT_AS, SandboxShims_RLIMIT_CPU, SandboxShims_RLIMIT_FSIZE,
    SandboxShims_RLIMIT_CORE, SandboxShims_RLIMIT_NOFILE, SandboxShims_RLIMIT_NPROC;

/// Closes every descriptor from `first` on (close_range, or a loop where the kernel lacks it).
int SandboxShims_closeFrom(int first);

// MARK: Memory files and children

/// `memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)`.
int SandboxShims_memfd(const char *name);
/// Seals a memory file against every change: shrink, grow, write, and further seals.
int SandboxShims_sealAll(int fd);
/// The seals on `fd` (F_GET_SEALS), or -1.
int SandboxShims_seals(int fd);
/// Whether `fd`'s seals forbid writing, growing, shrinking and resealing.
int SandboxShims_isFullySealed(int fd);

/// Blocks SIGCHLD and returns a signalfd that becomes readable when a child ends (close-on-exec,
/// non-blocking); the children a fork makes start with SIGCHLD unblocked again only if they
/// unblock it (`SandboxShims_unblockChildSignal`).
int SandboxShims_childSignalFD(void);
/// Reads every pending notification from a signalfd made by `SandboxShims_childSignalFD`.
void SandboxShims_drainSignalFD(int fd);
/// Unblocks SIGCHLD (in a forked child, which inherits the mask).
void SandboxShims_unblockChildSignal(void);

/// `fork()`; the child resets no handler (the caller is single-threaded).
pid_t SandboxShims_fork(void);
/// `wait4(pid, &status, WNOHANG, &usage)`: 0 while it runs, the pid once it ended.
pid_t SandboxShims_reap(pid_t pid, int *status, struct rusage *usage);

/// Decoded wait status: exited with `*code`, or killed by `*signal`.
int SandboxShims_exited(int status, int *code);
int SandboxShims_signaled(int status, int *signal);

/// `_exit(code)`: ends the process without running atexit handlers or flushing stdio.
void SandboxShims_exit(int code) __attribute__((noreturn));

// MARK: The helper

/// Starts `path` with `argv` (NULL-terminated), an empty environment, /dev/null at 0 and 1, the
/// caller's standard error at 2, `socket` at 3 and no other descriptor; every signal at its
/// default action and none blocked. Returns 0 and the pid, or an errno value.
int SandboxShims_spawnHelper(const char *path, char *const argv[], int socket, pid_t *pid);

#endif
