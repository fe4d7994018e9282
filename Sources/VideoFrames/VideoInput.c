#include "VideoInput.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void VideoInput_describe(int code, const char *what, char *error, size_t size) {
  char reason[128] = "";
  av_strerror(code, reason, sizeof reason);
  snprintf(error, size, "%s: %s", what, reason);
}

int VideoInput_isHDR(int transfer) {
  return transfer == AVCOL_TRC_SMPTE2084 || transfer == AVCOL_TRC_ARIB_STD_B67;
}

int VideoInput_transfer(const AVFrame *frame, int declared) {
  return VideoInput_isHDR(frame->color_trc) ? (int)frame->color_trc : declared;
}

void VideoInput_toneMapFilters(char *out, size_t size, int width, int height, int transfer) {
  snprintf(out, size,
           "zscale=w=%d:h=%d:filter=lanczos:tin=%s:pin=bt2020:min=bt2020nc:rin=tv:t=linear:p=bt709:npl=100,"
           "format=gbrpf32le,tonemap=tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p",
           width, height, transfer == AVCOL_TRC_SMPTE2084 ? "smpte2084" : "arib-std-b67");
}

// --- I/O over the bytes in memory ------------------------------------------------------------
// Bytes kept mapped behind the read position (the demuxer steps back a little between
// interleaved audio and video samples; a page released too early is only faulted in again from
// the file), and the least worth a system call.
enum { keptBehind = 2 << 20, releaseStep = 1 << 20 };

// Gives back the pages of a mapped input that lie well behind the read position: the movie is
// read through once, and its pages would otherwise all count against the process's memory.
static void releaseBehind(VideoInput *s) {
  if (!s->release_read || s->position - keptBehind - s->released < releaseStep) return;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t start = ((uintptr_t)(s->data + s->released) + page - 1) & ~(page - 1);
  uintptr_t end = (uintptr_t)(s->data + s->position - keptBehind) & ~(page - 1);
  if (end > start) madvise((void *)start, end - start, MADV_DONTNEED);
  s->released = s->position - keptBehind;
}

static int readInput(void *opaque, uint8_t *buffer, int size) {
  VideoInput *s = opaque;
  if (s->position >= (int64_t)s->size) return AVERROR_EOF;
  size_t left = s->size - (size_t)s->position;
  size_t n = (size_t)size < left ? (size_t)size : left;
  memcpy(buffer, s->data + s->position, n);
  s->position += (int64_t)n;
  releaseBehind(s);
  return (int)n;
}

static int64_t seekInput(void *opaque, int64_t offset, int whence) {
  VideoInput *s = opaque;
  if (whence & AVSEEK_SIZE) return (int64_t)s->size;
  int64_t base = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = s->position; break;
    case SEEK_END: base = (int64_t)s->size; break;
    default: return AVERROR(EINVAL);
  }
  int64_t target = base + offset;
  if (target < 0 || target > (int64_t)s->size) return AVERROR(EINVAL);
  s->position = target;
  // A seek back reads those pages again (faulted in from the file); release from there on.
  if (s->released > target) s->released = target;
  return target;
}

// The demuxer asks here for any other file (a `dref` to another movie, an HLS segment …): the
// answer is always no. The sandbox's seccomp filter would kill the child anyway; this makes it
// a clean refusal instead.
static int refuseOpen(AVFormatContext *context, AVIOContext **io, const char *url, int flags,
                      AVDictionary **options) {
  (void)context; (void)io; (void)url; (void)flags; (void)options;
  return AVERROR(EPERM);
}

const char *VideoInput_preload(void) {
  const char *error = DelayLoad_avcodec();
  return error != NULL ? error : DelayLoad_avformat();
}


static int videoCodecAllowed(enum AVCodecID id) {
  return id == AV_CODEC_ID_HEVC || id == AV_CODEC_ID_H264 || id == AV_CODEC_ID_VP9 ||
         id == AV_CODEC_ID_VP8 || id == AV_CODEC_ID_AV1;
}

int VideoInput_open(VideoInput *s, const uint8_t *data, size_t size, int release_read, char *error,
                    size_t error_size) {
  memset(s, 0, sizeof *s);
  const char *missing = VideoInput_preload();
  if (missing != NULL) {
    snprintf(error, error_size, "%s", missing);
    return AVERROR(ENOSYS);
  }
  s->data = data;
  s->size = size;
  s->release_read = release_read;
  int code = AVERROR(ENOMEM);
  const int bufferSize = 64 * 1024;
  unsigned char *buffer = av_malloc(bufferSize);
  if (buffer == NULL) goto fail;
  s->io = avio_alloc_context(buffer, bufferSize, 0, s, readInput, NULL, seekInput);
  if (s->io == NULL) {
    av_freep(&buffer);
    goto fail;
  }
  s->format = avformat_alloc_context();
  if (s->format == NULL) goto fail;
  s->format->pb = s->io;
  s->format->flags |= AVFMT_FLAG_CUSTOM_IO;
  s->format->io_open = refuseOpen;
  // Only QuickTime/MP4's demuxer and Matroska/WebM's (the outline reader took the file as one).
  s->format->format_whitelist = av_strdup("mov,mp4,m4a,3gp,3g2,mj2,matroska,webm");
  AVDictionary *demuxerOptions = NULL;
  av_dict_set(&demuxerOptions, "enable_drefs", "0", 0);
  av_dict_set(&demuxerOptions, "use_absolute_path", "0", 0);
  code = avformat_open_input(&s->format, NULL, NULL, &demuxerOptions);
  av_dict_free(&demuxerOptions);
  if (code < 0) {
    VideoInput_describe(code, "the container cannot be read", error, error_size);
    goto fail;
  }
  return 0;
fail:
  VideoInput_close(s);
  return code;
}

void VideoInput_close(VideoInput *s) {
  avformat_close_input(&s->format);
  if (s->io != NULL) {
    av_freep(&s->io->buffer);
    avio_context_free(&s->io);
  }
}

int VideoInput_openDecoder(VideoInput *s, int index, AVCodecContext **out, char *error,
                           size_t error_size) {
  *out = NULL;
  if (index < 0 || (unsigned)index >= s->format->nb_streams) {
    snprintf(error, error_size, "no stream %d", index);
    return AVERROR_STREAM_NOT_FOUND;
  }
  AVStream *stream = s->format->streams[index];
  AVCodecParameters *parameters = stream->codecpar;
  int video = parameters->codec_type == AVMEDIA_TYPE_VIDEO;
  if ((video && !videoCodecAllowed(parameters->codec_id)) ||
      (!video && parameters->codec_type != AVMEDIA_TYPE_AUDIO)) {
    snprintf(error, error_size, "stream %d is not HEVC, H.264, VP9, VP8 or AV1 video, nor audio", index);
    return AVERROR_DECODER_NOT_FOUND;
  }
  const AVCodec *decoder = parameters->codec_id == AV_CODEC_ID_AV1
                               ? avcodec_find_decoder_by_name("libdav1d")
                               : avcodec_find_decoder(parameters->codec_id);
  if (decoder == NULL) {
    snprintf(error, error_size, "no decoder for stream %d", index);
    return AVERROR_DECODER_NOT_FOUND;
  }
  AVCodecContext *codec = avcodec_alloc_context3(decoder);
  if (codec == NULL) return AVERROR(ENOMEM);
  int code = avcodec_parameters_to_context(codec, parameters);
  if (code >= 0) {
    // One thread: CPU per upload is what counts, and each child has one job.
    codec->thread_count = 1;
    codec->pkt_timebase = stream->time_base;
    code = avcodec_open2(codec, decoder, NULL);
  }
  if (code < 0) {
    VideoInput_describe(code, "the decoder cannot be opened", error, error_size);
    avcodec_free_context(&codec);
    return code;
  }
  *out = codec;
  return 0;
}
