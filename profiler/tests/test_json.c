/* profiler/tests/test_json.c: the streaming JSON writer: escaping, UTF-8
 * repair, numbers, commas, gzip, long strings. Output is checked by parsing
 * it back with Jansson. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zlib.h>

#include "profiler/json.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

/* Write with f into a temporary file and parse it back. */
static json_t *roundtrip(void (*f)(struct prof_json *w), int gzip, char **text)
{
    static int n;
    char name[64];
    snprintf(name, sizeof name, "json%d%s", n++, gzip ? ".gz" : "");
    const char *path = th_write_file(name, "", 0);
    struct prof_json *w = malloc(sizeof *w);
    CHECK(w != NULL);
    CHECK_EQ_INT(prof_json_open(w, path, gzip), 0);
    f(w);
    CHECK_EQ_INT(prof_json_close(w), 0);
    free(w);
    char *data;
    size_t len = 0;
    if (gzip) {
        gzFile g = gzopen(path, "rb");
        data = malloc(1 << 22);
        int r = gzread(g, data, (1 << 22) - 1);
        gzclose(g);
        CHECK(r > 0);
        len = r > 0 ? (size_t)r : 0;
        data[len] = '\0';
    } else {
        data = th_read_file(path, &len);
    }
    json_error_t err;
    json_t *doc = json_loadb(data, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &err);
    if (!doc)
        fprintf(stderr, "not JSON: %s at %d: %.200s\n", err.text, err.position, data);
    if (text)
        *text = data;
    else
        free(data);
    return doc;
}

static const char nasty[] = "q\"b\\s/\x01\x1f\n\r\t\b\f\x7f"
                            "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80" /* é 中 😀 */
                            "\xff\x80\xc0\x80\xed\xa0\x80\xe4\xb8";  /* invalid, truncated */

static void write_strings(struct prof_json *w)
{
    prof_json_begin_object(w);
    prof_json_key(w, "nasty");
    prof_json_strn(w, nasty, sizeof nasty - 1);
    prof_json_kstr(w, "empty", "");
    prof_json_kstr(w, "null ptr", NULL);
    prof_json_key(w, "nul inside");
    prof_json_strn(w, "a\0b", 3);
    prof_json_end_object(w);
}

TEST(prof_json_escapes_and_repairs_strings)
{
    char *text;
    json_t *doc = roundtrip(write_strings, 0, &text);
    CHECK(doc != NULL);
    const char *expect = "q\"b\\s/\x01\x1f\n\r\t\b\f\x7f\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80"
                         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd";
    CHECK_STREQ(json_string_value(json_object_get(doc, "nasty")), expect);
    CHECK_STREQ(json_string_value(json_object_get(doc, "empty")), "");
    CHECK_STREQ(json_string_value(json_object_get(doc, "null ptr")), "");
    CHECK_EQ_INT(json_string_length(json_object_get(doc, "nul inside")), 3);
    CHECK_CONTAINS(text, "\\u0001\\u001f\\n\\r\\t\\b\\f");
    json_decref(doc);
    free(text);
}

static void write_numbers(struct prof_json *w)
{
    prof_json_begin_object(w);
    prof_json_kint(w, "min", INT64_MIN);
    prof_json_kint(w, "max", INT64_MAX);
    prof_json_kuint(w, "umax", UINT64_MAX);
    prof_json_kint(w, "zero", 0);
    prof_json_kus(w, "us0", 0);
    prof_json_kus(w, "us", 1234567);
    prof_json_kus(w, "neg", -5);
    prof_json_key(w, "double");
    prof_json_double(w, 2.5, 3);
    prof_json_key(w, "inf");
    prof_json_double(w, 1.0 / 0.0, 2);
    prof_json_key(w, "list");
    prof_json_begin_array(w);
    prof_json_int(w, 1);
    prof_json_begin_object(w);
    prof_json_end_object(w);
    prof_json_begin_array(w);
    prof_json_end_array(w);
    prof_json_bool(w, 1);
    prof_json_null(w);
    prof_json_end_array(w);
    prof_json_end_object(w);
}

TEST(prof_json_numbers_and_structure)
{
    char *text;
    json_t *doc = roundtrip(write_numbers, 0, &text);
    CHECK(doc != NULL);
    CHECK_CONTAINS(text, "\"min\":-9223372036854775808");
    CHECK_CONTAINS(text, "\"max\":9223372036854775807");
    CHECK_CONTAINS(text, "\"umax\":18446744073709551615");
    CHECK_CONTAINS(text, "\"us0\":0.000,\"us\":1234.567,\"neg\":-0.005");
    CHECK_CONTAINS(text, "\"double\":2.500,\"inf\":0.00");
    CHECK_CONTAINS(text, "\"list\":[1,{},[],true,null]");
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "list")), 5);
    json_decref(doc);
    free(text);
}

static void write_long(struct prof_json *w)
{
    size_t n = 200000;
    char *s = malloc(n);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + i % 26);
    s[70000] = '"';
    prof_json_begin_array(w);
    for (int i = 0; i < 3; i++)
        prof_json_strn(w, s, n);
    prof_json_end_array(w);
    free(s);
}

TEST(prof_json_long_strings_and_gzip)
{
    json_t *doc = roundtrip(write_long, 1, NULL);
    CHECK(doc != NULL);
    CHECK_EQ_INT(json_array_size(doc), 3);
    const char *s = json_string_value(json_array_get(doc, 2));
    CHECK(s && strlen(s) == 200000 && s[70000] == '"' && s[199999] == 'a' + 199999 % 26);
    json_decref(doc);
}

TEST(prof_json_reports_write_errors)
{
    struct prof_json *w = malloc(sizeof *w);
    CHECK_EQ_INT(prof_json_open(w, "/nonexistent-dir/x.json", 0), -1);
    CHECK_EQ_INT(prof_json_open(w, "/dev/full", 0), 0);
    for (int i = 0; i < 100000; i++)
        prof_json_str(w, "filling the disk");
    CHECK_EQ_INT(prof_json_close(w), -1);
    free(w);
}

/* Nesting past PROF_JSON_DEPTH is an error, and the writer's own state
 * stays intact (the per-level flags end at that depth). */
TEST(prof_json_too_deep_is_an_error)
{
    struct prof_json *w = malloc(sizeof *w);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(w && f);
    prof_json_open_stream(w, f);
    for (int i = 0; i < 40; i++) {
        prof_json_begin_array(w);
        prof_json_int(w, i);
    }
    for (int i = 0; i < 40; i++)
        prof_json_end_array(w);
    CHECK(w->len <= sizeof w->buf);
    CHECK_EQ_INT(w->after_key, 0);
    CHECK_EQ_INT(w->written, 0);
    CHECK_EQ_INT(prof_json_close(w), -1);
    free(w);
    free(text);
}
