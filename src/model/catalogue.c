/* catalogue.c — built-in realistic workloads for `xstage run` (shapes: shared/anchors-h200.md).
 *
 * Assumptions (also in each note and in docs/model.md, "Catalogue"):
 *  - one CTA per SM, 132 CTAs issuing at once; the K producers run in lockstep;
 *  - a tile is one 128x128 bf16 output tile (32 KiB), the unit a GEMM/attention epilogue
 *    stores; 7/8 of it goes to remote ranks (EP = 8 or W = 8, uniform routing), so
 *    bytes_per_tile = 32 KiB * 7/8 = 28 KiB;
 *  - MoE combine: Linear-2 (rows x inter) @ (inter x hidden); a 128x128 output tile costs
 *    2*128*128*inter flops at a per-SM share of 650 TFLOP/s (650e3/132 flop/ns);
 *    4096 tokens per rank, balanced routing: 4096*topk rows per rank, 128-row tiles times
 *    hidden/128 column tiles, spread over 132 CTAs (rounded up);
 *  - Ulysses all-to-all: after attention each rank holds all S tokens of H/8 heads; a
 *    128-token x d=128 output tile costs 4*128*S*128 flops at 600e3/132 flop/ns; tiles =
 *    ceil(S/128) * H/8 over min(132, tiles) CTAs. */
#include "model/model_internal.h"

#define TILE_BYTES (128.0 * 128.0 * 2.0 * 7.0 / 8.0)
#define MOE_NS(inter) (2.0 * 128.0 * 128.0 * (inter) / (650e3 / 132.0))
#define ULY_NS(S) (4.0 * 128.0 * (S) * 128.0 / (600e3 / 132.0))

#define MOE(nm, hidden, inter, topk, tiles)                                                        \
  {sizeof(xs_workload), nm, "moe", 132, TILE_BYTES, MOE_NS(inter), tiles,                          \
   "EP=8, 4096 tok/rank, top-" #topk ", L2 " #inter "x" #hidden ", 128x128 bf16 tiles, 650 TF/s"}
#define ULY(nm, S, heads, K, tiles)                                                                \
  {sizeof(xs_workload), nm, "ulysses", K, TILE_BYTES, ULY_NS(S), tiles,                            \
   "W=8, S=" #S ", H=" #heads "/8 per rank, 128-tok x d128 bf16 tiles, 4*128*S*d fl, 600 TF/s"}

static const xs_workload g_catalogue[] = {
    /* tiles per CTA: ceil((4096*topk/128) * (hidden/128) / 132) */
    MOE("moe-deepseek-v3", 7168, 2048, 8, 109),
    MOE("moe-qwen3-235b", 4096, 1536, 8, 63),
    MOE("moe-qwen3-30b", 2048, 768, 8, 32),
    MOE("moe-mixtral-8x7b", 4096, 14336, 2, 16),
    /* tiles: ceil(S/128) * heads/8; CTAs min(132, tiles); tiles per CTA rounded up */
    ULY("ulysses-flux-1024", 4608, 24, 108, 1),
    ULY("ulysses-flux-2048", 16896, 24, 132, 3),
    ULY("ulysses-wan2.1-480p", 32760, 40, 132, 10),
    ULY("ulysses-wan2.1-720p", 75600, 40, 132, 23),
    ULY("ulysses-hunyuan-720p", 118800, 24, 132, 22),
};

xs_result xs_catalogue(const xs_workload** out, size_t* n) {
  XSI_ARG(out != NULL && n != NULL, "out or n is NULL");
  *out = g_catalogue;
  *n = sizeof g_catalogue / sizeof g_catalogue[0];
  return XS_OK;
}
