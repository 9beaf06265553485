/* test_world_emulated.cu — the emulated world on one GPU, W = 2, 4, 8: all-gather and
 * all-to-all byte-exact (HBM and host-mapped heaps), the device barrier, a missing signal that
 * must time out and be reported by xs_world_status (rank, location, flag) without hanging, the
 * trace recorder, and the launch plan's residency check. */
#include "test_world_kernels.cuh"


static xs_world* make_world(int W, xs_mem_kind mem, uint64_t timeout_ns, size_t trace) {
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  cfg.ranks = W;
  cfg.mem = mem;
  cfg.heap_bytes = (size_t)16 << 20;
  cfg.timeout_ns = timeout_ns;
  cfg.trace_events = trace;
  xs_world* w = NULL;
  xs_result r = xs_world_create_emulated(&w, &cfg);
  XT_CHECK_MSG(r == XS_OK, "create W=%d: %s: %s", W, xs_strerror(r), xs_last_error());
  return w;
}

static void test_collectives(void) {
  const int Ws[3] = {2, 4, 8};
  for (int k = 0; k < 3; k++) {
    xs_world* w = make_world(Ws[k], XS_MEM_DEVICE, 2000000000ull, 0);
    if (!w) continue;
    XT_CHECK(tw_run_collectives(w, 65536 + 16 * 7, 4, 11u + (uint32_t)k) == 0);
    XT_CHECK(tw_run_collectives(w, 16, 1, 99u) == 0); /* one 16-byte chunk */
    XT_EQ_INT(xs_world_destroy(w), XS_OK);
  }
  for (int k = 0; k < 2; k++) {
    xs_world* w = make_world(Ws[k], XS_MEM_HOST_MAPPED, 2000000000ull, 0);
    if (!w) continue;
    XT_CHECK(tw_run_collectives(w, 16384, 2, 5u) == 0);
    XT_EQ_INT(xs_world_destroy(w), XS_OK);
  }
}

/* Each iteration: every CTA writes `it` into its slot on every rank, barrier, checks the slots
 * of every rank for its CTA index, barrier (so nobody overwrites a slot still being read). */
static __global__ void barrier_kernel(xs_team team, int bpr, uint32_t* slots, int iters,
                                      unsigned* errors) {
  xs_team me = xs_team_for_block(&team, bpr);
  int blk = xs_team_block(bpr);
  for (int it = 1; it <= iters; it++) {
    if ((int)threadIdx.x < me.size) {
      uint32_t* dst = (uint32_t*)xs_ptr_to_peer(&me, slots + me.rank * bpr + blk, (int)threadIdx.x);
      *(volatile uint32_t*)dst = (uint32_t)it;
    }
    if (!xs_barrier_block(&me, (uint32_t)blk, 300)) return;
    if ((int)threadIdx.x < me.size) {
      uint32_t* mine = (uint32_t*)xs_ptr_local(&me, slots + threadIdx.x * bpr + blk);
      if (*(volatile uint32_t*)mine != (uint32_t)it) atomicAdd(errors, 1u);
    }
    if (!xs_barrier_block(&me, (uint32_t)blk, 301)) return;
  }
}

static void test_barrier(void) {
  const int Ws[3] = {2, 4, 8};
  for (int k = 0; k < 3; k++) {
    int W = Ws[k], bpr = 3;
    xs_world* w = make_world(W, XS_MEM_DEVICE, 2000000000ull, 0);
    if (!w) continue;
    void* slots = NULL;
    unsigned *d_err = NULL, err = 0;
    XT_EQ_INT(xs_malloc(&slots, w, sizeof(uint32_t) * (size_t)(W * bpr), 0), XS_OK);
    XT_EQ_INT(xs_world_memset(w, slots, 0, sizeof(uint32_t) * (size_t)(W * bpr)), XS_OK);
    XT_CHECK(cudaMalloc((void**)&d_err, sizeof err) == cudaSuccess);
    cudaMemset(d_err, 0, sizeof err);
    xs_launch_plan plan;
    XT_EQ_INT(xs_world_launch_plan(&plan, w, (const void*)barrier_kernel, 64, 0, bpr), XS_OK);
    for (int rep = 0; rep < 2; rep++) { /* barrier epochs carry over between launches */
      TW_LAUNCH(plan, barrier_kernel, 64, bpr, (uint32_t*)slots, 200, d_err);
      XT_EQ_INT(xs_world_sync(w), XS_OK);
    }
    cudaMemcpy(&err, d_err, sizeof err, cudaMemcpyDeviceToHost);
    xs_status_report st;
    XT_EQ_INT(xs_world_status(&st, w, 1), XS_OK);
    XT_CHECK_MSG(st.code == XS_OK, "W=%d: %s", W, st.message);
    XT_CHECK_MSG(err == 0, "W=%d: %u stale slots after a barrier", W, err);
    cudaFree(d_err);
    XT_EQ_INT(xs_free(w, slots), XS_OK);
    XT_EQ_INT(xs_world_destroy(w), XS_OK);
  }
}

/* Rank 1 waits (location 42) on a flag nobody sets; the others first idle 25 ms, then wait
 * (location 43) for rank 1's signal that never comes: they must give up fast. */
static __global__ void timeout_kernel(xs_team team, uint64_t* flags) {
  xs_team me = xs_team_for_block(&team, 1);
  if (me.rank == 1) {
    if (xs_wait_until_block(&me, flags + 0, XS_CMP_EQ, 1, 42))
      for (int p = 0; p < me.size; p++)
        xs_signal_block(&me, p, flags + 1, 1, XS_SIGNAL_SET);
  } else {
    uint64_t t0 = xs_globaltimer();
    while (xs_globaltimer() - t0 < 25000000ull)
      xs_nanosleep(1000);
    xs_wait_until_block(&me, flags + 1, XS_CMP_EQ, 1, 43);
  }
}

static void test_timeout(void) {
  xs_world* w = make_world(4, XS_MEM_DEVICE, 50000000ull /* 50 ms */, 0);
  if (!w) return;
  void* flags = NULL;
  XT_EQ_INT(xs_malloc(&flags, w, 16, 0), XS_OK);
  XT_EQ_INT(xs_world_memset(w, flags, 0, 16), XS_OK);
  xs_launch_plan plan;
  XT_EQ_INT(xs_world_launch_plan(&plan, w, (const void*)timeout_kernel, 32, 0, 1), XS_OK);
  double t0 = tw_wall_s();
  TW_LAUNCH(plan, timeout_kernel, 32, (uint64_t*)flags);
  XT_EQ_INT(xs_world_sync(w), XS_OK);
  double dt = tw_wall_s() - t0;
  XT_CHECK_MSG(dt < 3.0, "the kernel took %.2f s to give up", dt);
  xs_status_report st;
  XT_EQ_INT(xs_world_status(&st, w, 1), XS_OK);
  void* flag1 = NULL;
  XT_EQ_INT(xs_world_ptr(&flag1, w, flags, 1), XS_OK);
  XT_EQ_INT(st.code, XS_ERR_TIMEOUT);
  XT_EQ_INT(st.rank, 1);
  XT_EQ_INT(st.location, 42);
  XT_EQ_INT(st.cta, 1);
  XT_CHECK(st.flag == (uint64_t)(uintptr_t)flag1);
  XT_EQ_INT(st.expected, 1);
  XT_EQ_INT(st.observed, 0);
  XT_CHECK(st.count >= 1);
  XT_CHECK(strstr(st.message, "rank 1") && strstr(st.message, "location 42"));
  printf("     timeout report after %.3f s: %s\n", dt, st.message);
  XT_EQ_INT(xs_world_status(&st, w, 0), XS_OK); /* the reset cleared it */
  XT_EQ_INT(st.code, XS_OK);
  XT_EQ_INT(st.rank, -1);
  /* the world is still usable: clear the pads, run a good collective */
  XT_EQ_INT(xs_world_clear_signals(w), XS_OK);
  XT_EQ_INT(xs_free(w, flags), XS_OK);
  XT_CHECK(tw_run_collectives(w, 4096, 2, 3u) == 0);
  XT_EQ_INT(xs_world_destroy(w), XS_OK);
}

static __global__ void trace_kernel(xs_team team, int tiles) {
  xs_team me = xs_team_for_block(&team, 2);
  for (int t = 0; t < tiles; t++) {
    xs_trace_block(&me, XS_TRACE_TILE_BEGIN, (uint32_t)t);
    xs_trace_block(&me, XS_TRACE_BURST_BEGIN, 16);
    xs_trace_block(&me, XS_TRACE_BURST_END, 16);
    xs_trace_block(&me, XS_TRACE_TILE_END, (uint32_t)t);
  }
}

static void test_trace(void) {
  xs_world* w = make_world(2, XS_MEM_DEVICE, 2000000000ull, 4096);
  if (!w) return;
  xs_launch_plan plan;
  XT_EQ_INT(xs_world_launch_plan(&plan, w, (const void*)trace_kernel, 64, 0, 2), XS_OK);
  TW_LAUNCH(plan, trace_kernel, 64, 10);
  XT_EQ_INT(xs_world_sync(w), XS_OK);
  xs_trace_event* ev = NULL;
  size_t n = 0, dropped = 9;
  XT_EQ_INT(xs_world_trace_fetch(&ev, &n, &dropped, w), XS_OK);
  XT_EQ_INT(n, 4 * 40); /* 4 CTAs x 10 tiles x 4 events */
  XT_EQ_INT(dropped, 0);
  int sorted = 1, ranks[2] = {0, 0};
  for (size_t i = 0; i < n; i++) {
    if (i && ev[i].t_ns < ev[i - 1].t_ns) sorted = 0;
    if (ev[i].rank < 2) ranks[ev[i].rank]++;
    XT_CHECK(ev[i].rank == ev[i].cta / 2);
  }
  XT_CHECK(sorted && ranks[0] == 80 && ranks[1] == 80);
  XT_EQ_INT(xs_trace_write("/tmp/xstage_test_trace.json", ev, n, XS_TRACE_FORMAT_CHROME), XS_OK);
  free(ev);
  XT_EQ_INT(xs_world_trace_reset(w), XS_OK);
  XT_EQ_INT(xs_world_trace_fetch(&ev, &n, &dropped, w), XS_OK);
  XT_EQ_INT(n, 0);
  XT_EQ_INT(xs_world_destroy(w), XS_OK);
  /* a full buffer drops, counted */
  w = make_world(2, XS_MEM_DEVICE, 2000000000ull, 8);
  if (!w) return;
  XT_EQ_INT(xs_world_launch_plan(&plan, w, (const void*)trace_kernel, 64, 0, 2), XS_OK);
  TW_LAUNCH(plan, trace_kernel, 64, 5);
  XT_EQ_INT(xs_world_sync(w), XS_OK);
  XT_EQ_INT(xs_world_trace_fetch(&ev, &n, &dropped, w), XS_OK);
  XT_EQ_INT(n, 8);
  XT_EQ_INT(dropped, 80 - 8);
  free(ev);
  XT_EQ_INT(xs_world_destroy(w), XS_OK);
  /* tracing off: fetch says so */
  w = make_world(2, XS_MEM_DEVICE, 2000000000ull, 0);
  if (!w) return;
  XT_EQ_INT(xs_world_trace_fetch(&ev, &n, &dropped, w), XS_ERR_STATE);
  XT_EQ_INT(xs_world_destroy(w), XS_OK);
}

static void test_plan_and_heap(void) {
  xs_world* w = make_world(8, XS_MEM_DEVICE, 2000000000ull, 0);
  if (!w) return;
  xs_launch_plan plan;
  XT_EQ_INT(xs_world_launch_plan(&plan, w, (const void*)barrier_kernel, 1024, 0, 100000),
            XS_ERR_INVALID_ARG); /* 800k CTAs cannot be co-resident */
  XT_CHECK(strstr(xs_last_error(), "resident") != NULL);
  XT_EQ_INT(xs_world_launch_plan(&plan, w, NULL, 128, 0, 3), XS_OK);
  XT_EQ_INT(plan.count, 1);
  XT_EQ_INT(plan.launch[0].grid, 24);
  XT_EQ_INT(plan.launch[0].team.size, 8);
  XT_EQ_INT(plan.launch[0].team.emulated, 1);
  for (int r = 1; r < 8; r++)
    XT_CHECK((char*)plan.launch[0].team.heap[r] - (char*)plan.launch[0].team.heap[r - 1] ==
             (char*)plan.launch[0].team.heap[1] - (char*)plan.launch[0].team.heap[0]);
  void *a, *b, *pa;
  XT_EQ_INT(xs_malloc(&a, w, 100, 0), XS_OK);
  XT_EQ_INT(xs_malloc(&b, w, 100, 65536), XS_OK);
  XT_CHECK(((uintptr_t)b & 65535) == 0);
  XT_EQ_INT(xs_world_ptr(&pa, w, b, 7), XS_OK);
  XT_CHECK(((uintptr_t)pa & 65535) == 0); /* alignment holds on every rank */
  XT_EQ_INT(xs_free(w, b), XS_OK);
  XT_EQ_INT(xs_free(w, b), XS_ERR_STATE);
  XT_EQ_INT(xs_free(w, a), XS_OK);
  xs_world_info info;
  XT_EQ_INT(xs_world_info_get(&info, w), XS_OK);
  XT_EQ_INT(info.heap_used, 0);
  XT_EQ_INT(info.heap_largest_free, info.heap_bytes);
  XT_EQ_INT(xs_world_destroy(w), XS_OK);
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) XT_SKIP("no CUDA GPU");
  XT_RUN(test_plan_and_heap);
  XT_RUN(test_collectives);
  XT_RUN(test_barrier);
  XT_RUN(test_timeout);
  XT_RUN(test_trace);
  return XT_END();
}
