#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/pixdesc.h>
#include <stdarg.h>
#include <stdio.h>

// AVERROR(e) and FFERRTAG are macros with arguments, which Swift cannot import; these give the
// codes the decoder compares against.
static inline int CAVCodec_AVERROR_EAGAIN(void) { return AVERROR(EAGAIN); }
static inline int CAVCodec_AVERROR_EOF(void) { return AVERROR_EOF; }
static inline int CAVCodec_AVERROR_INVALIDDATA(void) { return AVERROR_INVALIDDATA; }
static inline int CAVCodec_AVERROR_ENOMEM(void) { return AVERROR(ENOMEM); }
static inline int CAVCodec_AVERROR_ENOSYS(void) { return AVERROR(ENOSYS); }
static inline int CAVCodec_AVERROR_PATCHWELCOME(void) { return AVERROR_PATCHWELCOME; }

// The name of the component that logged ("hevc"), from the AVClass every libav context starts
// with; NULL when the message has no context.
static inline const char *CAVCodec_componentName(void *context) {
  if (context == NULL) return NULL;
  const AVClass *cls = *(const AVClass **)context;
  if (cls == NULL || cls->item_name == NULL) return NULL;
  return cls->item_name(context);
}

// Defined in Swift (ImageCodecs/AVCodecLog.swift, `@c(attachd_avcodec_log_line)`): takes each
// formatted message.
void attachd_avcodec_log_line(int level, const char *component, const char *message);

// av_log hands its callback a va_list, which a Swift @convention(c) function can neither take
// nor format; so the callback is this C function, which formats the message with vsnprintf
// (cut at 1 KiB) and passes the text to Swift. av_log calls it for every level: the filter
// against av_log_get_level is ours to do. Bits above the low byte of `level` carry a colour
// (AV_LOG_C), not a level.
static inline void CAVCodec_logCallback(void *context, int level, const char *format, va_list arguments) {
  level &= 0xff;
  if (level > av_log_get_level() || format == NULL) return;
  char message[1024];
  if (vsnprintf(message, sizeof message, format, arguments) < 0) return;
  attachd_avcodec_log_line(level, CAVCodec_componentName(context), message);
}

static inline void CAVCodec_installLogCallback(void) {
  av_log_set_callback(CAVCodec_logCallback);
}
