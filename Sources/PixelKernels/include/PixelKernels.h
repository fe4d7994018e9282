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
