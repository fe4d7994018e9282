/* tjenc KIND W H OUT: the RGB picture on stdin as a JPEG at quality 90. KIND: ycc420, progressive,
   gray (TurboJPEG), or cmyk: four plain CMYK components holding Adobe-inverted values (255 = no
   ink, as Photoshop stores CMYK), written with libjpeg, which adds an Adobe APP14 segment
   (TurboJPEG would store YCCK). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <turbojpeg.h>

static int cmyk(const unsigned char *pixels, int w, int h, const char *path) {
  struct jpeg_compress_struct c; struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e); jpeg_create_compress(&c);
  FILE *f = fopen(path, "wb"); if (!f) return 1;
  jpeg_stdio_dest(&c, f);
  c.image_width = w; c.image_height = h; c.input_components = 4; c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c); jpeg_set_colorspace(&c, JCS_CMYK); jpeg_set_quality(&c, 90, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * w * 4);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c); jpeg_destroy_compress(&c); fclose(f);
  return 0;
}
int main(int argc, char **argv) {
  if (argc != 5) return 2;
  const char *kind = argv[1]; int w = atoi(argv[2]), h = atoi(argv[3]);
  int pf = TJPF_RGB, samp = TJSAMP_420, flags = 0;
  if (!strcmp(kind, "progressive")) flags = TJFLAG_PROGRESSIVE;
  if (!strcmp(kind, "gray")) { pf = TJPF_GRAY; samp = TJSAMP_GRAY; }
  if (!strcmp(kind, "cmyk")) { pf = TJPF_CMYK; samp = TJSAMP_444; }
  int size = tjPixelSize[pf];
  unsigned char *rgb = malloc((size_t)w * h * 3), *pixels = malloc((size_t)w * h * size);
  if (fread(rgb, 1, (size_t)w * h * 3, stdin) != (size_t)w * h * 3) return 1;
  for (long i = 0; i < (long)w * h; i++) {  /* stdin holds RGB */
    unsigned char r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
    unsigned char *p = pixels + i * size;
    if (pf == TJPF_GRAY) p[0] = (r * 299 + g * 587 + b * 114 + 500) / 1000;
    else if (pf == TJPF_CMYK) { p[0] = r; p[1] = g; p[2] = b; p[3] = 255; }
    else { p[0] = r; p[1] = g; p[2] = b; }
  }
  if (pf == TJPF_CMYK) return cmyk(pixels, w, h, argv[4]);
  tjhandle t = tjInitCompress(); unsigned char *out = NULL; unsigned long length = 0;
  if (tjCompress2(t, pixels, w, 0, h, pf, &out, &length, samp, 90, flags)) {
    fprintf(stderr, "%s\n", tjGetErrorStr2(t)); return 1;
  }
  FILE *f = fopen(argv[4], "wb"); if (!f) return 1;
  fwrite(out, 1, length, f); fclose(f); tjFree(out); tjDestroy(t); free(pixels); free(rgb);
  return 0;
}
