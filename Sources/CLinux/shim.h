#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
// Linux-only APIs the Swift Glibc module does not export (epoll, eventfd, sendfile, mallopt,
// MADV_HUGEPAGE).
#include <malloc.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>

// accept4 is declared only under _GNU_SOURCE, which the Glibc module is not built with.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
static inline int CLinux_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
  return accept4(fd, addr, len, flags);
}

// The end of the main arena's heap (sbrk(0)); sbrk is declared only under _DEFAULT_SOURCE.
extern void *sbrk(intptr_t increment);
static inline void *CLinux_heapEnd(void) { return sbrk(0); }

// MADV_HUGEPAGE is a Linux extension <sys/mman.h> declares only under _GNU_SOURCE/_DEFAULT_SOURCE.
static inline int CLinux_madviseHugePages(void *start, size_t length) {
#ifdef MADV_HUGEPAGE
  return madvise(start, length, MADV_HUGEPAGE);
#else
  return madvise(start, length, 14);
#endif
}
#endif
