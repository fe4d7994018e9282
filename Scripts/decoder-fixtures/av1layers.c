/* av1layers W H IN.yuv OUT.obu: one 8-bit 4:2:0 picture coded as two spatial layers, the base at
   half size (scale mode 1:2), the enhancement at full size predicting from it only. */
#include <aom/aom_encoder.h>
#include <aom/aomcx.h>
#include <stdio.h>
#include <stdlib.h>
static int drain(aom_codec_ctx_t *c, FILE *out) {
  const aom_codec_cx_pkt_t *p; aom_codec_iter_t it = NULL; int n = 0;
  while ((p = aom_codec_get_cx_data(c, &it)))
    if (p->kind == AOM_CODEC_CX_FRAME_PKT) n += fwrite(p->data.frame.buf, 1, p->data.frame.sz, out) > 0;
  return n;
}
#define CHECK(x) do { if (x) { fprintf(stderr, "%s: %s\n", #x, aom_codec_error(&codec)); return 1; } } while (0)
int main(int argc, char **argv) {
  if (argc != 5) return 2;
  int w = atoi(argv[1]), h = atoi(argv[2]);
  aom_image_t img; aom_img_alloc(&img, AOM_IMG_FMT_I420, w, h, 1);
  FILE *in = fopen(argv[3], "rb"); if (!in) return 1;
  for (int p = 0; p < 3; p++) {
    int pw = p ? (w + 1) / 2 : w, ph = p ? (h + 1) / 2 : h;
    for (int y = 0; y < ph; y++) if (fread(img.planes[p] + y * img.stride[p], 1, pw, in) != (size_t)pw) return 1;
  }
  fclose(in);
  aom_codec_ctx_t codec; aom_codec_enc_cfg_t cfg;
  if (aom_codec_enc_config_default(aom_codec_av1_cx(), &cfg, AOM_USAGE_GOOD_QUALITY)) return 1;
  cfg.g_w = w; cfg.g_h = h; cfg.g_lag_in_frames = 0; cfg.g_threads = 1; cfg.rc_end_usage = AOM_Q;
  CHECK(aom_codec_enc_init(&codec, aom_codec_av1_cx(), &cfg, 0));
  CHECK(aom_codec_control(&codec, AOME_SET_CPUUSED, 6));
  CHECK(aom_codec_control(&codec, AOME_SET_NUMBER_SPATIAL_LAYERS, 2));
  CHECK(aom_codec_control(&codec, AV1E_SET_COLOR_RANGE, 0));
  FILE *out = fopen(argv[4], "wb"); if (!out) return 1;
  int frames = 0;
  for (int layer = 0; layer < 2; layer++) {
    aom_scaling_mode_t mode = {layer ? AOME_NORMAL : AOME_ONETWO, layer ? AOME_NORMAL : AOME_ONETWO};
    CHECK(aom_codec_control(&codec, AOME_SET_SPATIAL_LAYER_ID, layer));
    CHECK(aom_codec_control(&codec, AOME_SET_SCALEMODE, &mode));
    CHECK(aom_codec_control(&codec, AOME_SET_CQ_LEVEL, layer ? 10 : 16));
    aom_enc_frame_flags_t flags = layer ? AOM_EFLAG_NO_REF_LAST2 | AOM_EFLAG_NO_REF_LAST3 | AOM_EFLAG_NO_REF_GF
      | AOM_EFLAG_NO_REF_ARF | AOM_EFLAG_NO_REF_BWD | AOM_EFLAG_NO_REF_ARF2 | AOM_EFLAG_NO_UPD_GF
      | AOM_EFLAG_NO_UPD_ARF | AOM_EFLAG_NO_UPD_ENTROPY : AOM_EFLAG_FORCE_KF;
    CHECK(aom_codec_encode(&codec, &img, 0, 1, flags));
    frames += drain(&codec, out);
  }
  CHECK(aom_codec_encode(&codec, NULL, 0, 0, 0));
  frames += drain(&codec, out);
  fclose(out); aom_codec_destroy(&codec); aom_img_free(&img);
  return frames == 2 ? 0 : 1;
}
