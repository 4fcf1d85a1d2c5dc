/* The compiled kernels' thread pool (_pool.c): one set of worker threads for OpenBLAS's jobs and ours. */
#ifndef LUCID_POOL_H
#define LUCID_POOL_H
#include <stddef.h>

/* Slice `part` of a split loop: items lo..hi of whatever `arg` describes. */
typedef void (*lucid_part_fn)(void *arg, ptrdiff_t lo, ptrdiff_t hi, int part);

/* Run fn(arg, lo, hi, part) over `parts` consecutive slices of range(first, end) (cut at multiples of `align` from
 * `first`), slice 0 on the calling thread and the others on the pool's workers; returns when all are done. With
 * parts <= 1, a busy pool (another thread's split) or no threads, the whole range runs on the calling thread. */
void lucid_pool_for(lucid_part_fn fn, void *arg, ptrdiff_t first, ptrdiff_t end, int parts, ptrdiff_t align);

#endif
