/* fuzz_csv.c — libFuzzer target for the CSV reader: arbitrary bytes (no NUL terminator) go to
 * xsi_csv_parse (with and without a row bound); every field of a parsed table is read back with
 * xsi_csv_number and xsi_csv_int, and every header name is looked up. Run by tests/fuzz/run.sh. */
#include "core/csv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_table(const xsi_csv* c) {
  if (!c->ncols || !c->header) abort();
  for (size_t j = 0; j < c->ncols; j++) {
    long idx = -1;
    if (xsi_csv_require(&idx, c, c->header[j]) != XS_OK || idx != (long)j) abort(); /* unique */
  }
  for (size_t r = 0; r < c->nrows; r++) {
    if (c->row_line[r] < 1) abort();
    for (size_t j = 0; j < c->ncols; j++) {
      double x = 0;
      long long k = 0;
      (void)strlen(c->rows[r][j]);
      xsi_csv_number(&x, c, r, (long)j);
      xsi_csv_int(&k, c, r, (long)j, -1000000, 1000000);
      xsi_csv_int(&k, c, r, (long)j, INT64_MIN, INT64_MAX);
    }
  }
  double x = 0;
  if (xsi_csv_number(&x, c, c->nrows, 0) == XS_OK) abort(); /* out of range row */
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* buf = malloc(size ? size : 1); /* exact size: ASan catches reads past `size` */
  if (!buf) return 0;
  if (size) memcpy(buf, data, size);
  xsi_csv* c = NULL;
  if (xsi_csv_parse(&c, buf, size, "fuzz.csv", 0) == XS_OK) {
    check_table(c);
    xsi_csv_free(c);
  } else if (c) {
    abort();
  }
  c = NULL;
  if (xsi_csv_parse(&c, buf, size, "fuzz.csv", 3) == XS_OK) {
    if (c->nrows > 3) abort();
    xsi_csv_free(c);
  }
  free(buf);
  return 0;
}
