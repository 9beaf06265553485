/* cmd_calibrate.c — `xstage calibrate` (placeholder until its issue lands). */
#include "cli/cli.h"

int cmd_calibrate(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage calibrate: not available in this build yet\n");
  return 1;
}
