// Frames of an uploaded movie, decoded by libavformat + libavcodec over the bytes in memory, for
// the decode sandbox's children only (no protocol, no file: the demuxer reads the input mapping
// through our own I/O context and may open nothing else).
//
// A C target because the FFmpeg structures it reads (AVFormatContext's callbacks, AVFrame's
// planes, the filter graph) are C all the way; Swift (VideoPipeline) sees only the types below.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct VideoFramesSource VideoFramesSource;

// What the caller wants of the frames it asks for.
typedef struct {
  // The stream (track) to decode, as the container lists it.
  int stream;
  // The transfer function the container declares (H.273: 16 PQ, 18 HLG, else SDR), used when
  // the coded stream says nothing: HDR frames are tone-mapped to SDR BT.709.
  int declared_transfer;
  // The size frames are scaled to (stored orientation) when they go through the filter (HDR, or
  // not 8-bit 4:2:0/4:2:2/4:4:4); 0 keeps the coded size. 8-bit frames are handed over as
  // decoded, for the still pipeline's own resampler.
  int target_width, target_height;
  // 1 when `data` is a read-only mapping of a file or memory file (never anonymous memory): the
  // pages the demuxer has read past are then given back as it goes (the file keeps the bytes), so
  // reading a 400 MB movie through does not make the process 400 MB larger.
  int release_read_input;
} VideoFramesOptions;

// One decoded frame, 8-bit Y'CbCr planes, valid until the next call on its source.
typedef struct {
  int width, height;
  // Luma samples per chroma sample, across and down (1 or 2).
  int chroma_shift_x, chroma_shift_y;
  const uint8_t *planes[3];
  int strides[3];
  // H.273 matrix (1 BT.709, 5/6 BT.601, 9 BT.2020) and 1 for full range.
  int matrix, full_range;
  // H.273 chroma location (0 left, 1 centre, 2 top-left …), -1 unknown.
  int chroma_location;
  // Presentation time in microseconds.
  int64_t time_us;
  // 1 when the frame went through the HDR tone map.
  int tone_mapped;
} VideoFramesPicture;

// Opens `size` bytes at `data` (which must outlive the source). Returns 0, or a negative FFmpeg
// error with `error` saying what failed. The format must be one of QuickTime/MP4's family and the
// stream's codec HEVC, H.264, VP9, VP8 or AV1.
int VideoFrames_open(const uint8_t *data, size_t size, VideoFramesOptions options,
                     VideoFramesSource **source, char *error, size_t error_size);

// Decodes the frame shown at `time_us` (the first whose time is at or after it, or a keyframe
// within `tolerance_us` before it; the last frame when the stream ends first) into `picture`.
int VideoFrames_frameAt(VideoFramesSource *source, int64_t time_us, int64_t tolerance_us,
                        VideoFramesPicture *picture, char *error, size_t error_size);

void VideoFrames_close(VideoFramesSource *source);

// Opens libavformat/libavfilter (and libavcodec) ahead of use: NULL, or why they could not be.
const char *VideoFrames_preload(void);

// The MP4 rendition (its own header, part of this module).
#include "VideoRendition.h"
