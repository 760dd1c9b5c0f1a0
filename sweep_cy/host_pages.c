/* The zeroing of resident pages that hold data; see host_pages.h. */
#include "host_pages.h"

#include <stdint.h>
#include <string.h>

long long sweep_zero_written_pages(char *base, long long npages, long long page,
                                   const unsigned char *resident, int n_threads) {
  long long written = 0;
  const long long words = page / 8;
  if (n_threads < 1) n_threads = 1;
#pragma omp parallel for num_threads(n_threads) schedule(static) reduction(+ : written) \
    if (n_threads > 1)
  for (long long p = 0; p < npages; ++p) {
    if (!(resident[p] & 1)) continue;
    uint64_t *w = (uint64_t *)(base + p * page);
    uint64_t any = 0;
    for (long long i = 0; i < words; ++i) any |= w[i];
    if (any) {
      memset(w, 0, (size_t)page);
      ++written;
    }
  }
  return written;
}
