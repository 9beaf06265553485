/* model_cli.h — helpers shared by `xstage model`, `xstage plan` and `xstage run`
 * (implemented in cmd_model.c). */
#ifndef XSTAGE_CLI_MODEL_CLI_H
#define XSTAGE_CLI_MODEL_CLI_H

#include "cli/cli.h"

/* Load --profile: an embedded name (h200-host, ...) or a JSON file; `def` when absent.
 * Returns 0, or prints the error and returns 1. */
int mcli_profile(const cli_cmd* c, const char* spec, const char* def, xs_link_profile* out);

/* Replace "-o" by "--out" (so `-o FILE` works with the long-option parser). Returns a
 * malloc'ed copy of argv (caller frees), or NULL on out of memory. */
char** mcli_argv(int argc, char** argv);

/* One-line description of a profile (parameters, calibrated or not). */
void mcli_describe(FILE* f, const char* label, const xs_link_profile* p);

/* Explain the regime of periodic bursts (K, V, G) in words. */
void mcli_explain(FILE* f, const xs_link_profile* p, double K, double V, double G);

/* `xstage model plot` (cmd_model_plot.c). */
int mcli_plot(int argc, char** argv);
/* Write an SVG plot of measurements (d may be NULL: model only) and both predictors against G,
 * one curve per V, for producer count K. Returns XS_OK or an error (detail set). */
xs_result mcli_plot_write(const char* path, const xs_dataset* d, const uint8_t* holdout,
                          const xs_link_profile* p, double K, const double* Vs, int nv);

#endif
