// libavcodec and libavutil (FFmpeg's HEVC decoder for HEIC tiles), loaded when the first HEVC
// decoder opens rather than when attachd starts; the mechanism is DelayLoad's
// (Sources/DelayLoad). AVCodec.c says what linking them would cost.
#pragma once
#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>

// Opens libavcodec.so.59 (with libavutil) on the first call: NULL when it is loaded, else why
// not ("<soname> cannot be loaded: <dlerror>"), a string that lives as long as the process.
const char *DelayLoad_avcodec(void);
