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

#else

int PixelKernels_hasAVX2(void) { return 0; }

void PixelKernels_verticalAVX2(const uint8_t *const *rows, int taps, const int16_t *weights,
                               size_t samples, int16_t *dst) {
  (void)rows, (void)taps, (void)weights, (void)samples, (void)dst;
  __builtin_trap();  // never called: PixelKernels_hasAVX2() is 0 here
}

#endif
