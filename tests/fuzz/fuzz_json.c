/* fuzz_json.c — libFuzzer target for the JSON reader: arbitrary bytes (no NUL terminator) go to
 * xsi_json_parse; a parsed document is walked and every typed getter is called on every object
 * member, so the getters see every value type. Run by tests/fuzz/run.sh. */
#include "core/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void walk(const xsi_json* v, int depth) {
  if (!v || depth > 70) abort(); /* the parser promises depth <= 64 and no NULL children */
  if (v->type == XSI_JSON_STRING && !v->str) abort();
  if (v->type == XSI_JSON_NUMBER && !(v->num - v->num == 0.0)) abort(); /* finite */
  for (size_t i = 0; i < v->len; i++) {
    if (v->type == XSI_JSON_OBJECT) {
      const char* key = v->keys[i];
      if (xsi_json_get(v, key) != v->items[i]) abort(); /* keys are unique */
      double x = 0;
      const char* s = NULL;
      xsi_json_get_number(&x, v, key, 0, "fuzz.json");
      xsi_json_get_number(&x, v, key, 1, "fuzz.json");
      xsi_json_get_string(&s, v, key, 0, "fuzz.json");
      if (s) (void)strlen(s);
      xsi_json_get_string(&s, v->items[i], key, 1, "fuzz.json"); /* maybe not an object */
    }
    walk(v->items[i], depth + 1);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  /* An exact-size copy, so ASan catches any read past `size`. */
  char* buf = malloc(size ? size : 1);
  if (!buf) return 0;
  if (size) memcpy(buf, data, size);
  xsi_json* v = NULL;
  if (xsi_json_parse(&v, buf, size, "fuzz.json") == XS_OK) {
    walk(v, 0);
    double x = 0;
    xsi_json_get_number(&x, v, "missing", 1, "fuzz.json");
    xsi_json_free(v);
  } else if (v) {
    abort(); /* a failed parse leaves *out NULL */
  }
  free(buf);
  return 0;
}
