// hevc-bare: decodes every tile of an HVCS file (written by Scripts/bench/heif_tiles.py) with
// libavcodec alone, one thread, and prints the CPU seconds per run and the peak RSS. It is the
// floor HEVCDecoder is measured against (`attachd bench-hevc` reads the same file), so it uses
// the same settings: hvcC as extradata, one packet per tile copied into a padded buffer,
// AV_EF_EXPLODE and friends, one frame received per packet.
//
// Build: gcc -O2 -o hevc-bare hevc-bare.c $(pkg-config --cflags --libs libavcodec libavutil)
// Usage: hevc-bare [--runs N] FILE.hvcs
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void fail(const char *what) {
  fprintf(stderr, "hevc-bare: %s\n", what);
  exit(1);
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

// Opens a decoder, decodes every tile, frees the decoder; returns the number of frames.
static int decode_all(const uint8_t *hvcc, uint32_t hvcc_size, const uint8_t **tiles,
                      const uint32_t *sizes, uint32_t count) {
  const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_HEVC);
  AVCodecContext *ctx = avcodec_alloc_context3(codec);
  AVPacket *packet = av_packet_alloc();
  AVFrame *frame = av_frame_alloc();
  if (!codec || !ctx || !packet || !frame) fail("allocation failed");
  ctx->thread_count = 1;
  ctx->thread_type = 0;
  ctx->err_recognition = AV_EF_EXPLODE | AV_EF_CRCCHECK | AV_EF_BITSTREAM | AV_EF_BUFFER;
  ctx->max_pixels = 250000000;
  ctx->extradata = av_mallocz(hvcc_size + AV_INPUT_BUFFER_PADDING_SIZE);
  if (!ctx->extradata) fail("allocation failed");
  memcpy(ctx->extradata, hvcc, hvcc_size);
  ctx->extradata_size = (int)hvcc_size;
  if (avcodec_open2(ctx, codec, NULL) < 0) fail("avcodec_open2 failed");
  int frames = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (av_new_packet(packet, (int)sizes[i]) < 0) fail("av_new_packet failed");
    memcpy(packet->data, tiles[i], sizes[i]);
    if (avcodec_send_packet(ctx, packet) < 0) fail("avcodec_send_packet failed");
    av_packet_unref(packet);
    if (avcodec_receive_frame(ctx, frame) < 0) fail("no frame for a tile");
    if (frame->flags & AV_FRAME_FLAG_CORRUPT || frame->decode_error_flags) fail("corrupt frame");
    frames++;
    av_frame_unref(frame);
  }
  av_frame_free(&frame);
  av_packet_free(&packet);
  avcodec_free_context(&ctx);
  return frames;
}

int main(int argc, char **argv) {
  int runs = 5;
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    else path = argv[i];
  }
  if (!path || runs < 1 || runs > 1000) fail("usage: hevc-bare [--runs N] FILE.hvcs");
  av_log_set_level(AV_LOG_QUIET);

  FILE *file = fopen(path, "rb");
  if (!file) fail("cannot open the input");
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
  if (!data || fread(data, 1, (size_t)size, file) != (size_t)size) fail("cannot read the input");
  fclose(file);

  if (size < 12 || memcmp(data, "HVCS", 4)) fail("not an HVCS file");
  uint32_t hvcc_size = be32(data + 4);
  if ((uint64_t)hvcc_size + 12 > (uint64_t)size) fail("bad hvcC size");
  const uint8_t *hvcc = data + 8;
  long at = 8 + hvcc_size;
  uint32_t count = be32(data + at);
  at += 4;
  const uint8_t **tiles = calloc(count ? count : 1, sizeof *tiles);
  uint32_t *sizes = calloc(count ? count : 1, sizeof *sizes);
  if (!tiles || !sizes) fail("allocation failed");
  for (uint32_t i = 0; i < count; i++) {
    if (at + 4 > size) fail("truncated input");
    sizes[i] = be32(data + at);
    at += 4;
    if (at + (long)sizes[i] > size) fail("truncated input");
    tiles[i] = data + at;
    at += sizes[i];
  }

  double *times = calloc((size_t)runs, sizeof *times);
  if (!times) fail("allocation failed");
  int frames = 0;
  for (int r = 0; r < runs; r++) {
    double start = cpu_seconds();
    frames = decode_all(hvcc, hvcc_size, tiles, sizes, count);
    times[r] = cpu_seconds() - start;
  }
  qsort(times, (size_t)runs, sizeof *times, compare);
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  printf("hevc-bare: %d tiles, %d runs: CPU s min %.4f median %.4f, peak RSS %ld KiB\n", frames,
         runs, times[0], times[runs / 2], usage.ru_maxrss);
  free(times);
  free(tiles);
  free(sizes);
  free(data);
  return 0;
}
