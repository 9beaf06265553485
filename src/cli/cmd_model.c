/* cmd_model.c — `xstage model` (placeholder until its issue lands). */
#include "cli/cli.h"

int cmd_model(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage model: not available in this build yet\n");
  return 1;
}
