// The floor under "every decode in a fresh process" (docs/benchmarks.md, Sandbox cost): a parent
// holding PARENT MiB, as the sandbox helper does, forks a child that touches TOUCH MiB of fresh
// anonymous memory, page by page, and exits; printed is the CPU per child (the fork in the
// parent, the child's faults and page zeroing, its exit's teardown), with 4 KiB pages and with
// transparent huge pages asked for (madvise).
//
// Usage: forkfloor PARENT_MIB TOUCH_MIB RUNS [thp]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static double cpuMilliseconds(int who) {
  struct rusage usage;
  getrusage(who, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: forkfloor PARENT_MIB TOUCH_MIB RUNS [thp]\n");
    return 2;
  }
  size_t parent = (size_t)atoi(argv[1]) << 20, touch = (size_t)atoi(argv[2]) << 20;
  int runs = atoi(argv[3]), hugePages = argc > 4;
  char *held = malloc(parent);
  if (held == NULL) return 1;
  memset(held, 1, parent);
  double self = cpuMilliseconds(RUSAGE_SELF), children = cpuMilliseconds(RUSAGE_CHILDREN);
  for (int i = 0; i < runs; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      if (touch > 0) {
        char *memory = mmap(NULL, touch, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED) _exit(1);
        if (hugePages) madvise(memory, touch, MADV_HUGEPAGE);
        for (size_t offset = 0; offset < touch; offset += 4096) memory[offset] = 1;
      }
      _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
  }
  self = cpuMilliseconds(RUSAGE_SELF) - self;
  children = cpuMilliseconds(RUSAGE_CHILDREN) - children;
  printf("FLOOR parent_mib=%d touch_mib=%d pages=%s cpu_ms=%.2f\n", atoi(argv[1]), atoi(argv[2]),
         hugePages ? "thp" : "4k", (self + children) / runs);
  return 0;
}
