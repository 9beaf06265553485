/* bench_gemm.c — `xstage bench gemm` (placeholder until its issue lands). */
#include "cli/cli.h"

int cli_bench_gemm(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage bench gemm: not available in this build yet\n");
  return 1;
}
