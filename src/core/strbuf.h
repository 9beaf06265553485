/* strbuf.h — a growable byte string (for JSON/CSV/SVG writers and messages). */
#ifndef XSTAGE_CORE_STRBUF_H
#define XSTAGE_CORE_STRBUF_H

#include "xstage/xstage.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xsi_strbuf {
  char* data; /* NUL-terminated; NULL until the first append */
  size_t len; /* bytes used, excluding the NUL */
  size_t cap; /* bytes allocated */
  int oom;    /* set once an allocation failed; later appends are ignored */
} xsi_strbuf;

#define XSI_STRBUF_INIT {NULL, 0, 0, 0}

void xsi_sb_free(xsi_strbuf* sb); /* NULL-safe; leaves sb empty */
void xsi_sb_append(xsi_strbuf* sb, const char* s, size_t n);
void xsi_sb_puts(xsi_strbuf* sb, const char* s);
void xsi_sb_printf(xsi_strbuf* sb, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Append s as a JSON string literal, quotes and escapes included. */
void xsi_sb_json_string(xsi_strbuf* sb, const char* s);
/* Append a double as JSON ("%.17g"-exact, but shortest that round-trips; NaN/inf -> null). */
void xsi_sb_json_number(xsi_strbuf* sb, double x);
/* XS_OK, or XS_ERR_NO_MEMORY if any append failed. */
xs_result xsi_sb_status(const xsi_strbuf* sb);

#ifdef __cplusplus
}
#endif
#endif
