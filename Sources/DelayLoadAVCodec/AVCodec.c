#include "DelayLoadAVCodec.h"

#include "DelayLoad.h"

// --- libavcodec and libavutil (Debian 12: FFmpeg 5.1) --------------------------------------------
// Only HEIC's HEVC tiles need them, but libavcodec59 as Debian builds it links ~95 shared libraries
// (codecs, X11, VA-API, cairo, librsvg …): ~15 ms and ~15 MB of every process that maps it. Opened
// with its dependencies (libavutil among them) when the first HEVC decoder opens; dlsym on its
// handle finds libavutil's functions too.
static DelayLoadLibrary avcodec = {"libavcodec.so.59", 0, NULL, ""};

const char *DelayLoad_avcodec(void) { return DelayLoadLibrary_open(&avcodec); }

FORWARD(avcodec, const AVCodec *, avcodec_find_decoder, (enum AVCodecID id), (id))
FORWARD(avcodec, AVCodecContext *, avcodec_alloc_context3, (const AVCodec *codec), (codec))
FORWARD(avcodec, int, avcodec_open2,
        (AVCodecContext * context, const AVCodec *codec, AVDictionary **options),
        (context, codec, options))
FORWARD_VOID(avcodec, avcodec_free_context, (AVCodecContext * *context), (context))
FORWARD_VOID(avcodec, avcodec_flush_buffers, (AVCodecContext * context), (context))
FORWARD(avcodec, int, avcodec_send_packet, (AVCodecContext * context, const AVPacket *packet),
        (context, packet))
FORWARD(avcodec, int, avcodec_receive_frame, (AVCodecContext * context, AVFrame *frame),
        (context, frame))
FORWARD(avcodec, AVPacket *, av_packet_alloc, (void), ())
FORWARD_VOID(avcodec, av_packet_free, (AVPacket * *packet), (packet))
FORWARD_VOID(avcodec, av_packet_unref, (AVPacket * packet), (packet))
FORWARD(avcodec, int, av_new_packet, (AVPacket * packet, int size), (packet, size))
FORWARD(avcodec, AVFrame *, av_frame_alloc, (void), ())
FORWARD_VOID(avcodec, av_frame_free, (AVFrame * *frame), (frame))
FORWARD_VOID(avcodec, av_frame_unref, (AVFrame * frame), (frame))
FORWARD(avcodec, void *, av_mallocz, (size_t size), (size))
FORWARD(avcodec, int, av_strerror, (int code, char *buffer, size_t size), (code, buffer, size))
FORWARD(avcodec, const AVPixFmtDescriptor *, av_pix_fmt_desc_get, (enum AVPixelFormat format),
        (format))
FORWARD_VOID(avcodec, av_log_set_level, (int level), (level))
FORWARD(avcodec, int, av_log_get_level, (void), ())
FORWARD_VOID(avcodec, av_log_set_callback,
             (void (*callback)(void *, int, const char *, va_list)), (callback))
