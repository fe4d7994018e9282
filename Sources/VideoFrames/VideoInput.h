// The input side shared by the stills and the rendition: the movie in memory behind our own I/O
// context, opened by libavformat's QuickTime/MP4 demuxer only, with nothing else it may open,
// and the decoders for its streams. Private to this target.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "DelayLoadAVCodec.h"
#include "DelayLoadAVFormat.h"

typedef struct {
  const uint8_t *data;
  size_t size;
  int64_t position;
  // Set when `data` maps a file: bytes below `released` have been given back to the kernel.
  int release_read;
  int64_t released;
  AVIOContext *io;
  AVFormatContext *format;
} VideoInput;

// Opens the demuxer over `data` (which must outlive the input). 0, or an FFmpeg error with
// `error` filled in; on failure the input is closed.
// `release_read`: `data` is a read-only mapping of a file, whose pages well behind the read position
// may be dropped from this process (a later read faults them in again from the file).
int VideoInput_open(VideoInput *input, const uint8_t *data, size_t size, int release_read, char *error,
                    size_t error_size);
void VideoInput_close(VideoInput *input);

// A decoder for `stream` (video: HEVC, H.264, VP9, AV1; audio: what FFmpeg decodes), one thread.
int VideoInput_openDecoder(VideoInput *input, int stream, AVCodecContext **decoder, char *error,
                           size_t error_size);

// Loads libavformat, libavfilter and libavcodec: NULL, or why not.
const char *VideoInput_preload(void);

// The transfer a decoded frame is in: its own when it says PQ or HLG, else the one the container
// declares (H.273: 16 PQ, 18 HLG; a stream often says nothing).
int VideoInput_transfer(const AVFrame *frame, int declared);
int VideoInput_isHDR(int transfer);

// The filters that make an HDR frame (PQ or HLG `transfer`) SDR BT.709 8-bit 4:2:0 at
// width × height, as filter-graph text into `out` (no trailing comma): scaled, linearised and
// brought to BT.709 primaries in one zscale (one float frame fewer than FFmpeg's documentation
// recipe, which converts the primaries in a zscale of its own: the same arithmetic on linear
// light), tone-mapped (Hable, as that recipe), back to BT.709's transfer and matrix.
void VideoInput_toneMapFilters(char *out, size_t size, int width, int height, int transfer);

// "what: FFmpeg's reason" into `error`.
void VideoInput_describe(int code, const char *what, char *error, size_t size);
