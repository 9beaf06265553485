/* cmd_bench.c — `xstage bench <kernel>`: dispatches to one file per kernel family. */
#include "cli/cli.h"

#include <string.h>

int cli_bench_gemm(int argc, char** argv);      /* bench_gemm.c */
int cli_bench_attention(int argc, char** argv); /* bench_attention.c */
int cli_bench_rma(int argc, char** argv);       /* bench_rma.c */

static const struct {
  const char* name;
  int (*fn)(int, char**);
  const char* summary;
} g_bench[] = {
    {"gemm", cli_bench_gemm, "dense/grouped bf16 GEMM against cuBLAS"},
    {"attention", cli_bench_attention, "attention forward (our kernel; cuDNN via scripts)"},
    {"rma", cli_bench_rma, "device RMA primitives in the emulated world"},
};

int cmd_bench(int argc, char** argv) {
  if (argc >= 1) {
    for (size_t i = 0; i < sizeof g_bench / sizeof g_bench[0]; i++)
      if (!strcmp(argv[0], g_bench[i].name)) return g_bench[i].fn(argc - 1, argv + 1);
  }
  FILE* f = (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) ? stdout : stderr;
  if (argc >= 1 && f == stderr) fprintf(stderr, "xstage bench: unknown benchmark '%s'\n", argv[0]);
  fprintf(f, "usage: xstage bench <kernel> [options]   (xstage bench <kernel> --help)\n");
  for (size_t i = 0; i < sizeof g_bench / sizeof g_bench[0]; i++)
    fprintf(f, "  %-10s %s\n", g_bench[i].name, g_bench[i].summary);
  return f == stdout ? 0 : 2;
}
