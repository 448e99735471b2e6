/* tests/unit/test_layering.c: scripts/check-layering passes on this tree
 * and fails on small trees with a planted upward include, a sibling
 * include and a planted cycle between modules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

/* Write `text` to <root>/<rel>, making its folder. */
static void plant(const char *root, const char *rel, const char *text)
{
    char path[512], dir[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    mkdir(root, 0700);
    mkdir(dir, 0700);
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
}
