/* Byte offsets of the outer axes' taps, shared by the vector rows of the
 * acoustic family (cpu_vec.h) and of elastic's 3D rows (elastic_cpu_impl.h);
 * included once per unit, after cpu_unit.h.
 *
 * Per outer axis d (z and y): +-stride and +-3 strides; the other taps are
 * these times 2 or 4, so reaches up to 4.  A field's taps then address as
 * row pointer + offset * scale, so a vector needs the row pointer and these
 * four registers per axis.  Through u + i + k * stride the compiler kept one
 * pointer per tap (16 in 3D, plus psi's) and reloaded them from the stack
 * every vector: 7 of 72 instructions of the 3D plain acoustic loop, 13-20 of
 * ~122 with one CPML axis, 24-31 of ~178 with two (now 1, 6-7 and 12-16).
 * The row loops hide the offsets from the compiler once per vector
 * (SWEEP_TAPS_HIDE), which stops it from deriving per-tap pointers again.
 */
#ifndef SWEEP_CPU_TAPS_H
#define SWEEP_CPU_TAPS_H

typedef struct SWEEP_FN(taps) {
  sweep_int p1[2], p3[2], m1[2], m3[2];
} SWEEP_FN(taps);

/* The offsets of a grid of strides (in elements) along axes 0 and 1, from
 * axis first on (the others 0). */
static inline __attribute__((always_inline)) SWEEP_FN(taps)
    SWEEP_FN(taps_of_strides)(const sweep_int *stride, const int first) {
  SWEEP_FN(taps) t = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
  for (int d = first; d < 2; ++d) {
    t.p1[d] = stride[d] * (sweep_int)sizeof(SWEEP_R);
    t.p3[d] = 3 * t.p1[d];
    t.m1[d] = -t.p1[d];
    t.m3[d] = -t.p3[d];
  }
  return t;
}

/* Hides the offsets' values from the compiler (an empty asm), once per
 * vector, so that it cannot derive per-tap pointers from them again. */
#define SWEEP_TAPS_HIDE(t)                                                            \
  __asm__("" : "+r"((t).p1[0]), "+r"((t).p3[0]), "+r"((t).m1[0]), "+r"((t).m3[0]),  \
          "+r"((t).p1[1]), "+r"((t).p3[1]), "+r"((t).m1[1]), "+r"((t).m3[1]))

/* Offset in bytes of tap k of outer axis d from the offsets tp. */
#define SWEEP_TAP_BYTES(tp, d, k)                                                 \
  ((k) == 1    ? (tp).p1[d]                                                       \
   : (k) == 2  ? 2 * (tp).p1[d]                                                   \
   : (k) == 3  ? (tp).p3[d]                                                       \
   : (k) == 4  ? 4 * (tp).p1[d]                                                   \
   : (k) == -1 ? (tp).m1[d]                                                       \
   : (k) == -2 ? 2 * (tp).m1[d]                                                   \
   : (k) == -3 ? (tp).m3[d]                                                       \
   : (k) == -4 ? 4 * (tp).m1[d]                                                   \
               : 0)

#endif
