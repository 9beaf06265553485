/* symheap.c — first-fit symmetric heap over a sorted, coalesced free list (see symheap.h). */
#include "core/symheap.h"
#include "core/internal.h"

#include <stdlib.h>
#include <string.h>

static size_t round_up(size_t x, size_t a) {
  return (x + a - 1) / a * a;
}

/* Insert `s` at index i of a span array, growing it. */
static xs_result span_insert(xsi_span** arr, size_t* n, size_t* cap, size_t i, xsi_span s) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    xsi_span* p = (xsi_span*)realloc(*arr, nc * sizeof *p);
    if (!p) return xsi_set_error(XS_ERR_NO_MEMORY, "symmetric heap: out of host memory");
    *arr = p;
    *cap = nc;
  }
  memmove(*arr + i + 1, *arr + i, (*n - i) * sizeof **arr);
  (*arr)[i] = s;
  (*n)++;
  return XS_OK;
}

static void span_remove(xsi_span* arr, size_t* n, size_t i) {
  memmove(arr + i, arr + i + 1, (*n - i - 1) * sizeof *arr);
  (*n)--;
}

/* Index of the first span with off >= key (binary search). */
static size_t lower_bound(const xsi_span* arr, size_t n, size_t key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (arr[mid].off < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

xs_result xsi_heap_init(xsi_heap* h, size_t size) {
  XSI_ARG(h != NULL, "heap is NULL");
  memset(h, 0, sizeof *h);
  size = size / XSI_HEAP_GRAIN * XSI_HEAP_GRAIN;
  XSI_ARG(size >= XSI_HEAP_GRAIN, "heap size must be >= %zu bytes", XSI_HEAP_GRAIN);
  h->size = size;
  xsi_span all = {0, size};
  return span_insert(&h->free_list, &h->nfree, &h->cap_free, 0, all);
}

void xsi_heap_fini(xsi_heap* h) {
  if (!h) return;
  free(h->free_list);
  free(h->used);
  memset(h, 0, sizeof *h);
}

void xsi_heap_stats(const xsi_heap* h, size_t* free_bytes, size_t* largest_free) {
  size_t f = 0, big = 0;
  for (size_t i = 0; h && i < h->nfree; i++) {
    f += h->free_list[i].len;
    if (h->free_list[i].len > big) big = h->free_list[i].len;
  }
  if (free_bytes) *free_bytes = f;
  if (largest_free) *largest_free = big;
}

xs_result xsi_heap_alloc(xsi_heap* h, size_t bytes, size_t align, size_t* off) {
  XSI_ARG(h != NULL && h->size > 0, "heap is NULL or not initialised");
  XSI_ARG(off != NULL, "off is NULL");
  XSI_ARG(bytes > 0, "cannot allocate 0 bytes");
  if (align == 0) align = XSI_HEAP_GRAIN;
  XSI_ARG((align & (align - 1)) == 0, "alignment %zu is not a power of two", align);
  XSI_ARG(align <= XSI_HEAP_MAX_ALIGN, "alignment %zu exceeds the maximum %zu", align,
          XSI_HEAP_MAX_ALIGN);
  if (align < XSI_HEAP_GRAIN) align = XSI_HEAP_GRAIN;
  size_t len = bytes > h->size ? 0 : round_up(bytes, XSI_HEAP_GRAIN);
  for (size_t i = 0; len && i < h->nfree; i++) {
    xsi_span f = h->free_list[i];
    size_t start = round_up(f.off, align);
    if (start >= f.off + f.len || f.off + f.len - start < len) continue;
    /* NOTE: the used entry is inserted first so that a failure leaves the free list intact. */
    size_t u = lower_bound(h->used, h->nused, start);
    xsi_span s = {start, len};
    XSI_CHECK(span_insert(&h->used, &h->nused, &h->cap_used, u, s));
    size_t head = start - f.off, tail = f.off + f.len - (start + len);
    if (head && tail) {
      xsi_span t = {start + len, tail};
      xs_result r = span_insert(&h->free_list, &h->nfree, &h->cap_free, i + 1, t);
      if (r != XS_OK) {
        span_remove(h->used, &h->nused, u);
        return r;
      }
      h->free_list[i].len = head;
    } else if (head) {
      h->free_list[i].len = head;
    } else if (tail) {
      h->free_list[i].off = start + len;
      h->free_list[i].len = tail;
    } else {
      span_remove(h->free_list, &h->nfree, i);
    }
    h->bytes_used += len;
    *off = start;
    return XS_OK;
  }
  size_t fb, big;
  xsi_heap_stats(h, &fb, &big);
  return xsi_set_error(XS_ERR_EXHAUSTED,
                       "symmetric heap exhausted: requested %zu bytes (alignment %zu), %zu bytes "
                       "free of %zu, largest free block %zu bytes",
                       bytes, align, fb, h->size, big);
}

size_t xsi_heap_size_of(const xsi_heap* h, size_t off) {
  if (!h) return 0;
  size_t u = lower_bound(h->used, h->nused, off);
  return (u < h->nused && h->used[u].off == off) ? h->used[u].len : 0;
}

xs_result xsi_heap_free(xsi_heap* h, size_t off) {
  XSI_ARG(h != NULL && h->size > 0, "heap is NULL or not initialised");
  XSI_ARG(off < h->size, "pointer is outside the symmetric heap (offset %zu, heap %zu bytes)", off,
          h->size);
  XSI_ARG(off % XSI_HEAP_GRAIN == 0,
          "pointer at heap offset %zu is misaligned: allocations start at multiples of %zu", off,
          XSI_HEAP_GRAIN);
  size_t u = lower_bound(h->used, h->nused, off);
  if (u == h->nused || h->used[u].off != off) {
    if (u > 0 && h->used[u - 1].off + h->used[u - 1].len > off)
      return xsi_set_error(XS_ERR_INVALID_ARG,
                           "pointer at heap offset %zu is inside the allocation at offset %zu, "
                           "not at its start",
                           off, h->used[u - 1].off);
    return xsi_set_error(XS_ERR_STATE, "pointer at heap offset %zu is not allocated (double free?)",
                         off);
  }
  xsi_span s = h->used[u];
  size_t i = lower_bound(h->free_list, h->nfree, s.off);
  int join_prev = i > 0 && h->free_list[i - 1].off + h->free_list[i - 1].len == s.off;
  int join_next = i < h->nfree && s.off + s.len == h->free_list[i].off;
  if (join_prev && join_next) {
    h->free_list[i - 1].len += s.len + h->free_list[i].len;
    span_remove(h->free_list, &h->nfree, i);
  } else if (join_prev) {
    h->free_list[i - 1].len += s.len;
  } else if (join_next) {
    h->free_list[i].off = s.off;
    h->free_list[i].len += s.len;
  } else {
    XSI_CHECK(span_insert(&h->free_list, &h->nfree, &h->cap_free, i, s));
  }
  span_remove(h->used, &h->nused, u);
  h->bytes_used -= s.len;
  return XS_OK;
}
