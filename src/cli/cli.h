/* cli.h — argument parsing and output helpers shared by the `xstage` subcommands.
 *
 * A subcommand declares its options in a table, calls cli_parse, then reads typed values with
 * range checks. Every error prints "xstage <cmd>: <what>" to stderr and the command returns 2
 * (usage) or 1 (failure). Nothing here exits the process.
 *
 *   static cli_opt opts[] = {
 *     {"K", "N", "producer CTAs (default 16)"},
 *     {"json", NULL, "print JSON instead of a table"},
 *   };
 *   cli_cmd c = CLI_CMD("model predict", "predict T_iss for a burst sequence", opts);
 *   int rc = cli_parse(&c, argc, argv); if (rc >= 0) return rc;   // help (0) or error (2)
 *   double K; if (cli_get_double(&c, "K", 16, 1, 1e6, &K)) return 2;
 */
#ifndef XSTAGE_CLI_H
#define XSTAGE_CLI_H

#include "xstage/xstage.h"
#include <stdio.h>

typedef struct cli_opt {
  const char* name;  /* long name without dashes ("K" is --K) */
  const char* arg;   /* placeholder of its value ("BYTES"), or NULL for a flag */
  const char* help;  /* one line */
  const char* value; /* after parsing: the value, "1" for a given flag, NULL if absent */
} cli_opt;

#define CLI_MAX_POS 16

typedef struct cli_cmd {
  const char* name;    /* "model predict" */
  const char* summary; /* one line */
  const char* usage;   /* positional part of the usage line, e.g. "<csv>" (may be "") */
  cli_opt* opts;
  int nopts;
  int min_pos, max_pos;
  const char* pos[CLI_MAX_POS];
  int npos;
} cli_cmd;

#define CLI_CMD(name, summary, usage, opts, min_pos, max_pos)                                      \
  {name, summary, usage, opts, (int)(sizeof(opts) / sizeof((opts)[0])), min_pos, max_pos, {0}, 0}

/* Parse argv (argv[0] is the first argument after the subcommand's name). Returns -1 when the
 * command should go on; 0 after printing --help; 2 after printing a usage error. */
int cli_parse(cli_cmd* c, int argc, char** argv);
void cli_usage(const cli_cmd* c, FILE* f);

/* Typed getters: return 0 and set *out (default when absent), or print an error naming the
 * option and return 2. Numbers must be finite and in [lo, hi]. */
int cli_get_double(const cli_cmd* c, const char* name, double def, double lo, double hi,
                   double* out);
int cli_get_long(const cli_cmd* c, const char* name, long def, long lo, long hi, long* out);
/* Sizes accept suffixes K/KB/KiB, M/MB/MiB, G/GB/GiB (all powers of 1024): "4MB" = 4194304. */
int cli_get_bytes(const cli_cmd* c, const char* name, double def, double lo, double hi,
                  double* out);
/* Times accept suffixes ns, us, ms, s (no suffix = ns). */
int cli_get_ns(const cli_cmd* c, const char* name, double def, double lo, double hi, double* out);
/* Comma-separated lists of sizes/times/numbers: at most max entries. */
int cli_get_list(const cli_cmd* c, const char* name, int kind /* 0 num, 1 bytes, 2 ns */,
                 double* out, int max, int* n);
const char* cli_get_str(const cli_cmd* c, const char* name, const char* def);
int cli_flag(const cli_cmd* c, const char* name);

/* Parse one value: kind 0 = number, 1 = bytes, 2 = ns. 0 on success. */
int cli_parse_value(const char* s, int kind, double* out);

/* Print "xstage <cmd>: <what>: <strerror>: <detail>" and return 1. */
int cli_fail(const cli_cmd* c, xs_result res, const char* what);
/* Print a usage-style error "xstage <cmd>: <msg>" and return 2. */
int cli_error(const cli_cmd* c, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Progress line on stderr ("\r[ 42%] what"); a final cli_progress_done ends the line.
 * Silent when stderr is not a terminal unless XSTAGE_PROGRESS=1. */
void cli_progress(const char* what, double fraction);
void cli_progress_done(void);

/* Human-readable formatting into a caller buffer (returns buf). */
const char* cli_fmt_bytes(char* buf, size_t n, double bytes); /* "4.00 MiB" */
const char* cli_fmt_ns(char* buf, size_t n, double ns);       /* "1.23 us" */

/* Subcommands: each returns the process exit code. argv[0] is the first argument after the
 * subcommand name. */
int cmd_run(int argc, char** argv);
int cmd_model(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_calibrate(int argc, char** argv);
int cmd_xbench(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_balance(int argc, char** argv);
int cmd_trace(int argc, char** argv);
int cmd_launch(int argc, char** argv);

/* 1 when a CUDA GPU is usable in this process (build with CUDA and a device present). */
int cli_have_gpu(char* name, size_t n);
/* CUDA devices usable in this process (0 without CUDA or a driver). */
int cli_gpu_count(void);

#endif
