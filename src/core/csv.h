/* csv.h — a strict CSV reader for measurement files (header row, comma-separated, optional
 * double quotes, '#' comment lines and blank lines skipped).
 *
 * Fuzzed (tests/fuzz/fuzz_csv.c). Errors name the file, the 1-based line and the column:
 * "sweep.csv:12: field 'K': 'abc' is not a number". Rows with a different number of fields than
 * the header are errors. */
#ifndef XSTAGE_CORE_CSV_H
#define XSTAGE_CORE_CSV_H

#include "xstage/xstage.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xsi_csv {
  const char* name; /* file name for messages (not owned) */
  size_t ncols;
  char** header;    /* ncols column names */
  size_t nrows;
  char*** rows;     /* nrows x ncols field strings */
  int* row_line;    /* 1-based source line of each row */
} xsi_csv;

/* Parse a whole CSV text. *out is freed with xsi_csv_free. max_rows (0 = unlimited) bounds
 * the row count: more rows fail with XS_ERR_PARSE. */
xs_result xsi_csv_parse(xsi_csv** out, const char* text, size_t len, const char* name,
                        size_t max_rows);
void xsi_csv_free(xsi_csv* csv); /* NULL-safe */

/* Column index of `col`, or -1. */
long xsi_csv_col(const xsi_csv* csv, const char* col);
/* Column index of a required column; XS_ERR_PARSE "<name>: missing column 'col'" otherwise. */
xs_result xsi_csv_require(long* idx, const xsi_csv* csv, const char* col);

/* Field `col` of row `r` as a finite double / as an integer in [lo, hi]. Errors name file,
 * line and column. */
xs_result xsi_csv_number(double* out, const xsi_csv* csv, size_t r, long col);
xs_result xsi_csv_int(long long* out, const xsi_csv* csv, size_t r, long col, long long lo,
                      long long hi);

#ifdef __cplusplus
}
#endif
#endif
