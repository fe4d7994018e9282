#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "DelayLoad.h"

// One lock for every library: opening is rare (once per library per process).
static pthread_mutex_t openLock = PTHREAD_MUTEX_INITIALIZER;

const char *DelayLoadLibrary_open(DelayLoadLibrary *library) {
  pthread_mutex_lock(&openLock);
  if (!library->tried) {
    library->handle = dlopen(library->soname, RTLD_NOW | RTLD_LOCAL);
    if (!library->handle) {
      const char *reason = dlerror();
      snprintf(library->error, sizeof library->error, "%s cannot be loaded: %s", library->soname,
               reason ? reason : "dlopen failed");
    }
    library->tried = 1;
  }
  int open = library->handle != NULL;
  pthread_mutex_unlock(&openLock);
  return open ? NULL : library->error;
}

void *DelayLoadLibrary_symbol(DelayLoadLibrary *library, const char *name, void **slot) {
  void *function = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (function) return function;
  if (!DelayLoadLibrary_open(library)) function = dlsym(library->handle, name);
  if (!function) {
    fprintf(stderr, "attachd: %s is not available from %s (%s)\n", name, library->soname,
            library->handle ? "no such symbol" : library->error);
    abort();
  }
  __atomic_store_n(slot, function, __ATOMIC_RELEASE);
  return function;
}
