/* main.c — the `xstage` command: dispatches to one subcommand per file (cmd_*.c). */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char* name;
  int (*fn)(int, char**);
  const char* summary;
} g_cmds[] = {
    {"run", cmd_run, "the main job: calibrate (GPU) or use the embedded profile, plan, report"},
    {"model", cmd_model, "fit | predict | explain | plot: the X-Stage model"},
    {"plan", cmd_plan, "planner: smallest free gap, largest burst, burst split, fusion overhead"},
    {"calibrate", cmd_calibrate, "measure T0, R, Q on this machine and fit a profile (GPU)"},
    {"xbench", cmd_xbench, "one measured burst-gap configuration (GPU)"},
    {"bench", cmd_bench, "kernel benchmarks against their baselines (GPU)"},
    {"balance", cmd_balance, "solve | bench | phase: TEMPO expert-parallel dispatch"},
    {"trace", cmd_trace, "convert a kernel trace to Chrome JSON / an SVG timeline"},
    {"launch", cmd_launch, "start N local ranks of a command (nccl world)"},
};

static void usage(FILE* f) {
  fprintf(f, "usage: xstage <command> [options]   (xstage <command> --help for details)\n\n");
  for (size_t i = 0; i < sizeof g_cmds / sizeof g_cmds[0]; i++)
    fprintf(f, "  %-10s %s\n", g_cmds[i].name, g_cmds[i].summary);
  fprintf(f, "  %-10s %s\n", "version", "print the version");
}

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char* cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    printf("xstage %s\n", xs_version());
    return 0;
  }
  for (size_t i = 0; i < sizeof g_cmds / sizeof g_cmds[0]; i++)
    if (!strcmp(cmd, g_cmds[i].name)) return g_cmds[i].fn(argc - 2, argv + 2);
  fprintf(stderr, "xstage: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
