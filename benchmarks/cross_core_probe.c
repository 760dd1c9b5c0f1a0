// Cross-core probe: do CPUs 0 and 1 share a last-level cache right now?
//
// Prints the round trip of one cache line between a thread pinned to CPU 0
// and one pinned to CPU 1, and the rate at which CPU 0 reads SIZE KiB that
// CPU 1 has just written against the rate for SIZE KiB it wrote itself.
// On the 2-vCPU benchmark VM (AMD EPYC) the answer changes every few
// seconds: ~80-130 ns and about the same rates (the host runs both vCPUs
// on cores of one L3), or ~365-395 ns and a third of the rate from the
// other core (cores under different L3s).  The pipelined 2D temporal
// blocking (cpu_phased.h, SWEEP_NDIM == 2 tb_forward) hands every row of
// the fields from one thread to the other once per chunk, so it runs
// 15-30 % slower in the second state (benchmarks/README.md).
//
//   gcc -O3 -ffast-math -march=native -pthread cross_core_probe.c -o probe && ./probe 2048
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 200000 /* round trips */
static _Alignas(64) _Atomic long flag;
static _Alignas(64) _Atomic int phase;
static size_t bytes = 4 << 20;
static double *buf;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void pin(int c) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(c, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *other(void *a) {
  (void)a;
  pin(1);
  for (long i = 0; i < N; ++i) {
    while (atomic_load(&flag) != 2 * i + 1) {
    }
    atomic_store(&flag, 2 * i + 2);
  }
  for (int r = 0; r < 5; ++r) { /* write the buffer, hand it over */
    while (atomic_load(&phase) != 2 * r + 1) {
    }
    for (size_t k = 0; k < bytes / 8; ++k) buf[k] = k + r;
    atomic_store(&phase, 2 * r + 2);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) bytes = (size_t)atol(argv[1]) << 10;
  buf = aligned_alloc(4096, bytes);
  memset(buf, 0, bytes);
  pthread_t th;
  pthread_create(&th, NULL, other, NULL);
  pin(0);
  double t0 = now();
  for (long i = 0; i < N; ++i) {
    atomic_store(&flag, 2 * i + 1);
    while (atomic_load(&flag) != 2 * i + 2) {
    }
  }
  const double rt = (now() - t0) / N * 1e9;
  double remote = 1e9, local = 1e9, s = 0;
  for (int r = 0; r < 5; ++r) {
    atomic_store(&phase, 2 * r + 1);
    while (atomic_load(&phase) != 2 * r + 2) {
    }
    t0 = now();
    for (size_t k = 0; k < bytes / 8; ++k) s += buf[k];
    double d = now() - t0;
    if (d < remote) remote = d;
    for (size_t k = 0; k < bytes / 8; ++k) buf[k] = k - r;
    t0 = now();
    for (size_t k = 0; k < bytes / 8; ++k) s += buf[k];
    d = now() - t0;
    if (d < local) local = d;
  }
  pthread_join(th, NULL);
  printf("round trip %.0f ns | read %zu KB written by other core %.2f GB/s, by this core %.2f "
         "GB/s (%g)\n",
         rt, bytes >> 10, bytes / remote / 1e9, bytes / local / 1e9, s > 0 ? 0.0 : 1.0);
  free(buf);
  return 0;
}
