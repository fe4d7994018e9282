// One shared library opened once (dlopen, RTLD_NOW | RTLD_LOCAL) and its symbols resolved once
// each; the forwarder macros DelayLoad.c defines its functions with. Private to the target.
#pragma once
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *soname;
  int tried;  // under `openLock`: dlopen has been called (handle or error is set)
  void *handle;
  char error[256];
} Library;

static pthread_mutex_t openLock = PTHREAD_MUTEX_INITIALIZER;

// NULL when the library is open (opening it on the first call); else why not ("<soname> cannot
// be loaded: <dlerror>"), kept for the life of the process.
static const char *Library_open(Library *library) {
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

// `name` in the library, cached in `slot`. Storage opens the library before its first call, so
// a miss here is a bug: say which symbol and stop rather than call through a null pointer.
static void *Library_symbol(Library *library, const char *name, void **slot) {
  void *function = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (function) return function;
  if (!Library_open(library)) function = dlsym(library->handle, name);
  if (!function) {
    fprintf(stderr, "attachd: %s is not available from %s (%s)\n", name, library->soname,
            library->handle ? "no such symbol" : library->error);
    abort();
  }
  __atomic_store_n(slot, function, __ATOMIC_RELEASE);
  return function;
}

#define FORWARD(library, ret, name, params, args)                                \
  ret name params {                                                              \
    static void *slot;                                                           \
    return ((ret(*) params)Library_symbol(&library, #name, &slot)) args;         \
  }
#define FORWARD_VOID(library, name, params, args)                                \
  void name params {                                                             \
    static void *slot;                                                           \
    ((void(*) params)Library_symbol(&library, #name, &slot)) args;               \
  }
