/* json.h — a small, strict JSON reader (DOM) used for profiles and instances.
 *
 * Writing JSON is done with xsi_strbuf (xsi_sb_json_string/number) by each caller.
 * The parser is fuzzed (tests/fuzz/fuzz_json.c): it never crashes, never reads past `len`,
 * limits nesting depth to 64, and reports errors as "<name>:<line>:<col>: <what>". */
#ifndef XSTAGE_CORE_JSON_H
#define XSTAGE_CORE_JSON_H

#include "xstage/xstage.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xsi_json_type {
  XSI_JSON_NULL,
  XSI_JSON_BOOL,
  XSI_JSON_NUMBER,
  XSI_JSON_STRING,
  XSI_JSON_ARRAY,
  XSI_JSON_OBJECT,
} xsi_json_type;

typedef struct xsi_json xsi_json;
struct xsi_json {
  xsi_json_type type;
  double num;       /* NUMBER (BOOL: 0 or 1) */
  char* str;        /* STRING: NUL-terminated, unescaped (UTF-8) */
  size_t len;       /* ARRAY/OBJECT: number of children */
  xsi_json** items; /* ARRAY/OBJECT children, in document order */
  char** keys;      /* OBJECT: keys[i] names items[i] */
  int line;         /* 1-based line where the value starts (for error messages) */
};

/* Parse `len` bytes. `name` (a file name) prefixes error details. *out is freed with
 * xsi_json_free. Trailing garbage after the value is an error. */
xs_result xsi_json_parse(xsi_json** out, const char* text, size_t len, const char* name);
void xsi_json_free(xsi_json* v); /* NULL-safe */

/* Object member by key, or NULL (also NULL when obj is not an object). */
const xsi_json* xsi_json_get(const xsi_json* obj, const char* key);

/* Typed getters for a member of an object. They fail with XS_ERR_PARSE naming
 * `name`, the member's line and the key when the member is missing (unless optional, in which
 * case *out keeps its value and XS_OK is returned), of the wrong type, or (numbers) not finite. */
xs_result xsi_json_get_number(double* out, const xsi_json* obj, const char* key, int optional,
                              const char* name);
xs_result xsi_json_get_string(const char** out, const xsi_json* obj, const char* key,
                              int optional, const char* name);

#ifdef __cplusplus
}
#endif
#endif
