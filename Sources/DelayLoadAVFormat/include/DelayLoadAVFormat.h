// libavformat and libavfilter (FFmpeg's demuxers for video uploads, and zscale/tonemap for HDR
// stills), loaded when the first video is opened rather than when attachd starts; the
// mechanism is DelayLoad's (Sources/DelayLoad). Only the decode sandbox's children call them.
#pragma once
#include <libavcodec/avcodec.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>

// Opens libavformat.so.59 and libavfilter.so.8 (with their dependencies) on the first call:
// NULL when both are loaded, else why not, a string that lives as long as the process.
const char *DelayLoad_avformat(void);
