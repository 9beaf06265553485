/* symheap.h — the symmetric heap allocator (pure C, offsets only; no device memory here).
 *
 * A heap of `size` bytes is managed as offsets from its base. Allocation is first-fit over a
 * free list kept sorted by offset and fully coalesced (no two free spans touch), so the offset
 * an allocation gets depends only on the sequence of calls: every rank that runs the same
 * sequence gets the same offsets (the "symmetric" property the world relies on).
 *
 * Granularity and alignment: every offset and every span length is a multiple of
 * XSI_HEAP_GRAIN (256 B); alignments are powers of two in [XSI_HEAP_GRAIN, XSI_HEAP_MAX_ALIGN].
 */
#ifndef XSTAGE_CORE_SYMHEAP_H
#define XSTAGE_CORE_SYMHEAP_H

#include "xstage/xstage.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XSI_HEAP_GRAIN ((size_t)256)
#define XSI_HEAP_MAX_ALIGN ((size_t)65536)

typedef struct xsi_span {
  size_t off; /* bytes from the heap base; multiple of XSI_HEAP_GRAIN */
  size_t len; /* bytes; multiple of XSI_HEAP_GRAIN, > 0 */
} xsi_span;

typedef struct xsi_heap {
  size_t size;         /* managed bytes (multiple of XSI_HEAP_GRAIN) */
  xsi_span* free_list; /* sorted by off, coalesced: free_list[i].off + len < free_list[i+1].off */
  size_t nfree, cap_free;
  xsi_span* used; /* live allocations sorted by off (len = rounded length) */
  size_t nused, cap_used;
  size_t bytes_used; /* sum of used[i].len */
} xsi_heap;

/* Initialise an empty heap of `size` bytes (rounded down to the grain; must leave >= 1 grain).
 * XS_ERR_INVALID_ARG for a NULL heap or a too small size, XS_ERR_NO_MEMORY. */
xs_result xsi_heap_init(xsi_heap* h, size_t size);
/* Release the bookkeeping (not the memory it describes). NULL-safe; h is left empty. */
void xsi_heap_fini(xsi_heap* h);

/* Allocate `bytes` (> 0) at an offset that is a multiple of `align` (0 = XSI_HEAP_GRAIN;
 * otherwise a power of two <= XSI_HEAP_MAX_ALIGN; smaller ones are raised to the grain).
 * The first fitting position in offset order is taken. XS_ERR_EXHAUSTED (detail: requested,
 * free, largest free) when nothing fits; *off is untouched on failure. */
xs_result xsi_heap_alloc(xsi_heap* h, size_t bytes, size_t align, size_t* off);

/* Free the allocation that starts at `off`, coalescing with free neighbours.
 * XS_ERR_INVALID_ARG: off outside the heap, not a multiple of the grain, or inside (not at the
 * start of) a live allocation. XS_ERR_STATE: off is not allocated (double free). */
xs_result xsi_heap_free(xsi_heap* h, size_t off);

/* Size of the live allocation starting at `off` (rounded), or 0 when there is none. */
size_t xsi_heap_size_of(const xsi_heap* h, size_t off);

/* Free bytes in total and in the largest free span. */
void xsi_heap_stats(const xsi_heap* h, size_t* free_bytes, size_t* largest_free);

#ifdef __cplusplus
}
#endif
#endif
