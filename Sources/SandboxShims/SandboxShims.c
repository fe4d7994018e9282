#define _GNU_SOURCE
#include "SandboxShims.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// MARK: Descriptors over a Unix socket

#define SANDBOX_MAX_DESCRIPTORS 8

ssize_t SandboxShims_sendWithDescriptors(int socket, const void *bytes, size_t length, const int *descriptors,
                                         int count) {
  if (count < 0 || count > SANDBOX_MAX_DESCRIPTORS) {
    errno = EINVAL;
    return -1;
  }
  struct iovec iov = {.iov_base = (void *)bytes, .iov_len = length};
  union {
    char buffer[CMSG_SPACE(sizeof(int) * SANDBOX_MAX_DESCRIPTORS)];
    struct cmsghdr align;
  } control;
  memset(&control, 0, sizeof control);
  struct msghdr message = {.msg_iov = &iov, .msg_iovlen = 1};
  if (count > 0) {
    message.msg_control = control.buffer;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * count);
    memcpy(CMSG_DATA(header), descriptors, sizeof(int) * count);
  }
  ssize_t sent;
  do {
    sent = sendmsg(socket, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent;
}

ssize_t SandboxShims_receiveWithDescriptors(int socket, void *buffer, size_t length, int *descriptors,
                                            int capacity, int *received) {
  *received = 0;
  struct iovec iov = {.iov_base = buffer, .iov_len = length};
  union {
    char buffer[CMSG_SPACE(sizeof(int) * SANDBOX_MAX_DESCRIPTORS)];
    struct cmsghdr align;
  } control;
  struct msghdr message = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof control.buffer};
  ssize_t got;
  do {
    got = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return -1;
  int tooMany = (message.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) != 0;
  for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    int count = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    int *fds = (int *)CMSG_DATA(header);
    for (int i = 0; i < count; i++) {
      if (*received < capacity && !tooMany) {
        descriptors[(*received)++] = fds[i];
      } else {
        close(fds[i]);
        tooMany = 1;
      }
    }
  }
  if (tooMany) {
    for (int i = 0; i < *received; i++) close(descriptors[i]);
    *received = 0;
    errno = EMSGSIZE;
    return -1;
  }
  return got;
}

// MARK: Process lockdown

int SandboxShims_noNewPrivileges(void) { return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); }

int SandboxShims_notDumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

int SandboxShims_parentDeathSignal(int signal) { return prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0); }

int SandboxShims_installFilter(const SandboxFilterInstruction *instructions, unsigned short count) {
  struct sock_fprog program = {.len = count, .filter = (struct sock_filter *)instructions};
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program);
}

int SandboxShims_seccompMode(void) { return prctl(PR_GET_SECCOMP, 0, 0, 0, 0); }

uint32_t SandboxShims_auditArch(void) {
#if defined(__x86_64__)
  return AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  return AUDIT_ARCH_AARCH64;
#else
#error "the decode sandbox knows x86_64 and aarch64"
#endif
}

// Landlock: the syscalls and constants up to ABI 6, written out because Debian 12's headers stop
// at ABI 2 while the kernels it runs on may offer more.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_restrict_self 446
#endif
#define SANDBOX_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)

struct SandboxLandlockRuleset {
  uint64_t handledAccessFS;
  uint64_t handledAccessNet;
  uint64_t scoped;
};

int SandboxShims_landlockABI(void) {
  return (int)syscall(SYS_landlock_create_ruleset, NULL, 0, SANDBOX_LANDLOCK_CREATE_RULESET_VERSION);
}

int SandboxShims_landlockDenyAll(int abi) {
  if (abi < 1) {
    errno = EOPNOTSUPP;
    return -1;
  }
  // Filesystem rights: 13 in ABI 1, REFER in 2, TRUNCATE in 3, IOCTL_DEV in 5.
  uint64_t fs = (1ULL << 13) - 1;
  if (abi >= 2) fs |= 1ULL << 13;
  if (abi >= 3) fs |= 1ULL << 14;
  if (abi >= 5) fs |= 1ULL << 15;
  struct SandboxLandlockRuleset ruleset = {.handledAccessFS = fs};
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    ruleset.handledAccessNet = (1ULL << 0) | (1ULL << 1);  // bind, connect TCP
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    ruleset.scoped = (1ULL << 0) | (1ULL << 1);  // abstract Unix sockets, signals
    size = 3 * sizeof(uint64_t);
  }
  int fd = (int)syscall(SYS_landlock_create_ruleset, &ruleset, size, 0);
  if (fd < 0) return -1;
  int result = (int)syscall(SYS_landlock_restrict_self, fd, 0);
  int saved = errno;
  close(fd);
  errno = saved;
  return result;
}

int SandboxShims_unshare(int flags) { return unshare(flags); }

#include <grp.h>

int SandboxShims_becomeUser(uint32_t id) {
  if (setgroups(0, NULL) != 0) return -1;
  if (setresgid(id, id, id) != 0) return -1;
  return setresuid(id, id, id);
}

int SandboxShims_pipe(int ends[2]) { return pipe2(ends, O_CLOEXEC | O_NONBLOCK); }

const int SandboxShims_CLONE_NEWUSER = CLONE_NEWUSER, SandboxShims_CLONE_NEWNET = CLONE_NEWNET,
          SandboxShims_CLONE_NEWIPC = CLONE_NEWIPC, SandboxShims_CLONE_NEWNS = CLONE_NEWNS,
          SandboxShims_CLONE_NEWPID = CLONE_NEWPID, SandboxShims_CLONE_THREAD = CLONE_THREAD;

int SandboxShims_limit(int resource, uint64_t soft, uint64_t hard) {
  struct rlimit limit = {.rlim_cur = soft, .rlim_max = hard};
  return setrlimit(resource, &limit);
}

const int SandboxShims_RLIMIT_AS = RLIMIT_AS, SandboxShims_RLIMIT_CPU = RLIMIT_CPU,
          SandboxShims_RLIMIT_FSIZE = RLIMIT_FSIZE, SandboxShims_RLIMIT_CORE = RLIMIT_CORE,
          SandboxShims_RLIMIT_NOFILE = RLIMIT_NOFILE, SandboxShims_RLIMIT_NPROC = RLIMIT_NPROC;

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

int SandboxShims_closeFrom(int first) {
  if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0) return 0;
  long max = sysconf(_SC_OPEN_MAX);
  for (long fd = first; fd < max; fd++) close((int)fd);
  return 0;
}

// MARK: Memory files and children

int SandboxShims_memfd(const char *name) { return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING); }

int SandboxShims_sealAll(int fd) {
  return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
}

int SandboxShims_seals(int fd) { return fcntl(fd, F_GET_SEALS); }

int SandboxShims_isFullySealed(int fd) {
  int seals = fcntl(fd, F_GET_SEALS);
  int all = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
  return seals >= 0 && (seals & all) == all;
}

#include <sys/signalfd.h>

int SandboxShims_childSignalFD(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) return -1;
  return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

void SandboxShims_drainSignalFD(int fd) {
  struct signalfd_siginfo info;
  while (read(fd, &info, sizeof info) == (ssize_t)sizeof info) {
  }
}

void SandboxShims_unblockChildSignal(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
}

pid_t SandboxShims_fork(void) { return fork(); }

pid_t SandboxShims_reap(pid_t pid, int *status, struct rusage *usage) {
  pid_t result;
  do {
    result = wait4(pid, status, WNOHANG, usage);
  } while (result < 0 && errno == EINTR);
  return result;
}

int SandboxShims_exited(int status, int *code) {
  if (!WIFEXITED(status)) return 0;
  *code = WEXITSTATUS(status);
  return 1;
}

int SandboxShims_signaled(int status, int *signal) {
  if (!WIFSIGNALED(status)) return 0;
  *signal = WTERMSIG(status);
  return 1;
}

void SandboxShims_exit(int code) { _exit(code); }

// MARK: The helper

#include <spawn.h>

int SandboxShims_spawnHelper(const char *path, char *const argv[], int socket, pid_t *pid) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  int error = posix_spawn_file_actions_init(&actions);
  if (error) return error;
  error = posix_spawnattr_init(&attributes);
  if (error) {
    posix_spawn_file_actions_destroy(&actions);
    return error;
  }
  // The socket goes to 3 first (it may sit at 0 or 1 when those were closed), then 0 and 1
  // become /dev/null, then everything past 3 is closed.
  int staged = fcntl(socket, F_DUPFD_CLOEXEC, 100);
  if (staged < 0) {
    error = errno;
    goto done;
  }
  if ((error = posix_spawn_file_actions_adddup2(&actions, staged, 3))) goto done;
  if ((error = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0))) goto done;
  if ((error = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0))) goto done;
  if ((error = posix_spawn_file_actions_addclosefrom_np(&actions, 4))) goto done;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  // Nothing of the server's environment, but every symbol bound at load (and at each dlopen of a
  // codec library): the helper pays it once, and each child it forks inherits the bound tables
  // instead of resolving its first call to each library function again (lazy binding was ~1 %
  // of a 12 MP JPEG child's CPU in ld.so).
  char *const environment[] = {"LD_BIND_NOW=1", NULL};
  error = posix_spawn(pid, path, &actions, &attributes, argv, environment);
done:
  if (staged >= 0) close(staged);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  return error;
}
