#include "VideoFrames.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "VideoInput.h"

struct VideoFramesSource {
  VideoInput input;
  AVCodecContext *codec;
  AVPacket *packet;
  AVFrame *frame;
  AVFrame *filtered;
  // The latest frame decoded before the time asked for: shown when the stream ends first.
  AVFrame *last;
  AVFilterGraph *graph;
  AVFilterContext *buffer;
  AVFilterContext *sink;
  VideoFramesOptions options;
  AVRational time_base;
  int drained;
};

#define describe VideoInput_describe

// --- opening --------------------------------------------------------------------------------
const char *VideoFrames_preload(void) { return VideoInput_preload(); }

int VideoFrames_open(const uint8_t *data, size_t size, VideoFramesOptions options,
                     VideoFramesSource **out, char *error, size_t error_size) {
  *out = NULL;
  VideoFramesSource *s = calloc(1, sizeof *s);
  if (s == NULL) return AVERROR(ENOMEM);
  s->options = options;
  int code = VideoInput_open(&s->input, data, size, options.release_read_input, error, error_size);
  if (code < 0) {
    free(s);
    return code;
  }
  for (unsigned i = 0; i < s->input.format->nb_streams; i++) {
    if ((int)i != options.stream) s->input.format->streams[i]->discard = AVDISCARD_ALL;
  }
  code = VideoInput_openDecoder(&s->input, options.stream, &s->codec, error, error_size);
  if (code < 0) goto fail;
  if (s->codec->codec_type != AVMEDIA_TYPE_VIDEO) {
    snprintf(error, error_size, "stream %d is not video", options.stream);
    code = AVERROR_DECODER_NOT_FOUND;
    goto fail;
  }
  s->time_base = s->input.format->streams[options.stream]->time_base;
  s->packet = av_packet_alloc();
  s->frame = av_frame_alloc();
  s->filtered = av_frame_alloc();
  s->last = av_frame_alloc();
  if (s->packet == NULL || s->frame == NULL || s->filtered == NULL || s->last == NULL) {
    code = AVERROR(ENOMEM);
    goto fail;
  }
  *out = s;
  return 0;
fail:
  VideoFrames_close(s);
  return code;
}

void VideoFrames_close(VideoFramesSource *s) {
  if (s == NULL) return;
  avfilter_graph_free(&s->graph);
  av_frame_free(&s->last);
  av_frame_free(&s->filtered);
  av_frame_free(&s->frame);
  av_packet_free(&s->packet);
  avcodec_free_context(&s->codec);
  VideoInput_close(&s->input);
  free(s);
}

// --- frames out --------------------------------------------------------------------------------
static int64_t toMicroseconds(VideoFramesSource *s, int64_t timestamp) {
  return (int64_t)((double)timestamp * 1e6 * s->time_base.num / s->time_base.den);
}

static int64_t fromMicroseconds(VideoFramesSource *s, int64_t microseconds) {
  return (int64_t)((double)microseconds / 1e6 * s->time_base.den / s->time_base.num);
}

static int transferOf(VideoFramesSource *s, const AVFrame *frame) {
  return VideoInput_transfer(frame, s->options.declared_transfer);
}

static int isPlainYUV(int format) {
  return format == AV_PIX_FMT_YUV420P || format == AV_PIX_FMT_YUVJ420P ||
         format == AV_PIX_FMT_YUV422P || format == AV_PIX_FMT_YUVJ422P ||
         format == AV_PIX_FMT_YUV444P || format == AV_PIX_FMT_YUVJ444P;
}

// The graph a frame goes through when it is not plain 8-bit Y'CbCr: HDR (HLG, PQ) is scaled and
// tone-mapped into BT.709 (VideoInput_toneMapFilters); other formats (10-bit SDR, 4:2:0 with
// alpha …) are only scaled and made 8-bit 4:2:0.
static int buildGraph(VideoFramesSource *s, const AVFrame *frame, char *error, size_t error_size) {
  char source[256];
  snprintf(source, sizeof source, "video_size=%dx%d:pix_fmt=%d:time_base=%d/%d:pixel_aspect=1/1",
           frame->width, frame->height, frame->format, s->time_base.num, s->time_base.den);
  int width = s->options.target_width > 0 ? s->options.target_width : frame->width;
  int height = s->options.target_height > 0 ? s->options.target_height : frame->height;
  char description[512];
  int transfer = transferOf(s, frame);
  if (VideoInput_isHDR(transfer)) {
    VideoInput_toneMapFilters(description, sizeof description, width, height, transfer);
  } else {
    snprintf(description, sizeof description, "scale=w=%d:h=%d:flags=lanczos,format=yuv420p", width,
             height);
  }
  s->graph = avfilter_graph_alloc();
  AVFilterInOut *inputs = avfilter_inout_alloc();
  AVFilterInOut *outputs = avfilter_inout_alloc();
  int code = AVERROR(ENOMEM);
  if (s->graph == NULL || inputs == NULL || outputs == NULL) goto done;
  // One thread: the graph runs in the sandbox's child, a frame at a time.
  s->graph->nb_threads = 1;
  code = avfilter_graph_create_filter(&s->buffer, avfilter_get_by_name("buffer"), "in", source,
                                      NULL, s->graph);
  if (code < 0) goto done;
  code = avfilter_graph_create_filter(&s->sink, avfilter_get_by_name("buffersink"), "out", NULL,
                                      NULL, s->graph);
  if (code < 0) goto done;
  outputs->name = av_strdup("in");
  outputs->filter_ctx = s->buffer;
  outputs->pad_idx = 0;
  outputs->next = NULL;
  inputs->name = av_strdup("out");
  inputs->filter_ctx = s->sink;
  inputs->pad_idx = 0;
  inputs->next = NULL;
  code = avfilter_graph_parse_ptr(s->graph, description, &inputs, &outputs, NULL);
  if (code < 0) goto done;
  code = avfilter_graph_config(s->graph, NULL);
done:
  avfilter_inout_free(&inputs);
  avfilter_inout_free(&outputs);
  if (code < 0) {
    describe(code, "the frame filter cannot be built", error, error_size);
    avfilter_graph_free(&s->graph);
  }
  return code;
}

static void fill(VideoFramesPicture *picture, const AVFrame *frame, int64_t time_us, int toneMapped) {
  memset(picture, 0, sizeof *picture);
  picture->width = frame->width;
  picture->height = frame->height;
  int format = frame->format;
  picture->chroma_shift_x = format == AV_PIX_FMT_YUV444P || format == AV_PIX_FMT_YUVJ444P ? 0 : 1;
  picture->chroma_shift_y = format == AV_PIX_FMT_YUV420P || format == AV_PIX_FMT_YUVJ420P ? 1 : 0;
  for (int i = 0; i < 3; i++) {
    picture->planes[i] = frame->data[i];
    picture->strides[i] = frame->linesize[i];
  }
  if (toneMapped) {
    picture->matrix = 1;
  } else {
    switch (frame->colorspace) {
      case AVCOL_SPC_BT709: picture->matrix = 1; break;
      case AVCOL_SPC_BT470BG: case AVCOL_SPC_SMPTE170M: picture->matrix = 6; break;
      case AVCOL_SPC_BT2020_NCL: picture->matrix = 9; break;
      // Unspecified: what players assume, BT.709 for HD and larger, BT.601 below.
      default: picture->matrix = frame->height >= 720 ? 1 : 6; break;
    }
  }
  picture->full_range = frame->color_range == AVCOL_RANGE_JPEG || format == AV_PIX_FMT_YUVJ420P ||
                        format == AV_PIX_FMT_YUVJ422P || format == AV_PIX_FMT_YUVJ444P;
  picture->chroma_location =
      frame->chroma_location == AVCHROMA_LOC_UNSPECIFIED ? -1 : (int)frame->chroma_location - 1;
  picture->time_us = time_us;
  picture->tone_mapped = toneMapped;
}

static int deliver(VideoFramesSource *s, int64_t time_us, VideoFramesPicture *picture, char *error,
                   size_t error_size) {
  AVFrame *frame = s->frame;
  int hdr = VideoInput_isHDR(transferOf(s, frame));
  if (!hdr && isPlainYUV(frame->format)) {
    fill(picture, frame, time_us, 0);
    return 0;
  }
  if (s->graph == NULL) {
    int code = buildGraph(s, frame, error, error_size);
    if (code < 0) return code;
  }
  av_frame_unref(s->filtered);
  int code = av_buffersrc_add_frame_flags(s->buffer, frame, AV_BUFFERSRC_FLAG_KEEP_REF);
  if (code >= 0) code = av_buffersink_get_frame(s->sink, s->filtered);
  if (code < 0) {
    describe(code, "the frame cannot be converted", error, error_size);
    return code;
  }
  fill(picture, s->filtered, time_us, hdr);
  return 0;
}

// The keyframe nearest `time_us` within `tolerance_us` either side, by the stream's index
// (QuickTime/MP4 list every sample; Matroska's cues may be sparse or not read yet): its timestamp
// in the stream's time base, or AV_NOPTS_VALUE when there is none. The keyframe after the time
// counts as well as the one before: with a keyframe a second and stills 1.25 s apart, half the
// stills would otherwise decode a run of frames from the keyframe before.
static int64_t nearestKeyframe(VideoFramesSource *s, int64_t time_us, int64_t tolerance_us) {
  if (tolerance_us <= 0) return AV_NOPTS_VALUE;
  AVStream *stream = s->input.format->streams[s->options.stream];
  int count = avformat_index_get_entries_count(stream);
  int64_t best = AV_NOPTS_VALUE, bestDistance = INT64_MAX;
  for (int i = 0; i < count; i++) {
    const AVIndexEntry *entry = avformat_index_get_entry(stream, i);
    if (entry == NULL || !(entry->flags & AVINDEX_KEYFRAME)) continue;
    int64_t distance = llabs(toMicroseconds(s, entry->timestamp) - time_us);
    if (distance <= tolerance_us && distance < bestDistance) {
      best = entry->timestamp;
      bestDistance = distance;
    }
  }
  return best;
}

int VideoFrames_frameAt(VideoFramesSource *s, int64_t time_us, int64_t tolerance_us,
                        VideoFramesPicture *picture, char *error, size_t error_size) {
  int stream = s->options.stream;
  // When a keyframe is close enough to the time, it is the frame delivered: decode
  // it alone (other frames skipped, the decoder drained at once) instead of filling the decoder
  // with the frames after it that it would hold back for reordering — for a 4K HEVC movie that
  // is a few frames of 25 MB each, and their decoding, per still.
  // (Decided on the first packet read after the seek: the keyframe the demuxer went back to, and
  // its presentation time.)
  int firstPacket = 1;
  s->codec->skip_frame = AVDISCARD_DEFAULT;
  // To the nearest keyframe within the tolerance; else back to the keyframe at or before the
  // time, then forward to the frame shown then.
  // (An index entry's timestamp is its decode time; QuickTime's demuxer seeking backwards
  // looks for a keyframe shown at or before it, which is the keyframe before when frames are
  // reordered, so a chosen keyframe is sought forwards: the first at or after its own entry.)
  int64_t keyframe = nearestKeyframe(s, time_us, tolerance_us);
  int seeked = keyframe != AV_NOPTS_VALUE
                   ? av_seek_frame(s->input.format, stream, keyframe, 0)
                   : av_seek_frame(s->input.format, stream, fromMicroseconds(s, time_us), AVSEEK_FLAG_BACKWARD);
  if (seeked >= 0) {
    avcodec_flush_buffers(s->codec);
    s->drained = 0;
  }
  av_frame_unref(s->last);
  for (;;) {
    int code = s->drained ? AVERROR_EOF : av_read_frame(s->input.format, s->packet);
    if (code == AVERROR_EOF) {
      if (!s->drained) {
        avcodec_send_packet(s->codec, NULL);
        s->drained = 1;
      }
    } else if (code < 0) {
      describe(code, "the container cannot be read", error, error_size);
      return code;
    } else if (s->packet->stream_index != stream) {
      av_packet_unref(s->packet);
      continue;
    } else {
      int keyOnly = 0;
      if (firstPacket) {
        firstPacket = 0;
        keyOnly = (s->packet->flags & AV_PKT_FLAG_KEY) && s->packet->pts != AV_NOPTS_VALUE &&
                  toMicroseconds(s, s->packet->pts) >= time_us - tolerance_us;
        if (keyOnly) s->codec->skip_frame = AVDISCARD_NONKEY;
      }
      code = avcodec_send_packet(s->codec, s->packet);
      av_packet_unref(s->packet);
      if (code < 0 && code != AVERROR(EAGAIN)) {
        describe(code, "a frame cannot be decoded", error, error_size);
        return code;
      }
      if (keyOnly && code >= 0) {
        // The keyframe is in: drain, so it comes out now.
        avcodec_send_packet(s->codec, NULL);
        s->drained = 1;
      }
    }
    for (;;) {
      code = avcodec_receive_frame(s->codec, s->frame);
      if (code == AVERROR(EAGAIN)) break;
      if (code == AVERROR_EOF) {
        // The stream ended before the time: the last frame it showed.
        if (s->last->buf[0] == NULL) {
          snprintf(error, error_size, "no frame at or after %lld us", (long long)time_us);
          return AVERROR_EOF;
        }
        av_frame_move_ref(s->frame, s->last);
        int64_t timestamp = s->frame->best_effort_timestamp;
        return deliver(s, timestamp == AV_NOPTS_VALUE ? time_us : toMicroseconds(s, timestamp), picture,
                       error, error_size);
      }
      if (code < 0) {
        describe(code, "a frame cannot be decoded", error, error_size);
        return code;
      }
      int64_t timestamp = s->frame->best_effort_timestamp != AV_NOPTS_VALUE
                              ? s->frame->best_effort_timestamp
                              : s->frame->pts;
      int64_t frameTime = timestamp == AV_NOPTS_VALUE ? time_us : toMicroseconds(s, timestamp);
      if (frameTime >= time_us - tolerance_us) {
        return deliver(s, frameTime, picture, error, error_size);
      }
      av_frame_unref(s->last);
      av_frame_move_ref(s->last, s->frame);
    }
  }
}
