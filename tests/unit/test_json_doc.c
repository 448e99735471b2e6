/* tests/unit/test_json_doc.c: the table-driven reader and writer of the
 * estimator's JSON documents (estimator/doc/json_doc.h), on a table that
 * holds every kind of field: values land where the table says, each wrong
 * value is named by its path, required keys are required only inside an
 * object that is there, and what is written reads back the same. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/doc/json_doc.h"
#include "tests/check.h"
#include "common/banned.h"

struct point {
    double x;
    int64_t id;
};

struct thing {
    char name[8];
    int64_t count;
    int small;
    double ratio;
    int on;
    int colour;
    char names[3][6];
    int n_names;
    struct point points[2];
    int n_points;
    struct point origin;
    double opt_ratio;
    int64_t opt_count;
};

static const struct doc_name colours[] = {{"red", 1}, {"blue", 2}, {NULL, 0}};

#define PT(member) offsetof(struct point, member), sizeof(((struct point *)0)->member)
static const struct doc_field point_fields[] = {
    {"x", DOC_NUM, DOC_REQUIRED, PT(x), -1, 1, NULL, NULL, 0},
    {"id", DOC_INT, 0, PT(id), 0, 9, NULL, NULL, 0},
};
static const struct doc_table point_doc = {point_fields, 2, "a point", SC_EPARSE, 0};

#define AT(member) offsetof(struct thing, member), sizeof(((struct thing *)0)->member)
static const struct doc_field thing_fields[] = {
    {"name", DOC_STR, DOC_REQUIRED, AT(name), 0, 0, NULL, NULL, 0},
    {"count", DOC_INT, 0, AT(count), 1, 1e12, NULL, NULL, 0},
    {"small", DOC_INT, 0, AT(small), -5, 5, NULL, NULL, 0},
    {"ratio", DOC_NUM, 0, AT(ratio), 0, 1, NULL, NULL, 0},
    {"on", DOC_BOOL, 0, AT(on), 0, 1, NULL, NULL, 0},
    {"colour", DOC_ENUM, 0, AT(colour), 0, 0, colours, NULL, 0},
    {"names", DOC_STRS, 0, offsetof(struct thing, names), 6, 0, 3, NULL, NULL, offsetof(struct thing, n_names)},
    {"points", DOC_LIST, DOC_SKIP_EMPTY, offsetof(struct thing, points), sizeof(struct point), 1, 2, NULL,
     &point_doc, offsetof(struct thing, n_points)},
    {"origin", DOC_OBJECT, 0, AT(origin), 0, 0, NULL, &point_doc, 0},
    {"opt", DOC_OBJECT, 0, 0, 0, 0, 0, NULL, NULL, 0},
    {"opt.ratio", DOC_NUM, DOC_REQUIRED | DOC_NULLABLE, AT(opt_ratio), 0, 2, NULL, NULL, 0},
    {"opt.count", DOC_INT, DOC_NULLABLE, AT(opt_count), 1, 100, NULL, NULL, 0},
    {"notes", DOC_IGNORED, 0, 0, 0, 0, 0, NULL, NULL, 0},
};
#define N_THING (sizeof thing_fields / sizeof thing_fields[0])
static const struct doc_table thing_doc = {thing_fields, N_THING, "the thing", SC_EINVAL, 4096};

static int read_thing(const char *text, struct thing *t, unsigned char *given, struct sc_error *err)
{
    memset(t, 0, sizeof *t);
    t->opt_ratio = -1; /* not given */
    return doc_read(text, strlen(text), &thing_doc, NULL, t, given, err);
}

TEST(json_doc_reads_every_kind_of_field_into_its_place)
{
    struct thing t;
    struct sc_error err;
    unsigned char given[N_THING];
    const char *doc = "{\"name\":\"abc\",\"count\":1000000000000,\"small\":-5,\"ratio\":0.25,\"on\":true,"
                      "\"colour\":\"blue\",\"names\":[\"a\",\"bcdef\"],\"points\":[{\"x\":0.5,\"id\":3},{\"x\":-1}],"
                      "\"origin\":{\"x\":1},\"opt\":{\"ratio\":null,\"count\":7},\"notes\":[1,{\"any\":\"thing\"}]}";
    REQUIRE(read_thing(doc, &t, given, &err) == SC_OK);
    CHECK_STREQ(t.name, "abc");
    CHECK(t.count == 1000000000000LL);
    CHECK_EQ_INT(t.small, -5);
    CHECK_NEAR(t.ratio, 0.25, 0);
    CHECK_EQ_INT(t.on, 1);
    CHECK_EQ_INT(t.colour, 2);
    CHECK_EQ_INT(t.n_names, 2);
    CHECK_STREQ(t.names[1], "bcdef");
    CHECK_EQ_INT(t.n_points, 2);
    CHECK_NEAR(t.points[0].x, 0.5, 0);
    CHECK(t.points[0].id == 3 && t.points[1].id == 0);
    CHECK_NEAR(t.points[1].x, -1, 0);
    CHECK_NEAR(t.origin.x, 1, 0);
    CHECK_NEAR(t.opt_ratio, -1, 0); /* null: left as it was */
    CHECK(t.opt_count == 7);
    /* given marks what the document holds, and only that */
    for (size_t i = 0; i < N_THING; i++)
        CHECK_EQ_INT(given[i], 1);
    REQUIRE(read_thing("{\"name\":\"x\"}", &t, given, &err) == SC_OK);
    CHECK_EQ_INT(given[0], 1);
    for (size_t i = 1; i < N_THING; i++)
        CHECK_EQ_INT(given[i], 0);
}

TEST(json_doc_names_the_path_of_each_wrong_value)
{
    struct thing t;
    struct sc_error err;
    const char *bad[][3] = {
        {"{", "not valid JSON", NULL},
        {"[1]", "the thing must be a JSON object", NULL},
        {"{}", "name: missing (it is required)", NULL},
        {"{\"name\":\"x\",\"nope\":1}", "nope: unknown key", NULL},
        {"{\"name\":\"x\",\"opt\":{\"nope\":1}}", "opt.nope: unknown key", NULL},
        {"{\"name\":\"x\",\"opt.ratio\":1}", "opt.ratio: unknown key", NULL},
        {"{\"name\":\"x\",\"name\":\"y\"}", "duplicate", NULL},
        {"{\"name\":\"\"}", "name: must be 1 to 7 bytes", NULL},
        {"{\"name\":\"12345678\"}", "name: must be 1 to 7 bytes", NULL},
        {"{\"name\":\"a\\u0001\"}", "name: holds a control character", NULL},
        {"{\"name\":null}", "name: must be a string", NULL},
        {"{\"name\":\"x\",\"count\":0}", "count: 0 is out of range (1 to 1000000000000)", NULL},
        {"{\"name\":\"x\",\"count\":1.5}", "count: must be an integer", NULL},
        {"{\"name\":\"x\",\"small\":6}", "small: 6 is out of range (-5 to 5)", NULL},
        {"{\"name\":\"x\",\"ratio\":1.5}", "ratio: 1.5 is out of range (0 to 1)", NULL},
        {"{\"name\":\"x\",\"ratio\":\"1\"}", "ratio: must be a number", NULL},
        {"{\"name\":\"x\",\"on\":1}", "on: must be true or false", NULL},
        {"{\"name\":\"x\",\"colour\":\"green\"}", "colour: \"green\" is not one of red, blue", NULL},
        {"{\"name\":\"x\",\"names\":[\"a\",\"b\",\"c\",\"d\"]}", "names: must hold 0 to 3 items", NULL},
        {"{\"name\":\"x\",\"names\":[\"a\",1]}", "names[1]: must be a string", NULL},
        {"{\"name\":\"x\",\"names\":[\"abcdef\"]}", "names[0]: must be 1 to 5 bytes", NULL},
        {"{\"name\":\"x\",\"points\":[]}", "points: must hold 1 to 2 items", NULL},
        {"{\"name\":\"x\",\"points\":[1]}", "points[0]: must be an object", NULL},
        {"{\"name\":\"x\",\"points\":[{\"x\":0},{\"id\":1}]}", "points[1].x: missing (it is required)", NULL},
        {"{\"name\":\"x\",\"points\":[{\"x\":0,\"y\":1}]}", "points[0].y: unknown key", NULL},
        {"{\"name\":\"x\",\"origin\":{\"x\":2}}", "origin.x: 2 is out of range (-1 to 1)", NULL},
        {"{\"name\":\"x\",\"origin\":[]}", "origin: must be an object", NULL},
        {"{\"name\":\"x\",\"opt\":{}}", "opt.ratio: missing (it is required)", NULL},
        {"{\"name\":\"x\",\"opt\":{\"ratio\":1,\"count\":\"7\"}}", "opt.count: must be an integer or null", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = read_thing(bad[i][0], &t, NULL, &err);
        CHECK(rc == SC_EINVAL || rc == SC_EPARSE);
        CHECK_CONTAINS(err.msg, bad[i][1]);
    }
    /* malformed JSON is a parse error, a wrong value the table's code */
    CHECK_EQ_INT(read_thing("{\"name\":", &t, NULL, &err), SC_EPARSE);
    CHECK_EQ_INT(read_thing("{\"name\":1}", &t, NULL, &err), SC_EINVAL);
    /* an optional object's required member is required only when it is there */
    CHECK_EQ_INT(read_thing("{\"name\":\"x\"}", &t, NULL, &err), SC_OK);
    /* the size limit comes before parsing */
    char *big = malloc(5000);
    REQUIRE(big != NULL);
    memset(big, ' ', 4999);
    big[0] = '{';
    big[4998] = '}';
    big[4999] = 0;
    CHECK_EQ_INT(read_thing(big, &t, NULL, &err), SC_ELIMIT);
    CHECK_CONTAINS(err.msg, "the thing is 4999 bytes, over the limit of 4096");
    free(big);
}

TEST(json_doc_reads_one_subtree_when_asked)
{
    struct thing t;
    struct sc_error err;
    memset(&t, 0, sizeof t);
    const char *only = "{\"opt\":{\"ratio\":0.5}}";
    CHECK_EQ_INT(doc_read(only, strlen(only), &thing_doc, "opt", &t, NULL, &err), SC_OK);
    CHECK_NEAR(t.opt_ratio, 0.5, 0);
    const char *missing = "{\"opt\":{\"count\":3}}";
    CHECK_EQ_INT(doc_read(missing, strlen(missing), &thing_doc, "opt", &t, NULL, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "opt.ratio: missing");
    const char *more = "{\"opt\":{\"ratio\":0.5},\"name\":\"x\"}";
    CHECK_EQ_INT(doc_read(more, strlen(more), &thing_doc, "opt", &t, NULL, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "opt: expected a document with only a opt object");
}

TEST(json_doc_writes_what_it_reads_back_the_same)
{
    struct thing t, back;
    struct sc_error err;
    const char *doc = "{\"name\":\"abc\",\"count\":12,\"small\":3,\"ratio\":0.1,\"on\":true,\"colour\":\"red\","
                      "\"names\":[\"a\",\"b\"],\"points\":[{\"x\":0.30000000000000004,\"id\":3}],"
                      "\"origin\":{\"x\":-0.5},\"opt\":{\"ratio\":1.5}}";
    REQUIRE(read_thing(doc, &t, NULL, &err) == SC_OK);
    char *text = doc_write(&thing_doc, NULL, &t, NULL, 2);
    REQUIRE(text != NULL);
    REQUIRE(read_thing(text, &back, NULL, &err) == SC_OK);
    CHECK(memcmp(&t, &back, sizeof t) == 0); /* 17 digits: every double exactly */
    /* keys in the table's order, a value not given written null, ignored keys not at all */
    CHECK_CONTAINS(text, "\"name\": \"abc\",\n  \"count\": 12");
    CHECK_CONTAINS(text, "\"count\": null");
    CHECK(strstr(text, "notes") == NULL);
    free(text);
    /* an empty list that skips is left out; one subtree alone */
    t.n_points = 0;
    text = doc_write(&thing_doc, NULL, &t, NULL, 0);
    REQUIRE(text != NULL);
    CHECK(strstr(text, "points") == NULL);
    free(text);
    text = doc_write(&thing_doc, "opt", &t, NULL, 0);
    REQUIRE(text != NULL);
    CHECK_STREQ(text, "{\"opt\": {\"ratio\": 1.5, \"count\": null}}");
    free(text);
}
