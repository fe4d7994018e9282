// libheif (for the HEIFs the fast path declines), loaded when the first libheif context is made
// rather than when attachd starts; the mechanism is DelayLoad's (Sources/DelayLoad). Heif.c says
// what linking it would cost.
#pragma once
#include <libheif/heif.h>

// Opens libheif.so.1 on the first call: NULL when it is loaded, else why not ("<soname> cannot
// be loaded: <dlerror>"), a string that lives as long as the process.
const char *DelayLoad_heif(void);
