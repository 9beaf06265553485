/* test_json.c — the strict JSON reader: values, escapes, errors with positions, getters. */
#include "core/json.h"
#include "core/internal.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

/* Parse a NUL-terminated text; NULL on failure. */
static xsi_json* parse(const char* text) {
  xsi_json* v = (xsi_json*)0x1; /* poisoned: parse must reset it */
  xs_result r = xsi_json_parse(&v, text, strlen(text), "t.json");
  if (r != XS_OK) {
    XT_CHECK(v == NULL);
    return NULL;
  }
  return v;
}

/* 1 when `text` fails with XS_ERR_PARSE and the detail contains `what`. */
static int fails_with(const char* text, const char* what) {
  xsi_json* v = NULL;
  xs_result r = xsi_json_parse(&v, text, strlen(text), "t.json");
  int ok = r == XS_ERR_PARSE && v == NULL && strstr(xs_last_error(), what) != NULL;
  if (!ok) fprintf(stderr, "  input %s -> %d '%s'\n", text, (int)r, xs_last_error());
  xsi_json_free(v);
  return ok;
}

static void test_values(void) {
  xsi_json* v = parse(" {\"a\": 1.5, \"b\": [true, false, null, -0, 2e3, 0.25E-1],\n"
                      "  \"c\": {\"d\": \"x\"}, \"e\": [], \"f\": {}} ");
  XT_CHECK(v != NULL);
  if (!v) return;
  XT_CHECK(v->type == XSI_JSON_OBJECT && v->len == 5);
  XT_CHECK(strcmp(v->keys[0], "a") == 0 && strcmp(v->keys[4], "f") == 0); /* document order */
  XT_NEAR(v->items[0]->num, 1.5, 0);
  const xsi_json* b = xsi_json_get(v, "b");
  XT_CHECK(b && b->type == XSI_JSON_ARRAY && b->len == 6);
  if (b && b->len == 6) {
    XT_CHECK(b->items[0]->type == XSI_JSON_BOOL && b->items[0]->num == 1.0);
    XT_CHECK(b->items[1]->type == XSI_JSON_BOOL && b->items[1]->num == 0.0);
    XT_CHECK(b->items[2]->type == XSI_JSON_NULL);
    XT_CHECK(b->items[3]->num == 0.0);
    XT_NEAR(b->items[4]->num, 2000.0, 0);
    XT_NEAR(b->items[5]->num, 0.025, 1e-15);
  }
  const xsi_json* c = xsi_json_get(v, "c");
  XT_CHECK(c && c->line == 2);
  const char* s = NULL;
  XT_CHECK(xsi_json_get_string(&s, c, "d", 0, "t.json") == XS_OK && s && strcmp(s, "x") == 0);
  XT_CHECK(xsi_json_get(v, "e")->len == 0 && xsi_json_get(v, "f")->type == XSI_JSON_OBJECT);
  XT_CHECK(xsi_json_get(v, "zz") == NULL);
  XT_CHECK(xsi_json_get(b, "a") == NULL); /* not an object */
  XT_CHECK(xsi_json_get(NULL, "a") == NULL);
  xsi_json_free(v);
  xsi_json_free(NULL);

  v = parse("42"); /* scalars at the top level */
  XT_CHECK(v && v->type == XSI_JSON_NUMBER && v->num == 42.0);
  xsi_json_free(v);
  v = parse("\"s\"");
  XT_CHECK(v && v->type == XSI_JSON_STRING && strcmp(v->str, "s") == 0);
  xsi_json_free(v);
  v = parse("1.7976931348623157e308");
  XT_CHECK(v && v->num == 1.7976931348623157e308);
  xsi_json_free(v);
  v = parse("1e-400"); /* underflow to 0 is finite and accepted */
  XT_CHECK(v && v->num == 0.0);
  xsi_json_free(v);
}

static void test_strings(void) {
  xsi_json* v = parse("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u0041\\u00e9\\u20ac\", "
                      "\"\\ud83d\\ude00\", \"h\xc3\xa9llo \xe2\x82\xac\"]");
  XT_CHECK(v && v->len == 4);
  if (v && v->len == 4) {
    XT_CHECK(strcmp(v->items[0]->str, "a\"b\\c/d\b\f\n\r\t") == 0);
    XT_CHECK(strcmp(v->items[1]->str, "A\xc3\xa9\xe2\x82\xac") == 0);
    XT_CHECK(strcmp(v->items[2]->str, "\xf0\x9f\x98\x80") == 0); /* U+1F600 */
    XT_CHECK(strcmp(v->items[3]->str, "h\xc3\xa9llo \xe2\x82\xac") == 0);
  }
  xsi_json_free(v);
  XT_CHECK(fails_with("\"a\\x\"", "invalid escape"));
  XT_CHECK(fails_with("\"\\u12G4\"", "\\u escape"));
  XT_CHECK(fails_with("\"\\u12\"", "\\u escape"));
  XT_CHECK(fails_with("\"\\ud83d\"", "surrogate"));
  XT_CHECK(fails_with("\"\\ud83d\\u0041\"", "surrogate"));
  XT_CHECK(fails_with("\"\\ude00\"", "surrogate"));
  XT_CHECK(fails_with("\"\\u0000\"", "\\u0000"));
  XT_CHECK(fails_with("\"a\tb\"", "control character"));
  XT_CHECK(fails_with("\"a\nb\"", "control character"));
  XT_CHECK(fails_with("\"\xff\"", "UTF-8"));
  XT_CHECK(fails_with("\"\xc0\xaf\"", "UTF-8"));     /* overlong '/' */
  XT_CHECK(fails_with("\"\xed\xa0\x80\"", "UTF-8")); /* encoded surrogate */
  XT_CHECK(fails_with("\"\xe2\x82\"", "UTF-8"));     /* truncated sequence */
  XT_CHECK(fails_with("\"abc", "unterminated string"));
  XT_CHECK(fails_with("\"abc\\", "unterminated string"));
  XT_CHECK(fails_with("\"abc\\\"", "unterminated string"));
}

static void test_numbers(void) {
  XT_CHECK(fails_with("01", "leading zero"));
  XT_CHECK(fails_with("-01", "leading zero"));
  XT_CHECK(fails_with("NaN", "unexpected"));
  XT_CHECK(fails_with("Infinity", "unexpected"));
  XT_CHECK(fails_with("-Infinity", "invalid number"));
  XT_CHECK(fails_with("+1", "unexpected"));
  XT_CHECK(fails_with("1.", "after '.'"));
  XT_CHECK(fails_with(".5", "unexpected"));
  XT_CHECK(fails_with("1e", "exponent"));
  XT_CHECK(fails_with("1e+", "exponent"));
  XT_CHECK(fails_with("1e400", "out of range"));
  XT_CHECK(fails_with("-1e400", "out of range"));
  XT_CHECK(fails_with("0x10", "after the value"));
  /* A long number goes through the heap copy. */
  char big[400];
  memset(big, '1', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  big[1] = '.';
  xsi_json* v = parse(big);
  XT_CHECK(v && v->num > 1.1 && v->num < 1.2);
  xsi_json_free(v);
}

static void test_structure_errors(void) {
  XT_CHECK(fails_with("", "end of input"));
  XT_CHECK(fails_with("   \n ", "end of input"));
  XT_CHECK(fails_with("{", "end of input"));
  XT_CHECK(fails_with("{\"a\"", "':'"));
  XT_CHECK(fails_with("{\"a\":", "end of input"));
  XT_CHECK(fails_with("{\"a\":1", "end of input in object"));
  XT_CHECK(fails_with("[1, 2", "end of input in array"));
  XT_CHECK(fails_with("[1 2]", "expected ',' or ']'"));
  XT_CHECK(fails_with("[1,]", "unexpected ']'"));
  XT_CHECK(fails_with("{\"a\":1,}", "expected a string key"));
  XT_CHECK(fails_with("{a:1}", "expected a string key"));
  XT_CHECK(fails_with("tru", "invalid literal"));
  XT_CHECK(fails_with("nul", "invalid literal"));
  XT_CHECK(fails_with("{} x", "unexpected 'x' after the value"));
  XT_CHECK(fails_with("1 2", "after the value"));
  XT_CHECK(fails_with("[] \x01", "byte 0x01"));
  XT_CHECK(fails_with("{\"k\":1,\n \"k\":2}", "t.json:2:2: duplicate key 'k'"));
  XT_CHECK(fails_with("{\"a\":1,\n  \"b\": @}", "t.json:2:8: unexpected '@'"));
  XT_CHECK(fails_with("\xef\xbb\xbf{}", "byte 0xef")); /* a BOM is not JSON */
}

static void test_depth(void) {
  char buf[200];
  for (int depth = 63; depth <= 66; depth++) {
    int n = 0;
    for (int i = 0; i < depth; i++)
      buf[n++] = '[';
    for (int i = 0; i < depth; i++)
      buf[n++] = ']';
    buf[n] = '\0';
    xsi_json* v = NULL;
    xs_result r = xsi_json_parse(&v, buf, (size_t)n, "deep.json");
    XT_EQ_INT(r, depth <= 64 ? XS_OK : XS_ERR_PARSE);
    if (depth > 64) XT_CHECK(strstr(xs_last_error(), "nesting deeper than 64") != NULL);
    xsi_json_free(v);
  }
  /* A very deep document fails fast without recursing deeper than the limit. */
  size_t n = 1 << 20;
  char* deep = malloc(n);
  memset(deep, '[', n);
  xsi_json* v = NULL;
  XT_CHECK(xsi_json_parse(&v, deep, n, "deep.json") == XS_ERR_PARSE && v == NULL);
  free(deep);
}

static void test_bounded_read(void) {
  /* The parser must stop at len: the bytes after it would change the result. */
  const char* text = "[1, 2]garbage";
  xsi_json* v = NULL;
  XT_CHECK(xsi_json_parse(&v, text, 6, "t.json") == XS_OK && v && v->len == 2);
  xsi_json_free(v);
  v = NULL;
  XT_CHECK(xsi_json_parse(&v, "123456", 3, "t.json") == XS_OK && v && v->num == 123.0);
  xsi_json_free(v);
  v = NULL;
  XT_CHECK(xsi_json_parse(&v, "truefalse", 3, "t.json") == XS_ERR_PARSE && !v);
  XT_CHECK(xsi_json_parse(&v, "\"abc\"", 4, "t.json") == XS_ERR_PARSE && !v);
  XT_CHECK(xsi_json_parse(&v, "\"\\u00411\"", 6, "t.json") == XS_ERR_PARSE && !v);
  /* Exact-size heap copy without NUL: ASan would flag any overread. */
  const char* src = "{\"a\":[1,2,{\"b\":\"\\u00e9\"}]}";
  size_t len = strlen(src);
  char* exact = malloc(len);
  memcpy(exact, src, len);
  XT_CHECK(xsi_json_parse(&v, exact, len, "t.json") == XS_OK && v);
  xsi_json_free(v);
  free(exact);
  XT_CHECK(xsi_json_parse(NULL, "1", 1, "t.json") == XS_ERR_INVALID_ARG);
}

static void test_getters(void) {
  xsi_json* v = parse("{\"n\": 3.5, \"s\": \"hi\",\n \"b\": true, \"arr\": [1], \"z\": null}");
  XT_CHECK(v != NULL);
  if (!v) return;
  double x = -1;
  const char* s = NULL;
  XT_CHECK(xsi_json_get_number(&x, v, "n", 0, "p.json") == XS_OK && x == 3.5);
  XT_CHECK(xsi_json_get_string(&s, v, "s", 0, "p.json") == XS_OK && strcmp(s, "hi") == 0);
  /* missing: error unless optional, which keeps *out */
  x = 7;
  XT_CHECK(xsi_json_get_number(&x, v, "missing", 1, "p.json") == XS_OK && x == 7);
  XT_CHECK(xsi_json_get_number(&x, v, "missing", 0, "p.json") == XS_ERR_PARSE);
  XT_CHECK(strstr(xs_last_error(), "p.json:1: missing key 'missing'") != NULL);
  s = "keep";
  XT_CHECK(xsi_json_get_string(&s, v, "nope", 1, "p.json") == XS_OK && strcmp(s, "keep") == 0);
  /* wrong types, optional or not */
  XT_CHECK(xsi_json_get_number(&x, v, "s", 0, "p.json") == XS_ERR_PARSE && x == 7);
  XT_CHECK(strstr(xs_last_error(), "'s' must be a number, got a string") != NULL);
  XT_CHECK(xsi_json_get_number(&x, v, "b", 1, "p.json") == XS_ERR_PARSE);
  XT_CHECK(strstr(xs_last_error(), "p.json:2: 'b'") != NULL);
  XT_CHECK(xsi_json_get_number(&x, v, "z", 0, "p.json") == XS_ERR_PARSE);
  XT_CHECK(xsi_json_get_string(&s, v, "n", 0, "p.json") == XS_ERR_PARSE);
  XT_CHECK(xsi_json_get_string(&s, v, "arr", 0, "p.json") == XS_ERR_PARSE);
  XT_CHECK(strstr(xs_last_error(), "got an array") != NULL);
  /* not an object */
  XT_CHECK(xsi_json_get_number(&x, xsi_json_get(v, "arr"), "n", 1, "p.json") == XS_ERR_PARSE);
  XT_CHECK(xsi_json_get_number(&x, NULL, "n", 0, "p.json") == XS_ERR_PARSE);
  XT_CHECK(xsi_json_get_number(NULL, v, "n", 0, "p.json") == XS_ERR_INVALID_ARG);
  /* a hand-made non-finite number is refused */
  v->items[0]->num = NAN;
  XT_CHECK(xsi_json_get_number(&x, v, "n", 0, "p.json") == XS_ERR_PARSE);
  XT_CHECK(strstr(xs_last_error(), "not finite") != NULL);
  xsi_json_free(v);
}

static void test_random_garbage(void) {
  /* Mutations of a valid document never crash; whatever parses has a consistent shape. */
  const char* base = "{\"a\": [1, -2.5e3, \"x\\u00e9\"], \"b\": {\"c\": null, \"d\": true}}";
  size_t n = strlen(base);
  char buf[128];
  unsigned long long seed = 12345;
  int parsed = 0;
  for (int it = 0; it < 20000; it++) {
    memcpy(buf, base, n);
    int muts = 1 + (int)(xt_rand_u64(&seed) % 3);
    for (int m = 0; m < muts; m++)
      buf[xt_rand_u64(&seed) % n] = (char)(xt_rand_u64(&seed) % 256);
    size_t len = (size_t)(xt_rand_u64(&seed) % (n + 1));
    xsi_json* v = NULL;
    xs_result r = xsi_json_parse(&v, buf, len, "r.json");
    XT_CHECK(r == XS_OK || r == XS_ERR_PARSE);
    XT_CHECK((r == XS_OK) == (v != NULL));
    if (r == XS_ERR_PARSE) XT_CHECK(strncmp(xs_last_error(), "r.json:", 7) == 0);
    parsed += v != NULL;
    xsi_json_free(v);
  }
  XT_CHECK(parsed > 0);
}

int main(void) {
  XT_RUN(test_values);
  XT_RUN(test_strings);
  XT_RUN(test_numbers);
  XT_RUN(test_structure_errors);
  XT_RUN(test_depth);
  XT_RUN(test_bounded_read);
  XT_RUN(test_getters);
  XT_RUN(test_random_garbage);
  return XT_END();
}
