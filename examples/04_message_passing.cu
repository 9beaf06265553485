/* 04_message_passing.cu — a mailbox with flags and credits, TMA bulk stores, and tracing.
 *
 * Rank r streams NMSG messages of MSG bytes to rank r+1 through SLOTS mailbox slots.
 *   producer CTA (block 0 of a rank)                 consumer CTA (block 1 of a rank)
 *     wait empty[slot] >= m-SLOTS+1   (credit)          wait full[slot] >= m+1      (acquire)
 *     build message m in shared memory                  check it word by word
 *     bulk store smem -> next's data[slot] (TMA)        empty[slot] = m+1 on prev   (release)
 *     wait for the bulk store, full[slot] = m+1 (release)
 * The consumer checks every message (a stale or torn message counts wrong words). With
 * XSTAGE_TRACE=file the kernel records tile/burst/wait spans; convert them with
 *   xstage trace file -o trace.json   (Perfetto)   or   -o trace.svg
 * A process that drives only some of the ranks (nccl: one) writes its own file, file.rank<r>
 * with r its first rank, so the ranks of one launch do not overwrite each other's trace.
 */
#include "common.cuh"

#define MSG 4096u
#define SLOTS 4
#define NMSG_DEFAULT 2000 /* XSTAGE_MESSAGES overrides (short runs under sanitizers) */

static __global__ void mailbox_kernel(xs_team team, int nmsg, char* data, uint64_t* full,
                                      uint64_t* empty, unsigned long long* wrong) {
  extern __shared__ __align__(128) unsigned char tile[];
  __shared__ unsigned long long bad;
  xs_team me = xs_team_for_block(&team, 2);
  int next = (me.rank + 1) % me.size, prev = (me.rank + me.size - 1) % me.size;
  if (threadIdx.x == 0) bad = 0;
  if (xs_team_block(2) == 0) { /* ---- producer: me -> next ---- */
    for (int m = 0; m < nmsg; m++) {
      int slot = m % SLOTS;
      if (m >= SLOTS) {
        xs_trace_block(&me, XS_TRACE_WAIT_BEGIN, 1);
        bool ok = xs_wait_until_block(&me, empty + slot, XS_CMP_GE, (uint64_t)(m - SLOTS + 1), 1);
        xs_trace_block(&me, XS_TRACE_WAIT_END, 1);
        if (!ok) return;
      }
      xs_trace_block(&me, XS_TRACE_TILE_BEGIN, (uint32_t)m);
      for (uint32_t i = threadIdx.x; i < MSG / 4; i += blockDim.x)
        ((uint32_t*)tile)[i] = ex_value(me.rank, m, i);
      __syncthreads();
      xs_trace_block(&me, XS_TRACE_TILE_END, (uint32_t)m);
      xs_trace_block(&me, XS_TRACE_BURST_BEGIN, MSG / 1024);
      xs_put_tile_bulk_block(&me, next, data + (size_t)slot * MSG, tile, MSG);
      xs_put_tile_bulk_wait_block(); /* written, and the tile may be rebuilt */
      xs_trace_block(&me, XS_TRACE_BURST_END, MSG / 1024);
      xs_signal_block(&me, next, full + slot, (uint64_t)(m + 1), XS_SIGNAL_SET);
    }
  } else { /* ---- consumer: prev -> me ---- */
    for (int m = 0; m < nmsg; m++) {
      int slot = m % SLOTS;
      xs_trace_block(&me, XS_TRACE_WAIT_BEGIN, 2);
      bool ok = xs_wait_until_block(&me, full + slot, XS_CMP_GE, (uint64_t)(m + 1), 2);
      xs_trace_block(&me, XS_TRACE_WAIT_END, 2);
      if (!ok) return;
      const uint32_t* msg = (const uint32_t*)xs_ptr_local(&me, data + (size_t)slot * MSG);
      unsigned long long b = 0;
      for (uint32_t i = threadIdx.x; i < MSG / 4; i += blockDim.x)
        b += msg[i] != ex_value(prev, m, i);
      if (b) atomicAdd(&bad, b);
      /* the __syncthreads inside orders every thread's reads before the credit */
      xs_signal_block(&me, prev, empty + slot, (uint64_t)(m + 1), XS_SIGNAL_SET);
    }
    __syncthreads();
    if (threadIdx.x == 0 && bad) atomicAdd(wrong, bad);
  }
}

int main(void) {
  const char* trace_path = getenv("XSTAGE_TRACE");
  const char* nm = getenv("XSTAGE_MESSAGES");
  int nmsg = nm && atoi(nm) > 0 ? atoi(nm) : NMSG_DEFAULT;
  xs_world* w = ex_world((size_t)8 << 20, trace_path ? (size_t)1 << 18 : 0);
  xs_world_info info;
  EX_CHECK(xs_world_info_get(&info, w));
  void *data, *full, *empty;
  EX_CHECK(xs_malloc(&data, w, (size_t)SLOTS * MSG, 0));
  EX_CHECK(xs_malloc(&full, w, sizeof(uint64_t) * SLOTS, 0));
  EX_CHECK(xs_malloc(&empty, w, sizeof(uint64_t) * SLOTS, 0));
  EX_CHECK(xs_world_memset(w, data, 0xEE, (size_t)SLOTS * MSG));
  EX_CHECK(xs_world_memset(w, full, 0, sizeof(uint64_t) * SLOTS));
  EX_CHECK(xs_world_memset(w, empty, 0, sizeof(uint64_t) * SLOTS));
  EX_CHECK(xs_world_barrier(w));
  unsigned long long* d_wrong[XS_MAX_RANKS];
  xs_launch_plan plan;
  EX_CHECK(xs_world_launch_plan(&plan, w, (const void*)mailbox_kernel, 256, MSG, 2));
  /* NOTE: every GPU's counter is allocated and zeroed before the first launch: once a rank's
   * kernel runs it waits for its peers, and an allocation on another GPU may synchronize with
   * it (peer mappings), which would hold back the launch that rank waits for. */
  for (int i = 0; i < plan.count; i++) {
    EX_CUDA(cudaSetDevice(plan.launch[i].device));
    EX_CUDA(cudaMalloc((void**)&d_wrong[i], sizeof(unsigned long long)));
    EX_CUDA(cudaMemset(d_wrong[i], 0, sizeof(unsigned long long)));
    EX_CUDA(cudaDeviceSynchronize());
  }
  for (int i = 0; i < plan.count; i++) {
    EX_CUDA(cudaSetDevice(plan.launch[i].device));
    mailbox_kernel<<<plan.launch[i].grid, 256, MSG, (cudaStream_t)plan.launch[i].stream>>>(
        plan.launch[i].team, nmsg, (char*)data, (uint64_t*)full, (uint64_t*)empty, d_wrong[i]);
    EX_CUDA(cudaGetLastError());
  }
  EX_CHECK(xs_world_sync(w));
  long wrong = 0;
  for (int i = 0; i < plan.count; i++) {
    unsigned long long h = 0;
    EX_CUDA(cudaSetDevice(plan.launch[i].device));
    EX_CUDA(cudaMemcpy(&h, d_wrong[i], sizeof h, cudaMemcpyDeviceToHost));
    EX_CUDA(cudaFree(d_wrong[i]));
    wrong += (long)h;
  }
  printf("%d messages of %u bytes per rank pair\n", nmsg, MSG);
  if (trace_path) {
    xs_trace_event* ev = NULL;
    size_t n = 0, dropped = 0;
    char path[1024];
    if (info.nlocal < info.size)
      snprintf(path, sizeof path, "%s.rank%d", trace_path, info.rank_first);
    else
      snprintf(path, sizeof path, "%s", trace_path);
    EX_CHECK(xs_world_trace_fetch(&ev, &n, &dropped, w));
    EX_CHECK(xs_trace_write(path, ev, n, XS_TRACE_FORMAT_RAW));
    printf("trace: %zu events (%zu dropped) in %s\n", n, dropped, path);
    free(ev);
  }
  return ex_finish(w, wrong, "04_message_passing");
}
