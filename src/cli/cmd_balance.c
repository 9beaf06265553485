/* cmd_balance.c — `xstage balance` (placeholder until its issue lands). */
#include "cli/cli.h"

int cmd_balance(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage balance: not available in this build yet\n");
  return 1;
}
