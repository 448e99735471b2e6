/* tests/unit/test_job.c: a job from files, a directory or a tar archive,
 * ranks from distributedInfo or the order given; and the command line's
 * behaviour on good and bad input. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/job.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static const char *rank_trace(const char *dir, const char *name, int rank, int with_rank)
{
    char json[512], path[512];
    snprintf(json, sizeof json,
             "{\"distributedInfo\": %s, \"traceEvents\": [{\"ph\":\"X\",\"cat\":\"user_annotation\","
             "\"name\":\"ProfilerStep#1\",\"pid\":%d,\"tid\":%d,\"ts\":100,\"dur\":%d}]}",
             with_rank ? (rank == 0 ? "{\"rank\": 0, \"world_size\": 4}" : rank == 1 ? "{\"rank\": 1}" :
                          rank == 2 ? "{\"rank\": 2}" : "{\"rank\": 3}") : "{}",
             rank, rank, 10 + rank);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return th_write_file(path, json, strlen(json));
}

TEST(job_ranks_from_distributed_info_and_files)
{
    struct model_job *job = NULL;
    struct sc_error err;
    char a[512], b[512];
    snprintf(a, sizeof a, "%s", rank_trace(".", "r1.json", 1, 1));
    snprintf(b, sizeof b, "%s", rank_trace(".", "r0.json", 0, 1));
    const char *paths[] = {a, b}; /* given in the other order */
    CHECK(model_job_load(paths, 2, NULL, 2, &job, &err) == SC_OK);
    if (!job)
        return;
    CHECK_EQ_INT(job->n_ranks, 2);
    CHECK_EQ_INT(job->rank_ids[0], 0);
    CHECK_EQ_INT(job->rank_ids[1], 1);
    CHECK_EQ_INT(job->ranks[0]->steps[0].end - job->ranks[0]->steps[0].start, 10000);
    model_job_free(job);
}

TEST(job_ranks_from_order_without_distributed_info)
{
    struct model_job *job = NULL;
    struct sc_error err;
    char a[512], b[512];
    snprintf(a, sizeof a, "%s", rank_trace(".", "x.json", 7, 0));
    snprintf(b, sizeof b, "%s", rank_trace(".", "y.json", 8, 0));
    const char *paths[] = {b, a};
    CHECK(model_job_load(paths, 2, NULL, 1, &job, &err) == SC_OK);
    if (!job)
        return;
    CHECK_EQ_INT(job->rank_ids[0], 0);
    CHECK_EQ_INT(job->ranks[0]->steps[0].end - job->ranks[0]->steps[0].start, 18000); /* y first */
    model_job_free(job);
}

TEST(job_duplicate_rank_is_an_error)
{
    struct model_job *job = NULL;
    struct sc_error err;
    char a[512], b[512];
    snprintf(a, sizeof a, "%s", rank_trace(".", "d1.json", 1, 1));
    snprintf(b, sizeof b, "%s", rank_trace(".", "d2.json", 1, 1));
    const char *paths[] = {a, b};
    CHECK_EQ_INT(model_job_load(paths, 2, NULL, 0, &job, &err), SC_EINVAL);
    CHECK_CONTAINS(err.msg, "are both rank 1");
    CHECK(job == NULL);
}

TEST(job_from_directory_and_tarball)
{
    char dir[512], cmd[2048];
    snprintf(dir, sizeof dir, "%s/ranks", th_tmpdir());
    mkdir(dir, 0755);
    for (int r = 0; r < 4; r++) {
        char name[32];
        snprintf(name, sizeof name, "ranks/rank%d.json", r);
        rank_trace(".", name, r, 1);
    }
    /* one of them gzip'd, and a hidden file that must be ignored */
    snprintf(cmd, sizeof cmd, "cd '%s' && gzip rank2.json && echo junk > .hidden", dir);
    CHECK(system(cmd) == 0);
    struct model_job *job = NULL;
    struct sc_error err;
    const char *d = dir;
    CHECK(model_job_load(&d, 1, NULL, 0, &job, &err) == SC_OK);
    if (job) {
        CHECK_EQ_INT(job->n_ranks, 4);
        for (int r = 0; r < 4; r++)
            CHECK_EQ_INT(job->rank_ids[r], r);
        CHECK_EQ_INT(job->ranks[0]->world_size, 4);
        model_job_free(job);
    }
    /* the same as a .tar.gz */
    snprintf(cmd, sizeof cmd, "cd '%s' && tar czf ranks.tar.gz ranks", th_tmpdir());
    CHECK(system(cmd) == 0);
    char tgz[600];
    snprintf(tgz, sizeof tgz, "%s/ranks.tar.gz", th_tmpdir());
    const char *t = tgz;
    job = NULL;
    CHECK(model_job_load(&t, 1, NULL, 0, &job, &err) == SC_OK);
    if (job) {
        CHECK_EQ_INT(job->n_ranks, 4);
        CHECK_CONTAINS(job->ranks[2]->source, "ranks.tar.gz:ranks/rank2.json.gz");
        model_job_free(job);
    }
}

TEST(job_real_dlrm_tarball)
{
    const char *p = th_shared_path("param/et_replay/tests/inputs/dlrm_kineto.tar.gz");
    struct model_job *job = NULL;
    struct sc_error err;
    CHECK(model_job_load(&p, 1, NULL, 0, &job, &err) == SC_OK);
    if (!job)
        return;
    CHECK_EQ_INT(job->n_ranks, 8);
    static const double step_ms[8] = {14.455, 19.901, 13.017, 19.313, 17.979, 17.797, 13.091, 12.509};
    for (int r = 0; r < 8; r++) {
        CHECK_EQ_INT(job->rank_ids[r], r);
        CHECK_EQ_INT(job->ranks[r]->n_steps, 1);
        CHECK_NEAR((job->ranks[r]->steps[0].end - job->ranks[r]->steps[0].start) / 1e6, step_ms[r], 0.001);
    }
    model_job_free(job);
}

TEST(job_missing_path_and_bad_archive)
{
    struct model_job *job = NULL;
    struct sc_error err;
    const char *p = "/nonexistent/trace.json";
    CHECK_EQ_INT(model_job_load(&p, 1, NULL, 0, &job, &err), SC_ENOTFOUND);
    CHECK_CONTAINS(err.msg, "/nonexistent/trace.json");
    /* an archive with a bad member names the member */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && mkdir -p bad && printf '{\"traceEvents\": [' > bad/r0.json && tar czf bad.tgz bad",
             th_tmpdir());
    CHECK(system(cmd) == 0);
    char tgz[600];
    snprintf(tgz, sizeof tgz, "%s/bad.tgz", th_tmpdir());
    p = tgz;
    CHECK_EQ_INT(model_job_load(&p, 1, NULL, 0, &job, &err), SC_EPARSE);
    CHECK_CONTAINS(err.msg, "bad.tgz:bad/r0.json");
    CHECK_CONTAINS(err.msg, "truncated JSON");
}

/* pax and GNU long names (over ustar's 100 + 155 bytes), each compression
 * libarchive reads: the same job every time. */
TEST(job_tarball_long_names_and_compressions)
{
    char dir[1024], cmd[4096];
    const char *longdir = "a-directory-name-longer-than-the-hundred-bytes-of-a-ustar-name-field-"
                          "so-only-pax-or-gnu-headers-can-hold-it";
    snprintf(dir, sizeof dir, "%s/long/%s", th_tmpdir(), longdir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    for (int r = 0; r < 3; r++) { /* th_write_file names files in the test's temp dir */
        char name[1200];
        snprintf(name, sizeof name, "long/%s/rank%d-%s.json", longdir, r, longdir);
        rank_trace(".", name, r, 1);
    }
    static const struct {
        const char *file, *tar_flags;
    } archives[] = {
        {"pax.tar", "--format=pax -cf"},       {"gnu.tar.gz", "--format=gnu -czf"},
        {"pax.tar.xz", "--format=pax -cJf"},   {"gnu.tar.bz2", "--format=gnu -cjf"},
        {"pax.tar.zst", "--format=pax --zstd -cf"},
    };
    for (size_t i = 0; i < sizeof archives / sizeof *archives; i++) {
        char path[1200];
        snprintf(cmd, sizeof cmd, "cd '%s/long' && tar %s '%s' '%s' 2>/dev/null", th_tmpdir(),
                 archives[i].tar_flags, archives[i].file, longdir);
        if (system(cmd) != 0) {
            fprintf(stderr, "  (tar cannot write %s here: skipped)\n", archives[i].file);
            continue;
        }
        snprintf(path, sizeof path, "%s/long/%s", th_tmpdir(), archives[i].file);
        const char *p = path;
        struct model_job *job = NULL;
        struct sc_error err;
        int rc = model_job_load(&p, 1, NULL, 0, &job, &err);
        if (rc != SC_OK)
            sc_check_fail(__FILE__, __LINE__, "%s: %s", archives[i].file, err.msg);
        if (!job)
            continue;
        CHECK_EQ_INT(job->n_ranks, 3);
        CHECK_EQ_INT(job->rank_ids[2], 2);
        CHECK_CONTAINS(job->ranks[1]->source, "rank1-a-directory-name-longer");
        CHECK_CONTAINS(job->ranks[1]->source, "-so-only-pax-or-gnu-headers-can-hold-it.json");
        model_job_free(job);
    }
}

/* A tar archive cut short, or with a corrupt header after the first, is an
 * error naming the archive, not a job of what came before. */
TEST(job_truncated_and_corrupt_tarballs)
{
    char cmd[2048], path[600];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && mkdir -p cut && head -c 20000 /dev/zero | tr '\\0' ' ' > cut/pad.json && "
             "printf '{\"traceEvents\": []}' >> cut/pad.json && cp cut/pad.json cut/second.json && "
             "tar cf cut.tar cut/pad.json cut/second.json && head -c 12000 cut.tar > short.tar && "
             "cp cut.tar corrupt.tar && printf 'XXXXXXXX' | dd of=corrupt.tar bs=1 seek=%d conv=notrunc 2>/dev/null",
             th_tmpdir(), 512 + 20480 + 148); /* second.json's header checksum */
    CHECK(system(cmd) == 0);
    const char *names[] = {"short.tar", "corrupt.tar"};
    for (int i = 0; i < 2; i++) {
        struct model_job *job = NULL;
        struct sc_error err;
        snprintf(path, sizeof path, "%s/%s", th_tmpdir(), names[i]);
        const char *p = path;
        CHECK_EQ_INT(model_job_load(&p, 1, NULL, 0, &job, &err), SC_EPARSE);
        CHECK_CONTAINS(err.msg, names[i]);
        CHECK(strstr(err.msg, "second.json") == NULL); /* the archive, not a member's JSON */
        CHECK(job == NULL);
    }
}

/* ---- the command line ------------------------------------------------------------ */

static int cli(const char *a1, const char *a2, const char *a3, char **out, char **err)
{
    char *argv[] = {(char *)th_build_path("stepcast"), (char *)a1, (char *)a2, (char *)a3, NULL};
    return th_run(argv, out, err);
}

TEST(cli_version_and_usage)
{
    char *out = NULL, *err = NULL;
    CHECK_EQ_INT(cli("--version", NULL, NULL, &out, &err), 0);
    CHECK_CONTAINS(out, "stepcast " STEPCAST_VERSION);
    free(out);
    free(err);
    CHECK_EQ_INT(cli("frobnicate", NULL, NULL, &out, &err), 2);
    CHECK_CONTAINS(err, "unknown command 'frobnicate'");
    free(out);
    free(err);
    CHECK_EQ_INT(cli("inspect", NULL, NULL, &out, &err), 2);
    CHECK_CONTAINS(err, "no trace given");
    free(out);
    free(err);
}

TEST(cli_inspect_bad_input_exits_2_naming_file_and_offset)
{
    static const struct {
        const char *name, *body, *says;
    } cases[] = {
        {"empty.json", "", "empty input"},
        {"notjson.json", "this is not json", "byte 0"},
        {"trunc.json", "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1", "truncated JSON"},
        {"negdur.json", "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": -3}]}", "traceEvents[0]"},
        {"noevents.json", "{\"schemaVersion\": 1}", "no traceEvents array"},
        {"utf8.json", "{\"traceEvents\": [{\"name\": \"\xfe\"}]}", "invalid UTF-8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL, *err = NULL;
        const char *path = th_write_file(cases[i].name, cases[i].body, strlen(cases[i].body));
        CHECK_EQ_INT(cli("inspect", path, NULL, &out, &err), 2);
        CHECK_CONTAINS(err, cases[i].name);
        CHECK_CONTAINS(err, cases[i].says);
        CHECK(out && out[0] == '\0'); /* nothing partial on stdout */
        free(out);
        free(err);
    }
    char *out = NULL, *err = NULL;
    CHECK_EQ_INT(cli("inspect", "/nonexistent.json", NULL, &out, &err), 2);
    CHECK_CONTAINS(err, "/nonexistent.json");
    free(out);
    free(err);
}

TEST(cli_inspect_text_and_json)
{
    char *out = NULL, *err = NULL;
    CHECK_EQ_INT(cli("inspect", "tests/fixtures/rocm.json", NULL, &out, &err), 0);
    CHECK_CONTAINS(out, "AMD Instinct MI300X");
    CHECK_CONTAINS(out, "ProfilerStep#7");
    CHECK_CONTAINS(out, "allreduce");
    free(out);
    free(err);
    CHECK_EQ_INT(cli("inspect", "--json", "tests/fixtures/rocm.json", &out, &err), 0);
    CHECK_CONTAINS(out, "\"ranks\"");
    CHECK_CONTAINS(out, "\"lacks\"");
    free(out);
    free(err);
}
