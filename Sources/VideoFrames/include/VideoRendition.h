// The MP4 rendition of an uploaded movie for providers that take video: H.264 High 8-bit 4:2:0
// SDR, upright pixels, bounded size and frame rate, AAC-LC stereo from the first decodable audio
// track. Made by libavformat/libavcodec/libavfilter over the bytes in memory, written into
// memory; for the decode sandbox's children only. The muxer's output is finished in Swift
// (moov first, muxer leftovers removed) and checked by MovieOutputCheck before it is stored.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct {
  // The video and audio streams (tracks) as the container lists them; audio -1 for none.
  int video_stream, audio_stream;
  // The transfer the container declares (16 PQ, 18 HLG, else SDR), as for the stills.
  int declared_transfer;
  // The upright output size (even sides) and the EXIF orientation (1…8) that makes the coded
  // picture upright.
  int width, height, orientation;
  // Output frames per second (constant): the source's rate capped, e.g. 30.
  int frame_rate;
  // x264's constant rate factor and preset.
  int crf;
  const char *preset;
  // Bytes the output may take at the most.
  size_t max_output_bytes;
  // As VideoFramesOptions' `release_read_input`.
  int release_read_input;
} VideoRenditionOptions;

// Makes the rendition; on success `*output` (free with VideoRendition_free) holds `*output_size`
// bytes of MP4 (moov last, as the muxer wrote it). Returns 0, or a negative FFmpeg error with
// `error` saying what failed.
int VideoRendition_make(const uint8_t *data, size_t size, VideoRenditionOptions options,
                        uint8_t **output, size_t *output_size, char *error, size_t error_size);

void VideoRendition_free(uint8_t *output);
