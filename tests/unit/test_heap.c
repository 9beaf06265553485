/* test_heap.c — the symmetric heap allocator against a reference model (a granule bitmap with
 * first-fit), under randomized alloc/free sequences, plus its error paths. */
#include "core/symheap.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

#define G XSI_HEAP_GRAIN

/* Reference: one byte per granule (1 = used); first-fit gives the lowest aligned fit. */
typedef struct ref_heap {
  size_t ngr;
  unsigned char* map;
} ref_heap;

static int ref_alloc(ref_heap* r, size_t bytes, size_t align, size_t* off) {
  size_t len = (bytes + G - 1) / G, step = (align < G ? G : align) / G;
  for (size_t p = 0; p + len <= r->ngr; p += step) {
    size_t k = 0;
    while (k < len && !r->map[p + k])
      k++;
    if (k == len) {
      memset(r->map + p, 1, len);
      *off = p * G;
      return 1;
    }
  }
  return 0;
}

static void ref_free(ref_heap* r, size_t off, size_t len) {
  memset(r->map + off / G, 0, len / G);
}

/* The heap's invariants: sorted, coalesced free list; used + free tile the heap exactly. */
static int heap_consistent(const xsi_heap* h) {
  size_t total = 0;
  for (size_t i = 0; i < h->nfree; i++) {
    if (h->free_list[i].len == 0 || h->free_list[i].off % G) return 0;
    if (i && h->free_list[i - 1].off + h->free_list[i - 1].len >= h->free_list[i].off) return 0;
    total += h->free_list[i].len;
  }
  for (size_t i = 0; i < h->nused; i++) {
    if (i && h->used[i - 1].off + h->used[i - 1].len > h->used[i].off) return 0;
    total += h->used[i].len;
  }
  return total == h->size;
}

static void test_random_vs_reference(void) {
  int total_exhausted = 0;
  unsigned long long seed = 0x9e3779b97f4a7c15ull;
  for (int round = 0; round < 20; round++) {
    size_t size = (size_t)(64 + xt_rand_u64(&seed) % 4096) * G;
    xsi_heap a, b; /* two "ranks" running the same sequence */
    XT_CHECK(xsi_heap_init(&a, size) == XS_OK);
    XT_CHECK(xsi_heap_init(&b, size) == XS_OK);
    ref_heap ref = {size / G, (unsigned char*)calloc(size / G, 1)};
    size_t live_off[512], live_len[512];
    int nlive = 0, mismatches = 0, bad_align = 0, bad_state = 0, exhausted = 0;
    for (int step = 0; step < 4000; step++) {
      int do_alloc = nlive == 0 || (nlive < 512 && xt_rand_u64(&seed) % 100 < 55);
      if (do_alloc) {
        size_t bytes = 1 + xt_rand_u64(&seed) % (size / 16);
        if (xt_rand_u64(&seed) % 8 == 0) bytes = 1 + xt_rand_u64(&seed) % 300;
        size_t align = (size_t)1 << (xt_rand_u64(&seed) % 17); /* 1 .. 64 KiB */
        if (xt_rand_u64(&seed) % 4 == 0) align = 0;
        size_t off_a = 0, off_b = 0, off_r = 0;
        xs_result ra = xsi_heap_alloc(&a, bytes, align, &off_a);
        xs_result rb = xsi_heap_alloc(&b, bytes, align, &off_b);
        int ok_r = ref_alloc(&ref, bytes, align ? align : G, &off_r);
        if (ra != rb || (ra == XS_OK && off_a != off_b)) mismatches++;
        if ((ra == XS_OK) != ok_r || (ok_r && off_a != off_r)) mismatches++;
        exhausted += ra == XS_ERR_EXHAUSTED;
        if (ra != XS_OK && ra != XS_ERR_EXHAUSTED) mismatches++;
        if (ra == XS_OK) {
          if (align && off_a % align) bad_align++;
          if (off_a + bytes > size) bad_align++;
          live_off[nlive] = off_a;
          live_len[nlive++] = xsi_heap_size_of(&a, off_a);
        }
      } else {
        int k = (int)(xt_rand_u64(&seed) % (unsigned long long)nlive);
        XT_CHECK(xsi_heap_free(&a, live_off[k]) == XS_OK);
        XT_CHECK(xsi_heap_free(&b, live_off[k]) == XS_OK);
        ref_free(&ref, live_off[k], live_len[k]);
        /* freeing it again is a double free */
        if (xsi_heap_free(&a, live_off[k]) != XS_ERR_STATE) bad_state++;
        live_off[k] = live_off[--nlive];
        live_len[k] = live_len[nlive];
      }
      if (!heap_consistent(&a)) mismatches++;
    }
    XT_CHECK_MSG(mismatches == 0, "round %d: %d mismatches", round, mismatches);
    XT_CHECK(bad_align == 0 && bad_state == 0);
    total_exhausted += exhausted;
    /* free everything: the heap must coalesce back to one span */
    while (nlive > 0) {
      nlive--;
      XT_CHECK(xsi_heap_free(&a, live_off[nlive]) == XS_OK);
    }
    XT_EQ_INT(a.nfree, 1);
    XT_EQ_INT(a.free_list[0].len, size);
    XT_EQ_INT(a.bytes_used, 0);
    free(ref.map);
    xsi_heap_fini(&a);
    xsi_heap_fini(&b);
  }
  XT_CHECK_MSG(total_exhausted > 0, "the sequences never exhausted the heap");
}

static void test_errors(void) {
  xsi_heap h;
  size_t off = 12345;
  XT_EQ_INT(xsi_heap_init(NULL, 4096), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xsi_heap_init(&h, 100), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xsi_heap_init(&h, 16 * G), XS_OK);
  XT_EQ_INT(xsi_heap_alloc(&h, 0, 0, &off), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xsi_heap_alloc(&h, 16, 3, &off), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xsi_heap_alloc(&h, 16, 2 * XSI_HEAP_MAX_ALIGN, &off), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xsi_heap_alloc(&h, 16, 0, NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(off, 12345);
  XT_EQ_INT(xsi_heap_alloc(&h, 17 * G, 0, &off), XS_ERR_EXHAUSTED);
  XT_CHECK(strstr(xs_last_error(), "requested 4352 bytes") != NULL);
  XT_CHECK(strstr(xs_last_error(), "largest free block 4096") != NULL);
  XT_EQ_INT(xsi_heap_alloc(&h, (size_t)-1, 0, &off), XS_ERR_EXHAUSTED);
  size_t a, b, c;
  XT_EQ_INT(xsi_heap_alloc(&h, 1, 0, &a), XS_OK);
  XT_EQ_INT(xsi_heap_alloc(&h, 2 * G, 0, &b), XS_OK);
  XT_EQ_INT(xsi_heap_alloc(&h, G, 0, &c), XS_OK);
  XT_EQ_INT(a, 0);
  XT_EQ_INT(b, G);
  XT_EQ_INT(c, 3 * G);
  XT_EQ_INT(xsi_heap_free(&h, 16 * G), XS_ERR_INVALID_ARG); /* outside */
  XT_EQ_INT(xsi_heap_free(&h, b + 16), XS_ERR_INVALID_ARG); /* misaligned */
  XT_EQ_INT(xsi_heap_free(&h, b + G), XS_ERR_INVALID_ARG);  /* inside an allocation */
  XT_CHECK(strstr(xs_last_error(), "inside the allocation") != NULL);
  XT_EQ_INT(xsi_heap_free(&h, 8 * G), XS_ERR_STATE); /* never allocated */
  XT_EQ_INT(xsi_heap_free(&h, b), XS_OK);
  XT_EQ_INT(xsi_heap_free(&h, b), XS_ERR_STATE); /* double free */
  XT_CHECK(strstr(xs_last_error(), "double free") != NULL);
  /* a hole of 2 grains: a 2-grain request reuses it, a 3-grain one goes past c */
  size_t d, e;
  XT_EQ_INT(xsi_heap_alloc(&h, 3 * G, 0, &d), XS_OK);
  XT_EQ_INT(d, 4 * G);
  XT_EQ_INT(xsi_heap_alloc(&h, 2 * G, 0, &e), XS_OK);
  XT_EQ_INT(e, G);
  /* alignment above the grain */
  size_t f;
  XT_EQ_INT(xsi_heap_alloc(&h, 1, 8 * G, &f), XS_OK);
  XT_EQ_INT(f, 8 * G);
  size_t fb, big;
  xsi_heap_stats(&h, &fb, &big);
  XT_EQ_INT(fb, 16 * G - 8 * G);
  XT_EQ_INT(big, 7 * G);
  XT_EQ_INT(xsi_heap_free(&h, a), XS_OK);
  XT_EQ_INT(xsi_heap_free(&h, c), XS_OK);
  XT_EQ_INT(xsi_heap_free(&h, e), XS_OK);
  XT_EQ_INT(xsi_heap_free(&h, f), XS_OK);
  XT_EQ_INT(xsi_heap_free(&h, d), XS_OK);
  XT_EQ_INT(h.nfree, 1);
  xsi_heap_fini(&h);
  xsi_heap_fini(&h);
  xsi_heap_fini(NULL);
  XT_EQ_INT(xsi_heap_alloc(&h, 16, 0, &off), XS_ERR_INVALID_ARG); /* after fini */
}

int main(void) {
  XT_RUN(test_errors);
  XT_RUN(test_random_vs_reference);
  return XT_END();
}
