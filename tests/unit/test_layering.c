/* tests/unit/test_layering.c: scripts/check-layering passes on this tree
 * and fails on small trees with a planted upward include, a sibling
 * include, a planted cycle between modules, one through shared
 * headers, and a JSON tree named in an estimator header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

/* Write `text` to <root>/<rel>, making its folders. */
static void plant(const char *root, const char *rel, const char *text)
{
    char path[512], dir[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    mkdir(root, 0700);
    for (char *slash = dir + strlen(root) + 1; (slash = strchr(slash, '/')) != NULL; *slash++ = '/') {
        *slash = '\0';
        mkdir(dir, 0700);
    }
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* Run the script on root: its exit status, its output in *out (malloc'd). */
static int check_layering(const char *root, char **out)
{
    char *argv[] = {"scripts/check-layering", (char *)root, NULL};
    return th_run(argv, out, NULL);
}

TEST(layering_holds_on_the_tree)
{
    char *out = NULL;
    CHECK_EQ_INT(check_layering(".", &out), 0);
    CHECK_CONTAINS(out, "no include of a higher layer, no cycle");
    free(out);
}

TEST(layering_fails_on_planted_problems)
{
    char root[512], *out = NULL;
    /* a clean small tree passes */
    snprintf(root, sizeof root, "%s/clean", th_tmpdir());
    plant(root, "common/a.h", "#include <stdio.h>\n");
    plant(root, "model/b.h", "#include \"common/a.h\"\n");
    plant(root, "model/b.c", "#include \"model/b.h\"\n");
    plant(root, "tests/t.c", "#include \"daemon/anything.h\"\n"); /* tests stand apart */
    CHECK_EQ_INT(check_layering(root, &out), 0);
    free(out);

    /* common including model: upward */
    snprintf(root, sizeof root, "%s/upward", th_tmpdir());
    plant(root, "common/a.h", "#include \"model/b.h\"\n");
    plant(root, "model/b.h", "\n");
    CHECK_EQ_INT(check_layering(root, &out), 1);
    CHECK_CONTAINS(out, "common/a.h: includes \"model/b.h\": common may not include model");
    free(out);

    /* daemon and clients are siblings; nothing includes the profiler */
    snprintf(root, sizeof root, "%s/sibling", th_tmpdir());
    plant(root, "daemon/d.c", "#include \"clients/c.h\"\n");
    plant(root, "clients/c.h", "\n");
    plant(root, "api/x.c", "#include \"profiler/p.h\"\n");
    plant(root, "profiler/p.h", "#include \"common/e.h\"\n");
    plant(root, "common/e.h", "\n");
    CHECK_EQ_INT(check_layering(root, &out), 1);
    CHECK_CONTAINS(out, "daemon may not include clients");
    CHECK_CONTAINS(out, "api may not include profiler");
    CHECK(!strstr(out, "profiler/p.h:"));
    free(out);

    /* inside estimator: costs below calibrate (a cost model never includes
     * its calibration), façades on top, unknown folders refused */
    snprintf(root, sizeof root, "%s/estimator", th_tmpdir());
    plant(root, "estimator/costs/m.c", "#include \"estimator/calibrate/f.h\"\n");
    plant(root, "estimator/calibrate/f.h", "#include \"estimator/costs/m.h\"\n");
    plant(root, "estimator/costs/m.h", "\n");
    plant(root, "estimator/whatif/w.c", "#include \"estimator/open.h\"\n");
    plant(root, "estimator/open.h", "#include \"estimator/whatif/w.h\"\n");
    plant(root, "estimator/whatif/w.h", "#include \"estimator/misc/x.h\"\n");
    plant(root, "estimator/misc/x.h", "\n");
    CHECK_EQ_INT(check_layering(root, &out), 1);
    CHECK_CONTAINS(out, "estimator/costs/m.c: includes \"estimator/calibrate/f.h\": estimator/costs may not include "
                        "estimator/calibrate");
    CHECK_CONTAINS(out, "estimator/whatif/w.c: includes \"estimator/open.h\": estimator/whatif may not include estimator\n");
    CHECK_CONTAINS(out, "estimator/misc is not a known folder");
    CHECK(!strstr(out, "estimator/calibrate/f.h:"));
    CHECK(!strstr(out, "estimator/open.h:"));
    free(out);

    /* a JSON tree in an estimator header: json_t, jansson.h or a void *
     * standing in for one; comments, .c files and the api layer may */
    snprintf(root, sizeof root, "%s/json", th_tmpdir());
    plant(root, "estimator/costs/j.h", "#include <jansson.h>\n/* what void *x_json was */\nint x(void);\n");
    plant(root, "estimator/spec/k.h", "json_t *spec_k(void);\n");
    plant(root, "estimator/calibrate/l.h", "int calib_l(const void *json);\nvoid *calib_l_JSON(void);\n");
    plant(root, "estimator/calibrate/l.c", "#include <jansson.h>\nstatic json_t *l;\n");
    plant(root, "estimator/synth/m.h", "/* no json_t here */\nvoid *synth_m(void *ctx);\n");
    plant(root, "api/n.h", "#include <jansson.h>\njson_t *api_n(void);\n");
    CHECK_EQ_INT(check_layering(root, &out), 1);
    CHECK_CONTAINS(out, "estimator/costs/j.h:1: a JSON tree in an estimator header");
    CHECK_CONTAINS(out, "estimator/spec/k.h:1: a JSON tree");
    CHECK_CONTAINS(out, "estimator/calibrate/l.h:1: a JSON tree");
    CHECK_CONTAINS(out, "estimator/calibrate/l.h:2: a JSON tree");
    CHECK(!strstr(out, "j.h:2") && !strstr(out, "l.c") && !strstr(out, "m.h") && !strstr(out, "api/n.h"));
    CHECK_CONTAINS(out, "estimator/costs/j.h:1: includes <jansson.h>"); /* and a cost model's */
    CHECK_CONTAINS(out, "5 problem(s)");
    free(out);

    /* the estimator's documents are read through estimator/doc: a cost
     * model or spec module including Jansson is refused, the Hugging Face
     * reader and the other folders are not */
    snprintf(root, sizeof root, "%s/doc", th_tmpdir());
    plant(root, "estimator/costs/p.c", "#include <stdio.h>\n#include <jansson.h>\n");
    plant(root, "estimator/spec/q.c", "  # include <jansson.h>\n");
    plant(root, "estimator/spec/hf_config.c", "#include <jansson.h>\n");
    plant(root, "estimator/doc/json_doc.c", "#include <jansson.h>\n");
    plant(root, "estimator/plan/r.c", "#include <jansson.h>\n");
    CHECK_EQ_INT(check_layering(root, &out), 1);
    CHECK_CONTAINS(out, "estimator/costs/p.c:2: includes <jansson.h>: its documents are read through estimator/doc");
    CHECK_CONTAINS(out, "estimator/spec/q.c:1: includes <jansson.h>");
    CHECK(!strstr(out, "hf_config") && !strstr(out, "doc/json_doc.c") && !strstr(out, "plan/r.c"));
    CHECK_CONTAINS(out, "2 problem(s)");
    free(out);

    /* two modules of one layer calling into each other (a.c includes b.h,
     * b.c includes a.h): a cycle, though no header includes another */
    snprintf(root, sizeof root, "%s/cycle", th_tmpdir());
    plant(root, "daemon/a.h", "\n");
    plant(root, "daemon/b.h", "\n");
    plant(root, "daemon/c.h", "\n");
    plant(root, "daemon/a.c", "#include \"daemon/a.h\"\n#include \"daemon/b.h\"\n");
    plant(root, "daemon/b.c", "#include \"daemon/b.h\"\n#include \"daemon/c.h\"\n");
    plant(root, "daemon/c.c", "#include \"daemon/c.h\"\n#include \"daemon/a.h\"\n");
    CHECK_EQ_INT(check_layering(root, &out), 1);
    CHECK_CONTAINS(out, "cycle: ");
    CHECK(strstr(out, "daemon/a -> daemon/b -> daemon/c -> daemon/a") ||
          strstr(out, "daemon/b -> daemon/c -> daemon/a -> daemon/b") ||
          strstr(out, "daemon/c -> daemon/a -> daemon/b -> daemon/c"));
    CHECK_CONTAINS(out, "1 problem(s)");
    free(out);

    /* a cycle of calls through shared headers, which no include shows:
     * a.c includes x.h, whose fb() b.c defines; b.c includes y.h, whose
     * fa() a.c defines. Only the calls make it a cycle: c.c includes x.h
     * too but calls nothing of it, and d.c defines fd() of x.h but calls
     * nothing. */
    snprintf(root, sizeof root, "%s/shared", th_tmpdir());
    plant(root, "clients/x.h", "int fb(void);\nint fd(void);\n");
    plant(root, "clients/y.h", "int fa(void);\nint fc(void);\n");
    plant(root, "clients/a.c", "#include \"clients/x.h\"\n#include \"clients/y.h\"\nint fa(void)\n{\n    return fb();\n}\n");
    plant(root, "clients/b.c", "#include \"clients/x.h\"\n#include \"clients/y.h\"\nint fb(void)\n{\n    return fa();\n}\n");
    plant(root, "clients/c.c", "#include \"clients/x.h\"\n#include \"clients/y.h\"\nint fc(void)\n{\n    return 1; /* fd() */\n}\n");
    plant(root, "clients/d.c", "#include \"clients/x.h\"\nint fd(void)\n{\n    return 0;\n}\n");
    CHECK_EQ_INT(check_layering(root, &out), 1);
    CHECK(strstr(out, "cycle: clients/a (fb() via clients/x.h) -> clients/b (fa() via clients/y.h) -> clients/a") ||
          strstr(out, "cycle: clients/b (fa() via clients/y.h) -> clients/a (fb() via clients/x.h) -> clients/b"));
    CHECK(!strstr(out, "clients/c ") && !strstr(out, "clients/d "));
    CHECK_CONTAINS(out, "1 problem(s)");
    free(out);

    /* the same calls, one way only: no cycle */
    snprintf(root, sizeof root, "%s/oneway", th_tmpdir());
    plant(root, "clients/x.h", "int fb(void);\n");
    plant(root, "clients/y.h", "int fa(void);\n");
    plant(root, "clients/a.c", "#include \"clients/x.h\"\n#include \"clients/y.h\"\nint fa(void)\n{\n    return fb();\n}\n");
    plant(root, "clients/b.c", "#include \"clients/x.h\"\nint fb(void)\n{\n    return 2;\n}\n");
    CHECK_EQ_INT(check_layering(root, &out), 0);
    free(out);
}
