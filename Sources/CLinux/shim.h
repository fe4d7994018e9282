#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
// Linux-only APIs the Swift Glibc module does not export (epoll, eventfd, sendfile, mallopt).
#include <malloc.h>
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
#endif
