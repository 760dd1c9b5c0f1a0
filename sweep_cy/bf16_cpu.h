/*
 * float32 <-> bfloat16 for snapshot compression (sweep/_storage.py), on
 * every OpenMP thread: the NumPy formulation makes several passes over the
 * data on one thread, which made a forward pass with bf16 storage ~8x
 * slower than one with float32 storage.  The same rounding as the NumPy
 * reference (to_bf16): the upper 16 bits of the float32, rounded to
 * nearest with ties to even; NaN stays a quiet NaN with its sign.
 */
#ifndef SWEEP_BF16_CPU_H
#define SWEEP_BF16_CPU_H

#include <stdint.h>

void sweep_to_bf16(const uint32_t *src, uint16_t *dst, long long n);
void sweep_from_bf16(const uint16_t *src, uint32_t *dst, long long n);

#endif
