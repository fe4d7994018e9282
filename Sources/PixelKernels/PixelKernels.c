#include "PixelKernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

int PixelKernels_hasAVX2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? 1 : 0;
}

// 16 samples minus 128, times 256: the sample in the high byte of a signed 16-bit lane.
__attribute__((target("avx2"))) static inline __m256i centred(const uint8_t *p) {
  __m256i wide = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p));
  return _mm256_slli_epi16(_mm256_sub_epi16(wide, _mm256_set1_epi16(128)), 8);
}

__attribute__((target("avx2"))) void PixelKernels_verticalAVX2(const uint8_t *const *rows, int taps,
                                                               const int16_t *weights,
                                                               size_t samples, int16_t *dst) {
  const __m256i bias = _mm256_set1_epi16((int16_t)(taps / 2));
  size_t i = 0;
  for (; i + 32 <= samples; i += 32) {
    __m256i a0 = bias, a1 = bias;
    for (int k = 0; k < taps; k++) {
      const __m256i w = _mm256_set1_epi16(weights[k]);
      a0 = _mm256_add_epi16(a0, _mm256_mulhi_epi16(centred(rows[k] + i), w));
      a1 = _mm256_add_epi16(a1, _mm256_mulhi_epi16(centred(rows[k] + i + 16), w));
    }
    _mm256_storeu_si256((__m256i *)(dst + i), _mm256_slli_epi16(a0, 1));
    _mm256_storeu_si256((__m256i *)(dst + i + 16), _mm256_slli_epi16(a1, 1));
  }
  for (; i + 16 <= samples; i += 16) {
    __m256i a = bias;
    for (int k = 0; k < taps; k++) {
      a = _mm256_add_epi16(a, _mm256_mulhi_epi16(centred(rows[k] + i), _mm256_set1_epi16(weights[k])));
    }
    _mm256_storeu_si256((__m256i *)(dst + i), _mm256_slli_epi16(a, 1));
  }
  for (; i < samples; i++) {
    int32_t sum = taps / 2;
    for (int k = 0; k < taps; k++) sum += (((int32_t)rows[k][i] - 128) * 256 * weights[k]) >> 16;
    dst[i] = (int16_t)(uint16_t)((uint32_t)sum << 1);
  }
}

// One destination pixel of the horizontal pass with 128-bit vectors: `LanczosKernels`'
// horizontalPass exactly (8 rows per vector, two taps per step, a zero-weighted tap after an
// odd count, 16 + taps/2 to start, >> 5, + 128, clamped to 0…255).
__attribute__((target("avx2"))) static inline void horizontalOne(const int16_t *strip,
                                                                  const int32_t *starts,
                                                                  const int32_t *counts,
                                                                  const int16_t *weights,
                                                                  size_t tapStride, int channels,
                                                                  size_t x, int16_t *dst) {
  const size_t pixel = (size_t)channels * 8;
  const int taps = counts[x];
  const __m128i bias = _mm_set1_epi16((int16_t)(16 + taps / 2));
  __m128i sums[4] = {bias, bias, bias, bias};
  const int16_t *p = strip + (size_t)starts[x] * pixel;
  const int16_t *w = weights + x * tapStride * 8;
  for (int step = 0; step < (taps + 1) / 2; step++) {
    const __m128i w0 = _mm_loadu_si128((const __m128i *)w);
    const __m128i w1 = _mm_loadu_si128((const __m128i *)(w + 8));
    for (int c = 0; c < channels; c++) {
      const __m128i v0 = _mm_loadu_si128((const __m128i *)(p + c * 8));
      const __m128i v1 = _mm_loadu_si128((const __m128i *)(p + pixel + c * 8));
      sums[c] = _mm_add_epi16(sums[c], _mm_add_epi16(_mm_mulhi_epi16(v0, w0), _mm_mulhi_epi16(v1, w1)));
    }
    p += 2 * pixel;
    w += 16;
  }
  for (int c = 0; c < channels; c++) {
    __m128i v = _mm_add_epi16(_mm_srai_epi16(sums[c], 5), _mm_set1_epi16(128));
    v = _mm_min_epi16(_mm_max_epi16(v, _mm_setzero_si128()), _mm_set1_epi16(255));
    _mm_storeu_si128((__m128i *)(dst + x * pixel + (size_t)c * 8), v);
  }
}

// Two destination pixels in one 256-bit vector: x in the low half, x + 1 in the high half. Both
// run the longer window's step count; the other's extra taps have zero weights (the weight table
// is zero past each count, up to `tapStride`), and wrapping 16-bit sums do not depend on the order
// of their terms, so each half equals what `horizontalOne` computes. Its caller checks that the
// extra taps' samples are inside the strip.
__attribute__((target("avx2"))) static inline void horizontalTwo(const int16_t *strip,
                                                                  const int32_t *starts,
                                                                  const int32_t *counts,
                                                                  const int16_t *weights,
                                                                  size_t tapStride, int channels,
                                                                  size_t x, int steps, int16_t *dst) {
  const size_t pixel = (size_t)channels * 8;
  const __m256i bias = _mm256_set_m128i(_mm_set1_epi16((int16_t)(16 + counts[x + 1] / 2)),
                                        _mm_set1_epi16((int16_t)(16 + counts[x] / 2)));
  __m256i sums[4] = {bias, bias, bias, bias};
  const int16_t *p = strip + (size_t)starts[x] * pixel;
  const int16_t *q = strip + (size_t)starts[x + 1] * pixel;
  const int16_t *w = weights + x * tapStride * 8;
  const int16_t *v = w + tapStride * 8;
  for (int step = 0; step < steps; step++) {
    const __m256i w0 = _mm256_loadu2_m128i((const __m128i *)v, (const __m128i *)w);
    const __m256i w1 = _mm256_loadu2_m128i((const __m128i *)(v + 8), (const __m128i *)(w + 8));
    for (int c = 0; c < channels; c++) {
      const __m256i s0 = _mm256_loadu2_m128i((const __m128i *)(q + c * 8), (const __m128i *)(p + c * 8));
      const __m256i s1 =
          _mm256_loadu2_m128i((const __m128i *)(q + pixel + c * 8), (const __m128i *)(p + pixel + c * 8));
      sums[c] = _mm256_add_epi16(
          sums[c], _mm256_add_epi16(_mm256_mulhi_epi16(s0, w0), _mm256_mulhi_epi16(s1, w1)));
    }
    p += 2 * pixel;
    q += 2 * pixel;
    w += 16;
    v += 16;
  }
  for (int c = 0; c < channels; c++) {
    __m256i r = _mm256_add_epi16(_mm256_srai_epi16(sums[c], 5), _mm256_set1_epi16(128));
    r = _mm256_min_epi16(_mm256_max_epi16(r, _mm256_setzero_si256()), _mm256_set1_epi16(255));
    _mm_storeu_si128((__m128i *)(dst + x * pixel + (size_t)c * 8), _mm256_castsi256_si128(r));
    _mm_storeu_si128((__m128i *)(dst + (x + 1) * pixel + (size_t)c * 8), _mm256_extracti128_si256(r, 1));
  }
}

// The whole pass for one channel count; inlined with a constant `channels`, so each loop over
// the channels is unrolled.
__attribute__((target("avx2"), always_inline)) static inline void horizontal(
    const int16_t *strip, size_t stripSamples, const int32_t *starts, const int32_t *counts,
    size_t destination, const int16_t *weights, size_t tapStride, int channels, int16_t *dst) {
  size_t x = 0;
  for (; x + 1 < destination; x += 2) {
    const int stepsX = (counts[x] + 1) / 2, stepsY = (counts[x + 1] + 1) / 2;
    const int steps = stepsX > stepsY ? stepsX : stepsY;
    const size_t endX = ((size_t)starts[x] + 2 * (size_t)steps) * (size_t)channels;
    const size_t endY = ((size_t)starts[x + 1] + 2 * (size_t)steps) * (size_t)channels;
    if (endX <= stripSamples && endY <= stripSamples) {
      horizontalTwo(strip, starts, counts, weights, tapStride, channels, x, steps, dst);
    } else {
      horizontalOne(strip, starts, counts, weights, tapStride, channels, x, dst);
      horizontalOne(strip, starts, counts, weights, tapStride, channels, x + 1, dst);
    }
  }
  if (x < destination) horizontalOne(strip, starts, counts, weights, tapStride, channels, x, dst);
}

__attribute__((target("avx2"))) void PixelKernels_horizontalAVX2(
    const int16_t *strip, size_t stripSamples, const int32_t *starts, const int32_t *counts,
    size_t destination, const int16_t *weights, size_t tapStride, int channels, int16_t *dst) {
  switch (channels) {
  case 1: horizontal(strip, stripSamples, starts, counts, destination, weights, tapStride, 1, dst); break;
  case 3: horizontal(strip, stripSamples, starts, counts, destination, weights, tapStride, 3, dst); break;
  default: horizontal(strip, stripSamples, starts, counts, destination, weights, tapStride, 4, dst); break;
  }
}

#else

int PixelKernels_hasAVX2(void) { return 0; }

void PixelKernels_horizontalAVX2(const int16_t *strip, size_t stripSamples, const int32_t *starts,
                                 const int32_t *counts, size_t destination, const int16_t *weights,
                                 size_t tapStride, int channels, int16_t *dst) {
  (void)strip, (void)stripSamples, (void)starts, (void)counts, (void)destination, (void)weights;
  (void)tapStride, (void)channels, (void)dst;
  __builtin_trap();  // never called: PixelKernels_hasAVX2() is 0 here
}

void PixelKernels_verticalAVX2(const uint8_t *const *rows, int taps, const int16_t *weights,
                               size_t samples, int16_t *dst) {
  (void)rows, (void)taps, (void)weights, (void)samples, (void)dst;
  __builtin_trap();  // never called: PixelKernels_hasAVX2() is 0 here
}

#endif
