// Hot pixel loops in C where a wider vector unit than the baseline pays, chosen at run time.
//
// Swift's SIMD types compile to the target's baseline (SSE2 on x86-64), and a Swift function
// cannot ask for AVX2 on its own. These kernels are compiled for AVX2 and called only when the
// CPU has it (`PixelKernels_hasAVX2`); every one computes exactly what the Swift loop it stands
// in for computes, bit for bit (tested), so an output never depends on the machine.
#pragma once
#include <stddef.h>
#include <stdint.h>

// 1 when the CPU has AVX2 (x86-64 only; 0 elsewhere).
int PixelKernels_hasAVX2(void);

// The Lanczos vertical pass of `LanczosKernels` for one destination row: for each of `samples`
// samples i, dst[i] = (taps/2 + Σk mulhi((rows[k][i] − 128) · 256, weights[k])) · 2 in wrapping
// 16-bit arithmetic, where mulhi is the high half of the 32-bit product (pmulhw). AVX2 only:
// call when PixelKernels_hasAVX2() is 1.
void PixelKernels_verticalAVX2(const uint8_t *const *rows, int taps, const int16_t *weights,
                               size_t samples, int16_t *dst);

// The Lanczos horizontal pass of `LanczosKernels` for one group of 8 rows held sample-major
// (`strip`: for each sample, its 8 rows' values; `stripSamples` samples may be read): for each
// destination pixel x and channel c, the 8 lanes of dst[(x · channels + c) · 8 …] are
// clamp(((16 + counts[x]/2 + Σk mulhi(strip sample (starts[x] + k) · channels + c,
// weights[(x · tapStride + k) · 8 …])) >> 5) + 128, 0, 255) in wrapping 16-bit arithmetic, k over
// the window rounded up to an even count (`weights` holds each tap's weight 8 times and zeros
// past each window, up to `tapStride` taps). `channels` is 1, 3 or 4. AVX2 only: call when
// PixelKernels_hasAVX2() is 1.
void PixelKernels_horizontalAVX2(const int16_t *strip, size_t stripSamples, const int32_t *starts,
                                 const int32_t *counts, size_t destination, const int16_t *weights,
                                 size_t tapStride, int channels, int16_t *dst);
