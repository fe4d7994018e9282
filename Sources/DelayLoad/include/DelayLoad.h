// The shared core of the delay-loaded libraries: one shared library opened once (dlopen,
// RTLD_NOW | RTLD_LOCAL) under one lock, and its symbols resolved once each. Each library has
// its own small target on top (DelayLoadCurl, DelayLoadPQ, DelayLoadAVCodec, DelayLoadHeif) that
// defines the functions its Swift module calls, each forwarding to the real one, so that Swift
// calls them by their own names and a module sees only the headers of the libraries it uses.
//
// Linked, each of these libraries would bring its dependencies into every process and run their
// start-up code (each library's header says what that costs), for configurations and inputs that
// never call it. A module asks `DelayLoad_<library>()` before its first call and turns a missing
// library into its own error (Storage: a configuration error; ImageCodecs: an internal codec
// error). A forwarder reached without a loaded library aborts (a bug, not input).
//
// Only the per-library targets' C files include this header; their Swift clients never see it.
#pragma once

typedef struct {
  const char *soname;
  int tried;  // under the open lock: dlopen has been called (handle or error is set)
  void *handle;
  char error[256];
} DelayLoadLibrary;

// NULL when the library is open (opening it on the first call); else why not ("<soname> cannot
// be loaded: <dlerror>"), kept for the life of the process.
const char *DelayLoadLibrary_open(DelayLoadLibrary *library);

// `name` in the library, cached in `slot`. Callers open the library before its first call, so a
// miss here is a bug: says which symbol and aborts rather than call through a null pointer.
void *DelayLoadLibrary_symbol(DelayLoadLibrary *library, const char *name, void **slot);

// Defines `name` as a function forwarding to the same-named function of `library`.
#define FORWARD(library, ret, name, params, args)                                 \
  ret name params {                                                               \
    static void *slot;                                                            \
    return ((ret(*) params)DelayLoadLibrary_symbol(&library, #name, &slot)) args; \
  }
#define FORWARD_VOID(library, name, params, args)                                 \
  void name params {                                                              \
    static void *slot;                                                            \
    ((void(*) params)DelayLoadLibrary_symbol(&library, #name, &slot)) args;       \
  }
