/* bench_attention.c — `xstage bench attention`: our attention forward, every version, and the
 * epilogue hook variants, with correctness counted in the same run (nccl-tests style #wrong).
 *
 *   xstage bench attention --B 1 --H 24 --S 4608 --d 128 [--Skv N] [--causal] [--version N]
 *                          [--hook none|map|hbm|host|hostmap|trickle|trickhbm|all] [--reps N]
 *                          [--profile P]
 *                          [--json]
 *
 * Rows: one per version (plain epilogue: O stored to its own [B, S, H, d] tensor), then for the
 * last version the hook variants: `map` = destination map onto a second HBM region, no flags
 * (what the map's stores cost); `hbm` = the same map plus a per-tile flag (release, system
 * scope; the issue's <= 2 % target); `host` = 8 destinations of S/8 tokens each, the first in
 * HBM and the other 7 in host-mapped memory (the Ulysses shape with W = 8, 7/8 of the output
 * crossing PCIe), also with flags; `hostmap` = the same without flags (what the flags cost);
 * `trickle` = hostmap with epilogue.trickle (each tile stored in 8 pieces spread over the next
 * tile's key/value steps); `trickhbm` = the trickle with the map in HBM (what the trickled
 * kernel's compute costs, with no PCIe).
 * FLOPs = 4 B H S Skv d, halved when causal.
 * The host rows also carry the X-Stage model's prediction of their vs_plain (xs_predict_fusion
 * with --profile, default the embedded h200-host; K = the persistent CTAs, one tile per burst of
 * 7/8 of a tile's bytes, the gap = the plain time per tile of a CTA, plus the stage's final drain,
 * as the kernel ends when its stores have landed): `lockstep` (every CTA storing at once),
 * `spread` (the CTAs' tile ends drifted apart) and `coupled` (a CTA computes its next tile only
 * once its stores have drained, as an SM with queued remote stores hardly loads: the prediction
 * for compute that reads memory, docs/model.md §10).
 * `vs_plain` of a hook row: 5 rounds of (plain batch, hook batch) back to back, the median of
 * the per-round time ratios, so clock or temperature drift between rows cancels; its `ms` is
 * the median hook batch.
 * `wrong`: elements differing from the plain epilogue (hooks, bitwise) or from version 1
 * beyond bf16 tolerance (other versions, when version 1 ran too; else NaN = unwritten elements).
 * cuDNN numbers come from bench/attention_cudnn.py, which runs this command.
 */
#include "cli/cli.h"
#include "cli/model_cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef XS_HAVE_CUDA
#include <cuda_runtime.h>

#define PAT_N ((size_t)1 << 20) /* elements in the random input pattern */
#define NHOOK 6                 /* map, hbm, host, hostmap, trickle, trickhbm */

typedef struct bench_row {
  int version;
  const char* hook;
  double ms, tflops, vs_plain;
  double pred_lock, pred_spread, pred_coupled; /* host rows: the model's vs_plain (else NAN) */
  long long wrong;
} bench_row;

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static float bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Mean time of one launch over a batch of `reps` back-to-back launches between two events
 * (host-side preparation overlaps the previous kernel, as in a model's forward). */
static xs_result time_batch(double* ms, const xs_attn_args* a, int reps, cudaEvent_t e0,
                            cudaEvent_t e1) {
  xs_result r = XS_OK;
  cudaEventRecord(e0, 0);
  for (int j = 0; j < reps && r == XS_OK; j++)
    r = xs_attention_forward(a);
  cudaEventRecord(e1, 0);
  cudaEventSynchronize(e1);
  float f = 0;
  cudaEventElapsedTime(&f, e0, e1);
  *ms = f / reps;
  return r;
}

/* Time of one launch: one warm-up (and the output the checks read), then `rounds` rounds; a
 * round times a batch of `a` and, when base is not NULL, a batch of `base` right before it.
 * *ms: the median batch of `a`; *ratio (base given): the median of base/a over the rounds.
 * reps <= 0: enough launches for about 0.1 s per batch (1..50). */
static xs_result time_forward(double* ms, double* ratio, const xs_attn_args* a,
                              const xs_attn_args* base, int reps, int rounds) {
  cudaEvent_t e0, e1;
  double t[8], q[8];
  xs_result r = xs_attention_forward(a);
  if (r != XS_OK) return r;
  if (cudaDeviceSynchronize() != cudaSuccess) return XS_ERR_CUDA;
  if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
    return XS_ERR_CUDA;
  if (rounds > 8) rounds = 8;
  if (reps <= 0) {
    double one = 0;
    r = time_batch(&one, a, 1, e0, e1);
    reps = one > 0 ? (int)(100.0 / one) : 50;
    reps = reps < 1 ? 1 : reps > 50 ? 50 : reps;
  }
  for (int i = 0; i < rounds && r == XS_OK; i++) {
    double tb = 0;
    if (base) r = time_batch(&tb, base, reps, e0, e1);
    if (r == XS_OK) r = time_batch(&t[i], a, reps, e0, e1);
    q[i] = t[i] > 0 ? tb / t[i] : 0;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  if (r != XS_OK) return r;
  if (cudaDeviceSynchronize() != cudaSuccess) return XS_ERR_CUDA;
  qsort(t, rounds, sizeof t[0], cmp_double);
  qsort(q, rounds, sizeof q[0], cmp_double);
  *ms = t[rounds / 2];
  if (ratio) *ratio = q[rounds / 2];
  return XS_OK;
}

/* Elements of got (host copy) differing from ref beyond bf16 tolerance. */
/* The X-Stage model's vs_plain for a host row: K = the persistent CTAs (grid = min(tiles, SMs),
 * as the kernel launches), each CTA's tile one burst of 7/8 of the tile's bytes (7 of 8 shards are
 * host-mapped), the gap = the plain time of one of a CTA's tiles. */
static void predict_host(bench_row* row, const xs_link_profile* prof, const xs_attn_args* a,
                         int64_t nt, double plain_ms) {
  int dev = 0, sms = 0;
  if (plain_ms <= 0 || cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
    return;
  int64_t ctas = nt < sms ? nt : sms, per = (nt + ctas - 1) / ctas;
  xs_workload w = XS_WORKLOAD_INITIALIZER;
  snprintf(w.name, sizeof w.name, "attention H=%d S=%d", a->H, a->S);
  snprintf(w.kind, sizeof w.kind, "ulysses");
  w.K = (int)ctas;
  w.bytes_per_tile = 7.0 / 8.0 * XS_ATTN_TILE_M * a->head_dim * 2;
  w.compute_ns_per_tile = plain_ms * 1e6 / (double)per;
  w.tiles_per_producer = per;
  xs_fusion_prediction fp;
  if (xs_predict_fusion(&fp, prof, &w) != XS_OK) return;
  /* the kernel's time ends when its last stores have landed: + the stage's drain */
  row->pred_lock = fp.compute_ns / (fp.fused_ns + fp.drain_ns);
  row->pred_spread = fp.compute_ns / (fp.fused_spread_ns + fp.drain_ns);
  row->pred_coupled = fp.compute_ns / (fp.fused_coupled_ns + fp.drain_coupled_ns);
}

static long long count_off(const uint16_t* got, const uint16_t* ref, size_t n) {
  long long bad = 0;
  for (size_t i = 0; i < n; i++) {
    float g = bf2f(got[i]), w = bf2f(ref[i]);
    if (!(fabsf(g - w) <= 8e-3f + 2e-2f * fabsf(w))) bad++;
  }
  return bad;
}

int cli_bench_attention(int argc, char** argv) {
  static cli_opt opts[] = {
      {"B", "N", "batch (default 1)", NULL},
      {"H", "N", "heads (default 24)", NULL},
      {"S", "N", "query tokens (default 4608)", NULL},
      {"Skv", "N", "key/value tokens (default S)", NULL},
      {"d", "N", "head dim, 64 or 128 (default 128)", NULL},
      {"causal", NULL, "causal mask (top-left)", NULL},
      {"version", "N", "0 = every version (default), else 1..2", NULL},
      {"hook", "KIND",
       "none, map, hbm, host, hostmap, trickle, trickhbm or all (default all): epilogue "
       "variants",
       NULL},
      {"reps", "N", "launches per timed batch, 3 batches (default: ~0.1 s each)", NULL},
      {"profile", "P", "link profile for the host rows' prediction (default h200-host)", NULL},
      {"json", NULL, "print one JSON object instead of the table", NULL},
  };
  cli_cmd c =
      CLI_CMD("bench attention", "attention forward: TFLOP/s per version and hook", "", opts, 0, 0);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  long B, H, S, Skv, d, ver, reps;
  if (cli_get_long(&c, "B", 1, 1, 1 << 20, &B) || cli_get_long(&c, "H", 24, 1, 1 << 20, &H) ||
      cli_get_long(&c, "S", 4608, 1, 1 << 24, &S) || cli_get_long(&c, "Skv", S, 1, 1 << 24, &Skv) ||
      cli_get_long(&c, "d", 128, 64, 128, &d) ||
      cli_get_long(&c, "version", 0, 0, XS_ATTN_VERSIONS, &ver) ||
      cli_get_long(&c, "reps", 0, 0, 1000, &reps))
    return 2;
  if (d != 64 && d != 128) return cli_error(&c, "--d must be 64 or 128");
  const char* hook = cli_get_str(&c, "hook", "all");
  int all = !strcmp(hook, "all");
  static const char* const hook_names[NHOOK] = {"map",     "hbm",     "host",
                                                "hostmap", "trickle", "trickhbm"};
  int do_hook[NHOOK], any_hook = 0;
  for (int i = 0; i < NHOOK; i++)
    any_hook += do_hook[i] = all || !strcmp(hook, hook_names[i]);
  if (!any_hook && strcmp(hook, "none"))
    return cli_error(&c, "--hook: none, map, hbm, host, hostmap, trickle, trickhbm or all");
  xs_link_profile prof;
  if (mcli_profile(&c, cli_get_str(&c, "profile", NULL), "h200-host", &prof)) return 1;
  int causal = cli_flag(&c, "causal"), json = cli_flag(&c, "json");
  char gpu[256];
  if (!cli_have_gpu(gpu, sizeof gpu)) {
    fprintf(stderr, "xstage bench attention: no GPU\n");
    return 1;
  }

  size_t nq = (size_t)B * S * H * d, nkv = (size_t)B * Skv * H * d;
  double flops = 4.0 * B * H * (double)S * Skv * d * (causal ? 0.5 : 1.0);
  void *q = NULL, *k = NULL, *v = NULL, *o = NULL, *o2 = NULL, *hostbuf = NULL;
  uint32_t* flags = NULL;
  uint16_t *ref = NULL, *plain = NULL, *got = NULL, *pat = NULL;
  bench_row rows[XS_ATTN_VERSIONS + NHOOK];
  double plain_ms = 0; /* the last version's plain time (the host rows' prediction) */
  int nrows = 0, ret = 1;
  xs_result r = XS_OK;
  xs_attn_args a = XS_ATTN_ARGS_INITIALIZER;
  a.B = (int)B;
  a.H = (int)H;
  a.S = (int)S;
  a.Skv = (int)Skv;
  a.head_dim = (int)d;
  a.causal = causal;
  int64_t nt = 0;
  xs_attention_num_tiles(&nt, &a);
  int tpd = (int)((S + 7) / 8);
  size_t per = (size_t)B * tpd * H * d; /* elements per host destination */
  if (cudaMalloc(&q, nq * 2) || cudaMalloc(&k, nkv * 2) || cudaMalloc(&v, nkv * 2) ||
      cudaMalloc(&o, nq * 2) || cudaMalloc(&o2, nq * 2) || cudaMalloc((void**)&flags, nt * 4) ||
      cudaHostAlloc(&hostbuf, 7 * per * 2, cudaHostAllocMapped)) {
    fprintf(stderr, "xstage bench attention: allocation failed: %s\n",
            cudaGetErrorString(cudaGetLastError()));
    goto done;
  }
  ref = malloc(nq * 2);
  plain = malloc(nq * 2);
  got = malloc(nq * 2);
  pat = malloc((PAT_N + 1024) * 2);
  if (!ref || !plain || !got || !pat) goto done;
  /* Inputs: a random bf16 pattern in [-1, 1) of 1 Mi elements, tiled with a per-block shift. */
  unsigned long long seed = 0x2545F4914F6CDD1Dull;
  for (size_t i = 0; i < PAT_N + 1024; i++) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    float f = (float)((double)(seed >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    uint32_t u;
    memcpy(&u, &f, 4);
    pat[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  void* ins[3] = {q, k, v};
  size_t ns[3] = {nq, nkv, nkv};
  for (int t = 0; t < 3; t++)
    for (size_t off = 0; off < ns[t]; off += PAT_N) {
      size_t n = ns[t] - off < PAT_N ? ns[t] - off : PAT_N;
      size_t shift = ((size_t)t * 7919 + off / PAT_N * 131) % 1024;
      cudaMemcpy((uint16_t*)ins[t] + off, pat + shift, n * 2, cudaMemcpyHostToDevice);
    }
  a.q = q;
  a.k = k;
  a.v = v;
  a.o = o;

  int vlo = ver ? (int)ver : 1, vhi = ver ? (int)ver : XS_ATTN_VERSIONS, have_ref = 0, last = 0;
  for (int vv = vlo; vv <= vhi; vv++) {
    a.version = vv;
    int resolved = 0;
    if (xs_attention_version(&resolved, NULL, &a) != XS_OK) {
      fprintf(stderr, "# v%d skipped: %s\n", vv, xs_last_error());
      continue;
    }
    cudaMemset(o, 0xFF, nq * 2);
    bench_row* row = &rows[nrows++];
    row->version = vv;
    row->hook = "plain";
    row->pred_lock = row->pred_spread = row->pred_coupled = NAN;
    row->wrong = -1;
    r = time_forward(&row->ms, NULL, &a, NULL, (int)reps, 3);
    if (r != XS_OK) {
      nrows--;
      fprintf(stderr, "xstage bench attention: v%d: %s: %s\n", vv, xs_strerror(r), xs_last_error());
      goto done;
    }
    row->tflops = flops / (row->ms * 1e-3) / 1e12;
    row->vs_plain = 1.0;
    plain_ms = row->ms;
    cudaMemcpy(plain, o, nq * 2, cudaMemcpyDeviceToHost);
    /* Against version 1 when it ran; else against itself: then only NaN (an element left
     * unwritten, still poisoned) counts as wrong. */
    row->wrong = count_off(plain, have_ref ? ref : plain, nq);
    if (vv == 1) {
      memcpy(ref, plain, nq * 2);
      have_ref = 1;
    }
    last = vv;
  }
  if (!last) goto done;
  a.version = last;
  for (int hk = 0; hk < NHOOK; hk++) {
    if (!do_hook[hk] || (hk >= 4 && last != 2)) continue; /* trickle: version 2 only */
    xs_attn_args h = a;
    h.o = NULL;
    h.epilogue.tile_flags = hk == 1 || hk == 2 ? flags : NULL;
    h.epilogue.trickle = hk >= 4;
    h.epilogue.flag_value = 1;
    if (hk < 2 || hk == 5) { /* a second HBM region, O's layout */
      h.epilogue.num_dst = 1;
      h.epilogue.dst[0] = o2;
      h.epilogue.tokens_per_dst = (int)S;
      h.epilogue.stride_b = (int64_t)S * H * d;
      h.epilogue.stride_s = (int64_t)H * d;
      h.epilogue.stride_h = d;
      cudaMemset(o2, 0xFF, nq * 2);
    } else { /* W = 8 shards of S/8 tokens: shard 0 in HBM, shards 1..7 host-mapped */
      h.epilogue.num_dst = 8;
      h.epilogue.dst[0] = o2;
      for (int i = 1; i < 8; i++) {
        void* dp = NULL;
        cudaHostGetDevicePointer(&dp, (uint16_t*)hostbuf + (size_t)(i - 1) * per, 0);
        h.epilogue.dst[i] = dp;
      }
      h.epilogue.tokens_per_dst = tpd;
      h.epilogue.stride_b = (int64_t)tpd * H * d;
      h.epilogue.stride_s = (int64_t)H * d;
      h.epilogue.stride_h = d;
      cudaMemset(o2, 0xFF, nq * 2);
      memset(hostbuf, 0xFF, 7 * per * 2);
    }
    if (h.epilogue.tile_flags) cudaMemset(flags, 0, nt * 4);
    bench_row* row = &rows[nrows++];
    row->version = last;
    row->hook = hook_names[hk];
    row->pred_lock = row->pred_spread = row->pred_coupled = NAN;
    if (hk >= 2 && hk <= 4) predict_host(row, &prof, &a, nt, plain_ms);
    r = time_forward(&row->ms, &row->vs_plain, &h, &a, (int)reps, 5);
    if (r != XS_OK) {
      nrows--;
      fprintf(stderr, "xstage bench attention: hook %s: %s: %s\n", row->hook, xs_strerror(r),
              xs_last_error());
      goto done;
    }
    row->tflops = flops / (row->ms * 1e-3) / 1e12;
    /* Gather what the map stored back into O's layout and compare bit for bit. */
    if (hk < 2 || hk == 5) {
      cudaMemcpy(got, o2, nq * 2, cudaMemcpyDeviceToHost);
    } else {
      size_t row_elems = (size_t)H * d;
      uint16_t* shard0 = malloc(per * 2);
      if (!shard0) goto done;
      cudaMemcpy(shard0, o2, per * 2, cudaMemcpyDeviceToHost);
      for (long b = 0; b < B; b++)
        for (long t = 0; t < S; t++) {
          long sh = t / tpd, tr = t % tpd;
          const uint16_t* src =
              sh == 0 ? shard0 : (const uint16_t*)hostbuf + (size_t)(sh - 1) * per;
          memcpy(got + ((size_t)b * S + t) * row_elems, src + ((size_t)b * tpd + tr) * row_elems,
                 row_elems * 2);
        }
      free(shard0);
    }
    long long wrong = 0;
    for (size_t i = 0; i < nq; i++)
      wrong += got[i] != plain[i];
    /* Every flag raised (counted as wrong otherwise). */
    if (h.epilogue.tile_flags) {
      uint32_t* hf = (uint32_t*)got; /* nq * 2 bytes >= nt * 4: a tile has >= 64 elements */
      cudaMemcpy(hf, flags, nt * 4, cudaMemcpyDeviceToHost);
      for (int64_t i = 0; i < nt; i++)
        wrong += hf[i] != 1u;
    }
    row->wrong = wrong;
  }
  ret = 0;

done:
  if (ret == 0) {
    if (json) {
      printf("{\"gpu\": \"%s\", \"B\": %ld, \"H\": %ld, \"S\": %ld, \"Skv\": %ld, \"d\": %ld, "
             "\"causal\": %d, \"gflop\": %.3f, \"rows\": [",
             gpu, B, H, S, Skv, d, causal, flops / 1e9);
      for (int i = 0; i < nrows; i++) {
        printf("%s{\"version\": %d, \"hook\": \"%s\", \"ms\": %.4f, \"tflops\": %.2f, "
               "\"vs_plain\": %.4f, ",
               i ? ", " : "", rows[i].version, rows[i].hook, rows[i].ms, rows[i].tflops,
               rows[i].vs_plain);
        if (!isnan(rows[i].pred_lock))
          printf("\"pred_lockstep\": %.4f, \"pred_spread\": %.4f, \"pred_coupled\": %.4f, ",
                 rows[i].pred_lock, rows[i].pred_spread, rows[i].pred_coupled);
        printf("\"wrong\": %lld}", rows[i].wrong);
      }
      printf("]}\n");
    } else {
      printf("# attention fwd on %s: B=%ld H=%ld S=%ld Skv=%ld d=%ld causal=%d  (%.1f GFLOP)\n",
             gpu, B, H, S, Skv, d, causal, flops / 1e9);
      printf("%-8s %-8s %10s %9s %9s %9s %9s %9s %8s\n", "version", "hook", "ms", "TFLOP/s",
             "vs_plain", "lockstep", "spread", "coupled", "wrong");
      for (int i = 0; i < nrows; i++) {
        char pl[16] = "-", ps[16] = "-", pc[16] = "-";
        if (!isnan(rows[i].pred_lock)) {
          snprintf(pl, sizeof pl, "%.3f", rows[i].pred_lock);
          snprintf(ps, sizeof ps, "%.3f", rows[i].pred_spread);
          snprintf(pc, sizeof pc, "%.3f", rows[i].pred_coupled);
        }
        printf("v%-7d %-8s %10.4f %9.1f %9.3f %9s %9s %9s %8lld\n", rows[i].version, rows[i].hook,
               rows[i].ms, rows[i].tflops, rows[i].vs_plain, pl, ps, pc, rows[i].wrong);
      }
      if (do_hook[2] || do_hook[3] || do_hook[4])
        printf("# lockstep, spread, coupled: the X-Stage model's vs_plain for the host rows (%s, "
               "R %.1f GB/s): every CTA storing its tile at once / the CTAs' tile ends spread out "
               "/ a CTA's next tile only after its stores drained (compute that reads memory)\n",
               prof.transport[0] ? prof.transport : "profile", prof.R);
    }
    for (int i = 0; i < nrows; i++)
      if (rows[i].wrong != 0 && rows[i].wrong != -1) ret = 1;
  }
  cudaFree(q);
  cudaFree(k);
  cudaFree(v);
  cudaFree(o);
  cudaFree(o2);
  cudaFree(flags);
  cudaFreeHost(hostbuf);
  free(ref);
  free(plain);
  free(got);
  free(pat);
  return ret;
}

#else

int cli_bench_attention(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage bench attention: this build has no CUDA\n");
  return 1;
}

#endif
