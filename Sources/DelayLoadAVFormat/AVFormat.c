#include "DelayLoadAVFormat.h"

#include "DelayLoad.h"

// --- libavformat, libavfilter (Debian 12: FFmpeg 5.1) --------------------------------------------
// Like libavcodec (Sources/DelayLoadAVCodec/AVCodec.c), each brings dozens of libraries; only a
// video upload needs them, and only in the sandbox's children (the helper opens them before it
// locks down). libavutil's functions are found through libavformat's handle (its dependency).
static DelayLoadLibrary avformat = {"libavformat.so.59", 0, NULL, ""};
static DelayLoadLibrary avfilter = {"libavfilter.so.8", 0, NULL, ""};

const char *DelayLoad_avformat(void) {
  const char *error = DelayLoadLibrary_open(&avformat);
  return error != NULL ? error : DelayLoadLibrary_open(&avfilter);
}

FORWARD(avformat, AVFormatContext *, avformat_alloc_context, (void), ())
FORWARD(avformat, int, avformat_open_input,
        (AVFormatContext * *context, const char *url, const AVInputFormat *format,
         AVDictionary **options),
        (context, url, format, options))
FORWARD_VOID(avformat, avformat_close_input, (AVFormatContext * *context), (context))
FORWARD(avformat, int, av_read_frame, (AVFormatContext * context, AVPacket *packet),
        (context, packet))
FORWARD(avformat, int, av_seek_frame,
        (AVFormatContext * context, int stream, int64_t timestamp, int flags),
        (context, stream, timestamp, flags))
FORWARD(avformat, int, avformat_index_get_entries_count, (const AVStream *stream), (stream))
FORWARD(avformat, const AVIndexEntry *, avformat_index_get_entry, (AVStream * stream, int index),
        (stream, index))
FORWARD(avformat, AVIOContext *, avio_alloc_context,
        (unsigned char *buffer, int size, int write, void *opaque,
         int (*read)(void *, uint8_t *, int), int (*write_packet)(void *, uint8_t *, int),
         int64_t (*seek)(void *, int64_t, int)),
        (buffer, size, write, opaque, read, write_packet, seek))
FORWARD_VOID(avformat, avio_context_free, (AVIOContext * *context), (context))
FORWARD(avformat, int, avcodec_parameters_to_context,
        (AVCodecContext * context, const AVCodecParameters *parameters), (context, parameters))
FORWARD(avformat, const AVCodec *, avcodec_find_decoder_by_name, (const char *name), (name))
FORWARD(avformat, void *, av_malloc, (size_t size), (size))
FORWARD_VOID(avformat, av_freep, (void *pointer), (pointer))
FORWARD(avformat, char *, av_strdup, (const char *string), (string))
FORWARD(avformat, int, av_dict_set,
        (AVDictionary * *dictionary, const char *key, const char *value, int flags),
        (dictionary, key, value, flags))
FORWARD_VOID(avformat, av_dict_free, (AVDictionary * *dictionary), (dictionary))

FORWARD(avfilter, AVFilterGraph *, avfilter_graph_alloc, (void), ())
FORWARD_VOID(avfilter, avfilter_graph_free, (AVFilterGraph * *graph), (graph))
FORWARD(avfilter, const AVFilter *, avfilter_get_by_name, (const char *name), (name))
FORWARD(avfilter, int, avfilter_graph_create_filter,
        (AVFilterContext * *filter, const AVFilter *kind, const char *name, const char *arguments,
         void *opaque, AVFilterGraph *graph),
        (filter, kind, name, arguments, opaque, graph))
FORWARD(avfilter, int, avfilter_graph_parse_ptr,
        (AVFilterGraph * graph, const char *description, AVFilterInOut **inputs,
         AVFilterInOut **outputs, void *log),
        (graph, description, inputs, outputs, log))
FORWARD(avfilter, int, avfilter_graph_config, (AVFilterGraph * graph, void *log), (graph, log))
FORWARD(avfilter, AVFilterInOut *, avfilter_inout_alloc, (void), ())
FORWARD_VOID(avfilter, avfilter_inout_free, (AVFilterInOut * *inout), (inout))
FORWARD(avfilter, int, av_buffersrc_add_frame_flags,
        (AVFilterContext * source, AVFrame *frame, int flags), (source, frame, flags))
FORWARD(avfilter, int, av_buffersink_get_frame, (AVFilterContext * sink, AVFrame *frame),
        (sink, frame))
FORWARD_VOID(avformat, av_frame_move_ref, (AVFrame * destination, AVFrame *source),
             (destination, source))

// --- the rendition: muxing and encoding -------------------------------------------------------
FORWARD(avformat, int, avformat_alloc_output_context2,
        (AVFormatContext * *context, const AVOutputFormat *format, const char *name,
         const char *file),
        (context, format, name, file))
FORWARD(avformat, AVStream *, avformat_new_stream, (AVFormatContext * context, const AVCodec *codec),
        (context, codec))
FORWARD(avformat, int, avformat_write_header, (AVFormatContext * context, AVDictionary **options),
        (context, options))
FORWARD(avformat, int, av_interleaved_write_frame, (AVFormatContext * context, AVPacket *packet),
        (context, packet))
FORWARD(avformat, int, av_write_trailer, (AVFormatContext * context), (context))
FORWARD_VOID(avformat, avformat_free_context, (AVFormatContext * context), (context))
FORWARD(avformat, const AVCodec *, avcodec_find_encoder_by_name, (const char *name), (name))
FORWARD(avformat, const AVCodec *, avcodec_find_encoder, (enum AVCodecID id), (id))
FORWARD(avformat, int, avcodec_send_frame, (AVCodecContext * context, const AVFrame *frame),
        (context, frame))
FORWARD(avformat, int, avcodec_receive_packet, (AVCodecContext * context, AVPacket *packet),
        (context, packet))
FORWARD(avformat, int, avcodec_parameters_from_context,
        (AVCodecParameters * parameters, const AVCodecContext *context), (parameters, context))
FORWARD_VOID(avformat, av_packet_rescale_ts, (AVPacket * packet, AVRational from, AVRational to),
             (packet, from, to))
FORWARD(avformat, int, av_opt_set, (void *object, const char *name, const char *value, int flags),
        (object, name, value, flags))
FORWARD(avformat, int64_t, av_rescale_q, (int64_t value, AVRational from, AVRational to),
        (value, from, to))
FORWARD(avformat, const char *, av_get_sample_fmt_name, (enum AVSampleFormat format), (format))
FORWARD(avformat, void *, av_realloc, (void *pointer, size_t size), (pointer, size))
FORWARD_VOID(avformat, av_free, (void *pointer), (pointer))
FORWARD(avformat, int, av_channel_layout_describe,
        (const AVChannelLayout *layout, char *buffer, size_t size), (layout, buffer, size))
FORWARD_VOID(avfilter, av_buffersink_set_frame_size, (AVFilterContext * sink, unsigned size),
             (sink, size))
FORWARD(avfilter, AVRational, av_buffersink_get_time_base, (const AVFilterContext *sink), (sink))
FORWARD_VOID(avformat, avio_flush, (AVIOContext * context), (context))
