#include "VideoRendition.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "VideoInput.h"

// --- output into memory ----------------------------------------------------------------------
typedef struct {
  uint8_t *bytes;
  size_t size, capacity, limit;
  int64_t position;
} MemoryOutput;

static int writeOutput(void *opaque, uint8_t *buffer, int size) {
  MemoryOutput *out = opaque;
  size_t end = (size_t)out->position + (size_t)size;
  if (end > out->limit) return AVERROR(ENOSPC);
  if (end > out->capacity) {
    size_t capacity = out->capacity ? out->capacity : 1 << 20;
    while (capacity < end) capacity *= 2;
    if (capacity > out->limit) capacity = out->limit;
    uint8_t *grown = realloc(out->bytes, capacity);
    if (grown == NULL) return AVERROR(ENOMEM);
    out->bytes = grown;
    out->capacity = capacity;
  }
  memcpy(out->bytes + out->position, buffer, (size_t)size);
  out->position = (int64_t)end;
  if (end > out->size) out->size = end;
  return size;
}

static int64_t seekOutput(void *opaque, int64_t offset, int whence) {
  MemoryOutput *out = opaque;
  if (whence & AVSEEK_SIZE) return (int64_t)out->size;
  int64_t base = (whence & ~AVSEEK_FORCE) == SEEK_CUR ? out->position
                 : (whence & ~AVSEEK_FORCE) == SEEK_END ? (int64_t)out->size
                                                         : 0;
  int64_t target = base + offset;
  if (target < 0 || (size_t)target > out->limit) return AVERROR(EINVAL);
  out->position = target;
  return target;
}

// --- the pieces of one rendition ---------------------------------------------------------------
typedef struct {
  AVCodecContext *decoder, *encoder;
  AVFilterGraph *graph;
  AVFilterContext *source, *sink;
  AVStream *stream;  // in the output
  int input_index;
} Lane;

typedef struct Rendition Rendition;
static int configureVideoGraph(Rendition *r, const AVFrame *frame);
static int configureAudioGraph(Rendition *r, const AVFrame *frame);

struct Rendition {
  VideoInput input;
  VideoRenditionOptions options;
  MemoryOutput memory;
  AVIOContext *io;
  AVFormatContext *output;
  Lane video, audio;
  // What is read from the input, and what the encoders give.
  AVPacket *packet, *encoded;
  AVFrame *frame, *filtered;
  char *error;
  size_t error_size;
};

static int fail(Rendition *r, int code, const char *what) {
  VideoInput_describe(code, what, r->error, r->error_size);
  return code;
}

// The filters that make the coded picture upright for an EXIF orientation.
static const char *uprightFilters(int orientation) {
  switch (orientation) {
    case 2: return "hflip,";
    case 3: return "hflip,vflip,";
    case 4: return "vflip,";
    case 5: return "transpose=cclock_flip,";
    case 6: return "transpose=clock,";
    case 7: return "transpose=clock_flip,";
    case 8: return "transpose=cclock,";
    default: return "";
  }
}

static int buildGraph(Lane *lane, const char *sourceName, const char *sourceArguments,
                      const char *sinkName, const char *description) {
  lane->graph = avfilter_graph_alloc();
  AVFilterInOut *inputs = avfilter_inout_alloc();
  AVFilterInOut *outputs = avfilter_inout_alloc();
  int code = AVERROR(ENOMEM);
  if (lane->graph == NULL || inputs == NULL || outputs == NULL) goto done;
  lane->graph->nb_threads = 1;
  code = avfilter_graph_create_filter(&lane->source, avfilter_get_by_name(sourceName), "in",
                                      sourceArguments, NULL, lane->graph);
  if (code < 0) goto done;
  code = avfilter_graph_create_filter(&lane->sink, avfilter_get_by_name(sinkName), "out", NULL,
                                      NULL, lane->graph);
  if (code < 0) goto done;
  outputs->name = av_strdup("in");
  outputs->filter_ctx = lane->source;
  inputs->name = av_strdup("out");
  inputs->filter_ctx = lane->sink;
  code = avfilter_graph_parse_ptr(lane->graph, description, &inputs, &outputs, NULL);
  if (code >= 0) code = avfilter_graph_config(lane->graph, NULL);
done:
  avfilter_inout_free(&inputs);
  avfilter_inout_free(&outputs);
  return code;
}

// The video filter, made from the first decoded frame (its format, size and colour are only
// certain then): scaled in stored orientation (HDR tone-mapped on the way), turned upright,
// constant frame rate.
static int configureVideoGraph(Rendition *r, const AVFrame *frame) {
  VideoRenditionOptions *o = &r->options;
  Lane *lane = &r->video;
  AVStream *in = r->input.format->streams[o->video_stream];
  int swaps = o->orientation >= 5;
  int storedWidth = swaps ? o->height : o->width, storedHeight = swaps ? o->width : o->height;
  char source[256];
  snprintf(source, sizeof source, "video_size=%dx%d:pix_fmt=%d:time_base=%d/%d:pixel_aspect=1/1",
           frame->width, frame->height, frame->format, in->time_base.num, in->time_base.den);
  int transfer = VideoInput_transfer(frame, o->declared_transfer);
  char scale[384];
  if (VideoInput_isHDR(transfer)) {
    VideoInput_toneMapFilters(scale, sizeof scale, storedWidth, storedHeight, transfer);
  } else {
    snprintf(scale, sizeof scale, "scale=w=%d:h=%d:flags=lanczos", storedWidth, storedHeight);
  }
  char description[768];
  snprintf(description, sizeof description, "%s,%sfps=fps=%d,format=yuv420p", scale,
           uprightFilters(o->orientation), o->frame_rate);
  int code = buildGraph(lane, "buffer", source, "buffersink", description);
  return code < 0 ? fail(r, code, "the video filter cannot be built") : 0;
}

static int openVideo(Rendition *r) {
  VideoRenditionOptions *o = &r->options;
  Lane *lane = &r->video;
  int code = VideoInput_openDecoder(&r->input, o->video_stream, &lane->decoder, r->error, r->error_size);
  if (code < 0) return code;
  lane->input_index = o->video_stream;
  const AVCodec *x264 = avcodec_find_encoder_by_name("libx264");
  if (x264 == NULL) return fail(r, AVERROR_ENCODER_NOT_FOUND, "no H.264 encoder");
  AVCodecContext *e = avcodec_alloc_context3(x264);
  if (e == NULL) return AVERROR(ENOMEM);
  lane->encoder = e;
  e->width = o->width;
  e->height = o->height;
  e->pix_fmt = AV_PIX_FMT_YUV420P;
  e->time_base = (AVRational){1, o->frame_rate};
  e->framerate = (AVRational){o->frame_rate, 1};
  e->sample_aspect_ratio = (AVRational){1, 1};
  e->color_primaries = AVCOL_PRI_BT709;
  e->color_trc = AVCOL_TRC_BT709;
  e->colorspace = AVCOL_SPC_BT709;
  e->color_range = AVCOL_RANGE_MPEG;
  e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER | AV_CODEC_FLAG_BITEXACT;
  // One thread, lookahead included: the same input gives the same bytes (with x264's automatic
  // lookahead threads it did not, run to run), and CPU per rendition is what a busy node pays;
  // renditions are made off the request path.
  e->thread_count = 1;
  av_opt_set(e->priv_data, "profile", "high", 0);
  av_opt_set(e->priv_data, "x264-params", "threads=1:lookahead-threads=1:sliced-threads=0", 0);
  av_opt_set(e->priv_data, "preset", o->preset, 0);
  char crf[16];
  snprintf(crf, sizeof crf, "%d", o->crf);
  av_opt_set(e->priv_data, "crf", crf, 0);
  code = avcodec_open2(e, x264, NULL);
  if (code < 0) return fail(r, code, "the H.264 encoder cannot be opened");
  lane->stream = avformat_new_stream(r->output, NULL);
  if (lane->stream == NULL) return AVERROR(ENOMEM);
  code = avcodec_parameters_from_context(lane->stream->codecpar, e);
  lane->stream->time_base = e->time_base;
  return code;
}

// The audio filter, made from the first decoded frame: resampled to 48 kHz stereo float, in
// the AAC encoder's frame size.
static int configureAudioGraph(Rendition *r, const AVFrame *frame) {
  Lane *lane = &r->audio;
  char layout[64] = "";
  if (frame->ch_layout.order == AV_CHANNEL_ORDER_NATIVE) {
    av_channel_layout_describe(&frame->ch_layout, layout, sizeof layout);
  }
  const char *format = av_get_sample_fmt_name(frame->format);
  if (format == NULL || frame->sample_rate <= 0) return fail(r, AVERROR_INVALIDDATA, "the audio has no format");
  // The frames' times are in the stream's time base (1/1000 in WebM, often the sample rate in
  // MP4): the source must say so, or the encoder sees times that jump back and forth.
  AVRational base = r->input.format->streams[r->options.audio_stream]->time_base;
  char source[256];
  if (layout[0] != 0) {
    snprintf(source, sizeof source, "time_base=%d/%d:sample_rate=%d:sample_fmt=%s:channel_layout=%s",
             base.num, base.den, frame->sample_rate, format, layout);
  } else {
    snprintf(source, sizeof source, "time_base=%d/%d:sample_rate=%d:sample_fmt=%s:channels=%d",
             base.num, base.den, frame->sample_rate, format, frame->ch_layout.nb_channels);
  }
  int code = buildGraph(lane, "abuffer", source, "abuffersink",
                        "aresample=48000,aformat=sample_fmts=fltp:sample_rates=48000:channel_layouts=stereo");
  if (code < 0) return fail(r, code, "the audio filter cannot be built");
  av_buffersink_set_frame_size(lane->sink, (unsigned)lane->encoder->frame_size);
  return 0;
}

static int openAudio(Rendition *r) {
  Lane *lane = &r->audio;
  int code = VideoInput_openDecoder(&r->input, r->options.audio_stream, &lane->decoder, r->error,
                                    r->error_size);
  if (code < 0) return code;
  lane->input_index = r->options.audio_stream;
  if (lane->decoder->codec_type != AVMEDIA_TYPE_AUDIO) return fail(r, AVERROR_DECODER_NOT_FOUND, "not audio");
  const AVCodec *aac = avcodec_find_encoder(AV_CODEC_ID_AAC);
  if (aac == NULL) return fail(r, AVERROR_ENCODER_NOT_FOUND, "no AAC encoder");
  AVCodecContext *e = avcodec_alloc_context3(aac);
  if (e == NULL) return AVERROR(ENOMEM);
  lane->encoder = e;
  e->sample_fmt = AV_SAMPLE_FMT_FLTP;
  e->sample_rate = 48000;
  AVChannelLayout stereo = AV_CHANNEL_LAYOUT_STEREO;
  e->ch_layout = stereo;
  e->bit_rate = 128000;
  e->time_base = (AVRational){1, 48000};
  // Bit-exact: FFmpeg's AAC encoder otherwise writes its name and version into the stream.
  e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER | AV_CODEC_FLAG_BITEXACT;
  code = avcodec_open2(e, aac, NULL);
  if (code < 0) return fail(r, code, "the AAC encoder cannot be opened");
  lane->stream = avformat_new_stream(r->output, NULL);
  if (lane->stream == NULL) return AVERROR(ENOMEM);
  code = avcodec_parameters_from_context(lane->stream->codecpar, e);
  lane->stream->time_base = e->time_base;
  return code;
}

// Removes SEI NAL units (type 6) from an Annex B H.264 packet in place: x264 writes its version
// and every setting into one, in the first packet.
static void dropSEI(AVPacket *packet) {
  uint8_t *data = packet->data;
  int size = packet->size, out = 0, i = 0;
  while (i < size) {
    // The next start code (00 00 01 or 00 00 00 01) at or after i.
    int start = i, code = -1;
    for (int j = i; j + 3 <= size; j++) {
      if (data[j] == 0 && data[j + 1] == 0 && data[j + 2] == 1) { code = j; break; }
    }
    if (code < 0) {
      memmove(data + out, data + start, (size_t)(size - start));
      out += size - start;
      break;
    }
    int payload = code + 3;
    int next = size;
    for (int j = payload; j + 3 <= size; j++) {
      if (data[j] == 0 && data[j + 1] == 0 && (data[j + 2] == 1 || (data[j + 2] == 0 && j + 3 < size && data[j + 3] == 1))) {
        next = j;
        break;
      }
    }
    int type = payload < size ? data[payload] & 0x1F : 0;
    if (type != 6) {
      memmove(data + out, data + start, (size_t)(next - start));
      out += next - start;
    }
    i = next;
  }
  packet->size = out;
}

static int writePackets(Rendition *r, Lane *lane) {
  for (;;) {
    int code = avcodec_receive_packet(lane->encoder, r->encoded);
    if (code == AVERROR(EAGAIN) || code == AVERROR_EOF) return 0;
    if (code < 0) return fail(r, code, "encoding failed");
    if (lane == &r->video) dropSEI(r->encoded);
    r->encoded->stream_index = lane->stream->index;
    av_packet_rescale_ts(r->encoded, lane->encoder->time_base, lane->stream->time_base);
    code = av_interleaved_write_frame(r->output, r->encoded);
    if (code < 0) return fail(r, code, "the MP4 cannot be written");
  }
}

// Pulls what the filter has ready, encodes it, writes the packets; `frame` NULL flushes.
static int filterAndEncode(Rendition *r, Lane *lane, AVFrame *frame) {
  int code = av_buffersrc_add_frame_flags(lane->source, frame, AV_BUFFERSRC_FLAG_KEEP_REF);
  if (code < 0) return fail(r, code, "the filter refused a frame");
  for (;;) {
    av_frame_unref(r->filtered);
    code = av_buffersink_get_frame(lane->sink, r->filtered);
    if (code == AVERROR(EAGAIN)) return 0;
    if (code == AVERROR_EOF) {
      code = avcodec_send_frame(lane->encoder, NULL);
      return code < 0 && code != AVERROR_EOF ? fail(r, code, "encoding failed") : writePackets(r, lane);
    }
    if (code < 0) return fail(r, code, "the filter failed");
    r->filtered->pts = av_rescale_q(r->filtered->pts, av_buffersink_get_time_base(lane->sink),
                                    lane->encoder->time_base);
    r->filtered->pict_type = AV_PICTURE_TYPE_NONE;
    code = avcodec_send_frame(lane->encoder, r->filtered);
    if (code < 0) return fail(r, code, "encoding failed");
    code = writePackets(r, lane);
    if (code < 0) return code;
  }
}

// Decodes what the decoder has ready and feeds it on; `flush` drains the decoder, the filter and
// the encoder.
static int decodeLane(Rendition *r, Lane *lane, const AVPacket *packet) {
  for (;;) {
    int sent = avcodec_send_packet(lane->decoder, packet);
    // A damaged packet of the input is skipped, as players do; the rest of the video still counts.
    if (sent < 0 && sent != AVERROR(EAGAIN) && sent != AVERROR_EOF && sent != AVERROR_INVALIDDATA) {
      return fail(r, sent, "decoding failed");
    }
    for (;;) {
      int code = avcodec_receive_frame(lane->decoder, r->frame);
      if (code == AVERROR(EAGAIN)) break;
      if (code == AVERROR_EOF) {
        if (lane->graph != NULL) return filterAndEncode(r, lane, NULL);
        return lane == &r->video ? fail(r, AVERROR_INVALIDDATA, "the video has no decodable frame") : 0;
      }
      if (code == AVERROR_INVALIDDATA) continue;
      if (code < 0) return fail(r, code, "decoding failed");
      if (lane->graph == NULL) {
        code = lane == &r->video ? configureVideoGraph(r, r->frame) : configureAudioGraph(r, r->frame);
        if (code < 0) return code;
      }
      r->frame->pts = r->frame->best_effort_timestamp;
      code = filterAndEncode(r, lane, r->frame);
      av_frame_unref(r->frame);
      if (code < 0) return code;
    }
    // The decoder was full: its frames are out now, so the packet goes in again.
    if (sent != AVERROR(EAGAIN)) return 0;
  }
}

static void closeLane(Lane *lane) {
  avfilter_graph_free(&lane->graph);
  avcodec_free_context(&lane->decoder);
  avcodec_free_context(&lane->encoder);
}

int VideoRendition_make(const uint8_t *data, size_t size, VideoRenditionOptions options,
                        uint8_t **output, size_t *output_size, char *error, size_t error_size) {
  *output = NULL;
  *output_size = 0;
  Rendition r;
  memset(&r, 0, sizeof r);
  r.options = options;
  r.error = error;
  r.error_size = error_size;
  r.memory.limit = options.max_output_bytes;
  int code = VideoInput_open(&r.input, data, size, options.release_read_input, error, error_size);
  if (code < 0) return code;
  for (unsigned i = 0; i < r.input.format->nb_streams; i++) {
    if ((int)i != options.video_stream && (int)i != options.audio_stream) {
      r.input.format->streams[i]->discard = AVDISCARD_ALL;
    }
  }
  r.packet = av_packet_alloc();
  r.encoded = av_packet_alloc();
  r.frame = av_frame_alloc();
  r.filtered = av_frame_alloc();
  code = AVERROR(ENOMEM);
  if (r.packet == NULL || r.encoded == NULL || r.frame == NULL || r.filtered == NULL) goto done;
  code = avformat_alloc_output_context2(&r.output, NULL, "mp4", NULL);
  if (code < 0) goto done;
  const int bufferSize = 64 * 1024;
  unsigned char *buffer = av_malloc(bufferSize);
  if (buffer == NULL) { code = AVERROR(ENOMEM); goto done; }
  r.io = avio_alloc_context(buffer, bufferSize, 1, &r.memory, NULL, writeOutput, seekOutput);
  if (r.io == NULL) { av_freep(&buffer); code = AVERROR(ENOMEM); goto done; }
  r.output->pb = r.io;
  r.output->flags |= AVFMT_FLAG_CUSTOM_IO | AVFMT_FLAG_BITEXACT;
  code = openVideo(&r);
  if (code < 0) goto done;
  if (options.audio_stream >= 0) {
    code = openAudio(&r);
    // Audio that cannot be decoded is left out, never a reason to fail the video.
    if (code < 0) {
      closeLane(&r.audio);
      memset(&r.audio, 0, sizeof r.audio);
      r.options.audio_stream = -1;
      r.input.format->streams[options.audio_stream]->discard = AVDISCARD_ALL;
      if (r.output->nb_streams > 1) { code = fail(&r, AVERROR_BUG, "audio stream half made"); goto done; }
    }
  }
  code = avformat_write_header(r.output, NULL);
  if (code < 0) { fail(&r, code, "the MP4 header cannot be written"); goto done; }
  for (;;) {
    code = av_read_frame(r.input.format, r.packet);
    if (code == AVERROR_EOF) break;
    if (code < 0) { fail(&r, code, "the container cannot be read"); goto done; }
    Lane *lane = r.packet->stream_index == r.video.input_index ? &r.video
                 : (r.options.audio_stream >= 0 && r.packet->stream_index == r.audio.input_index) ? &r.audio
                                                                                                 : NULL;
    code = lane != NULL ? decodeLane(&r, lane, r.packet) : 0;
    av_packet_unref(r.packet);
    if (code < 0) goto done;
  }
  code = decodeLane(&r, &r.video, NULL);
  if (code >= 0 && r.options.audio_stream >= 0) code = decodeLane(&r, &r.audio, NULL);
  if (code < 0) goto done;
  code = av_write_trailer(r.output);
  if (code < 0) { fail(&r, code, "the MP4 cannot be finished"); goto done; }
  avio_flush(r.io);
  *output = r.memory.bytes;
  *output_size = r.memory.size;
  r.memory.bytes = NULL;
done:
  closeLane(&r.video);
  closeLane(&r.audio);
  av_frame_free(&r.filtered);
  av_frame_free(&r.frame);
  av_packet_free(&r.packet);
  av_packet_free(&r.encoded);
  if (r.output != NULL) avformat_free_context(r.output);
  if (r.io != NULL) {
    av_freep(&r.io->buffer);
    avio_context_free(&r.io);
  }
  free(r.memory.bytes);
  VideoInput_close(&r.input);
  return code < 0 ? code : 0;
}

void VideoRendition_free(uint8_t *output) { free(output); }
