#include <zlib.h>

// inflateInit2 is a macro (it passes ZLIB_VERSION and sizeof(z_stream)); Swift cannot import
// macros with arguments, so this wrapper exists.
static inline int CZlib_inflateInit2(z_streamp strm, int windowBits) {
  return inflateInit2(strm, windowBits);
}
