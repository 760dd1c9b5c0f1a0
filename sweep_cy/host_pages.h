/*
 * The zeroing of a reused host mapping (sweep/_hostmem.py, _zero_resident):
 * of the pages mincore reports resident, those holding a non-zero byte are
 * written with zeros, each page read and written while in the caches, on
 * the call's OpenMP threads.  NumPy took a pass of `any` per run of
 * resident pages, then a second pass of writes, on one thread.
 */
#ifndef SWEEP_HOST_PAGES_H
#define SWEEP_HOST_PAGES_H

/* Zero the pages p of [base, base + npages * page) with resident[p] & 1 that
 * hold a non-zero byte (page: bytes, a multiple of 64); return how many. */
long long sweep_zero_written_pages(char *base, long long npages, long long page,
                                   const unsigned char *resident, int n_threads);

#endif
