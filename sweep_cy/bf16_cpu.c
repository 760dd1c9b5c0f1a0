/* float32 <-> bfloat16 bit patterns; see bf16_cpu.h. */
#include "bf16_cpu.h"

void sweep_to_bf16(const uint32_t *src, uint16_t *dst, long long n) {
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) {
    const uint32_t b = src[i];
    /* NaN: keep the sign and the top payload bits, set the quiet bit (a
     * payload only in the dropped bits would otherwise become infinity). */
    const uint32_t nan = (b >> 16) | 0x0040u;
    const uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
    dst[i] = (uint16_t)((b & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
  }
}

void sweep_from_bf16(const uint16_t *src, uint32_t *dst, long long n) {
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) dst[i] = (uint32_t)src[i] << 16;
}
