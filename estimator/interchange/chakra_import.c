/* estimator/interchange/chakra_import.c: Chakra ET files as a graph (chakra_import.h):
 * files read (model/chakra_read.h), ranks numbered, the communicator table
 * read, each rank's nodes laid on threads and streams by their
 * dependencies, collectives grouped across ranks. */
#include "estimator/interchange/chakra_import.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "model/chakra_read.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/graph_builder.h"
#include "model/job.h"
#include "model/kernel_family.h"
#include "model/trace.h"
#include "common/vec.h"
#include "common/banned.h"

#define OOM(err) sc_error_set(err, SC_ENOMEM, "out of memory")

/* Largest comm_group.json read. */
#define MAX_COMM_GROUP_BYTES (16u << 20)

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int is_dir(const char *path)
{
    struct stat st;
    return !stat(path, &st) && S_ISDIR(st.st_mode);
}

int chakra_is_et(const char *const *paths, size_t n, int *yes, struct sc_error *err)
{
    size_t et = 0, table = 0;
    *yes = 0;
    for (size_t i = 0; i < n; i++) {
        int y;
        if (ends_with(paths[i], "comm_group.json") && !is_dir(paths[i])) {
            table++;
            continue;
        }
        int rc = model_et_is_et(paths[i], &y, err);
        if (rc)
            return rc;
        et += y;
    }
    if (et && et + table != n)
        return sc_error_set(err, SC_EINVAL, "Chakra ET files and Kineto traces given together: give one or the other");
    *yes = et > 0;
    return SC_OK;
}

/* ---- what the paths name ---------------------------------------------------- */

struct inputs {
    struct model_paths files; /* the .et files */
    char *table;              /* comm_group.json, or NULL */
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_path(struct model_paths *l, const char *path)
{
    char *p = strdup(path);
    if (!p || sc_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
        free(p);
        return -1;
    }
    l->v[l->n++] = p;
    return 0;
}

static int set_table(struct inputs *in, const char *path, struct sc_error *err)
{
    if (in->table && strcmp(in->table, path))
        return sc_error_set(err, SC_EINVAL, "two communicator tables: '%s' and '%s'", in->table, path);
    free(in->table);
    return (in->table = strdup(path)) ? SC_OK : OOM(err);
}

static int gather(const char *const *paths, size_t n, struct inputs *in, struct sc_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!is_dir(paths[i])) {
            int rc = ends_with(paths[i], "comm_group.json") ? set_table(in, paths[i], err)
                     : add_path(&in->files, paths[i])       ? OOM(err)
                                                            : SC_OK;
            if (rc)
                return rc;
            continue;
        }
        DIR *d = opendir(paths[i]);
        struct dirent *e;
        size_t first = in->files.n;
        char path[4096];
        if (!d)
            return sc_error_set(err, SC_EIO, "cannot open '%s'", paths[i]);
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "%s/%s", paths[i], e->d_name);
            int rc = !strcmp(e->d_name, "comm_group.json") ? set_table(in, path, err)
                     : ends_with(e->d_name, ".et") && add_path(&in->files, path) ? OOM(err)
                                                                                 : SC_OK;
            if (rc) {
                closedir(d);
                return rc;
            }
        }
        closedir(d);
        sc_sort(in->files.v + first, in->files.n - first, sizeof *in->files.v, cmp_str);
    }
    if (!in->files.n)
        return sc_error_set(err, SC_ENOTFOUND, "no .et file given");
    if (in->files.n > MODEL_MAX_RANKS)
        return sc_error_set(err, SC_ELIMIT, "%zu ET files: more than the limit of %u ranks", in->files.n,
                            MODEL_MAX_RANKS);
    return SC_OK;
}

/* ---- the communicator table ------------------------------------------------------ */

/* comm_group.json, {"<id>": [ranks]}: the ranks of communicator `pg`
 * (NULL when the table has no such entry). */
struct comm_table {
    json_t *doc;
};

static int table_read(const char *path, struct comm_table *t, struct sc_error *err)
{
    json_error_t je;
    t->doc = NULL;
    if (!path)
        return SC_OK;
    struct stat st;
    if (!stat(path, &st) && st.st_size > (off_t)MAX_COMM_GROUP_BYTES)
        return sc_error_set(err, SC_ELIMIT, "'%s': over %u bytes", path, MAX_COMM_GROUP_BYTES);
    if (!(t->doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je)))
        return sc_error_set(err, SC_EPARSE, "'%s': line %d: %s", path, je.line, je.text);
    const char *key;
    json_t *v, *r;
    size_t k;
    if (!json_is_object(t->doc))
        goto bad;
    json_object_foreach(t->doc, key, v) {
        if (!json_is_array(v))
            goto bad;
        json_array_foreach(v, k, r) if (!json_is_integer(r) || json_integer_value(r) < 0) goto bad;
    }
    return SC_OK;
bad:
    json_decref(t->doc);
    t->doc = NULL;
    return sc_error_set(err, SC_EPARSE, "'%s': not {\"<id>\": [ranks]}", path);
}

static const json_t *table_ranks(const struct comm_table *t, const char *pg)
{
    return t->doc && pg ? json_object_get(t->doc, pg) : NULL;
}

/* ---- one rank's tasks --------------------------------------------------------------- */

struct import {
    struct model_gb *gb;
    struct model_et_rank **ranks; /* in the job's order */
    const struct model_job *job;
    uint32_t **task_of;           /* per rank, per node: its task */
    struct comm_table table;
};


static void node_class(const struct model_et_rank *r, const struct model_et_node *x, int *cls, int *sub)
{
    const char *name = sc_strtab_str(&r->strings, x->name);
    *sub = 0;
    if (x->type == MODEL_ET_COMM_COLL || x->type == MODEL_ET_COMM_SEND || x->type == MODEL_ET_COMM_RECV) {
        *cls = MODEL_TASK_COMM;
        *sub = x->coll;
    } else if (x->cpu) {
        *cls = MODEL_TASK_HOST;
    } else if (!strncmp(name, "Memcpy", 6) || !strncmp(name, "memcpy", 6) || x->type == MODEL_ET_MEM_LOAD ||
               x->type == MODEL_ET_MEM_STORE) {
        *cls = MODEL_TASK_COPY;
    } else if (!strncmp(name, "Memset", 6) || !strncmp(name, "memset", 6)) {
        *cls = MODEL_TASK_SET;
    } else {
        *cls = MODEL_TASK_KERNEL;
        *sub = (int)model_kernel_family(name);
    }
}

static enum model_edge_kind edge_kind(int from_gpu, int to_gpu)
{
    return from_gpu ? (to_gpu ? MODEL_EDGE_EVENT_SYNC : MODEL_EDGE_HOST_SYNC)
                    : (to_gpu ? MODEL_EDGE_LAUNCH : MODEL_EDGE_INTER_THREAD);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* Where a node runs: a CPU thread (0), a GPU stream of computation (1) or
 * of communication (2). */
static int node_kind(const struct model_et_node *x)
{
    if (x->type == MODEL_ET_COMM_COLL || x->type == MODEL_ET_COMM_SEND || x->type == MODEL_ET_COMM_RECV)
        return 2;
    return !x->cpu;
}

static int import_rank(struct import *im, uint16_t ri, struct sc_error *err)
{
    const struct model_et_rank *r = im->ranks[ri];
    size_t n = r->n_nodes, n_res = 0, cap_res = 0;
    uint32_t *task = im->task_of[ri] = malloc((n ? n : 1) * sizeof *task);
    uint32_t *res = malloc((n ? n : 1) * sizeof *res), *last = NULL, *res_id = NULL;
    uint8_t *has_succ = calloc(n ? n : 1, 1);
    uint32_t step_res, begin, end;
    uint16_t rank;
    int rc;
    if (!task || !res || !has_succ) {
        rc = OOM(err);
        goto out;
    }
    if ((rc = model_gb_add_rank(im->gb, &(struct model_rank_spec){.id = im->job->rank_ids[ri]}, &rank)) ||
        (rc = model_gb_add_resource(im->gb, &(struct model_res_spec){.rank = rank, .label = "step", .pid = 1},
                                    &step_res)) ||
        (rc = model_gb_add_task(im->gb, &(struct model_task_spec){.res = step_res, .cls = MODEL_TASK_MARKER},
                                &begin)))
        goto out;
    for (size_t k = 0; k < n; k++) {
        uint32_t v = r->order[k], on = MODEL_NONE;
        const struct model_et_node *x = &r->nodes[v];
        int kind = node_kind(x), cls, sub;
        /* the resource of a dependency it directly follows, of its kind:
         * it adds no wait the file does not hold */
        for (uint32_t d = x->dep0; d < x->dep0 + x->n_deps; d++) {
            uint32_t p = r->deps[d];
            has_succ[p] = 1;
            if (on == MODEL_NONE && last[res[p]] == task[p] && node_kind(&r->nodes[p]) == kind)
                on = res[p];
        }
        if (on == MODEL_NONE) {
            if (sc_vec_reserve((void **)&last, &cap_res, n_res + 1, sizeof *last) ||
                !(res_id = realloc(res_id, cap_res * sizeof *res_id))) {
                rc = OOM(err);
                goto out;
            }
            struct model_res_spec rs = {.rank = rank, .gpu = kind > 0, .comm = kind == 2, .pid = kind > 0 ? 0 : 1,
                                        .tid = (int64_t)n_res};
            if ((rc = model_gb_add_resource(im->gb, &rs, &res_id[n_res])))
                goto out;
            on = (uint32_t)n_res++;
        }
        node_class(r, x, &cls, &sub);
        struct model_task_spec ts = {.res = res_id[on], .cls = cls, .sub = sub, .dur = x->dur_ns,
                                     .name = sc_strtab_str(&r->strings, x->name), .order = (int64_t)k};
        if ((rc = model_gb_add_task(im->gb, &ts, &task[v])))
            goto out;
        res[v] = on;
        last[on] = task[v];
    }
    if ((rc = model_gb_add_task(im->gb,
                                &(struct model_task_spec){.res = step_res, .cls = MODEL_TASK_MARKER,
                                                          .order = (int64_t)n},
                                &end)))
        goto out;
    for (size_t v = 0; v < n; v++) {
        const struct model_et_node *x = &r->nodes[v];
        for (uint32_t d = x->dep0; d < x->dep0 + x->n_deps && rc == SC_OK; d++) {
            uint32_t p = r->deps[d];
            rc = model_gb_add_edge(im->gb, task[p], task[v],
                                   edge_kind(node_kind(&r->nodes[p]) > 0, node_kind(x) > 0), MODEL_FS, 0, 0);
        }
        if (rc == SC_OK && !has_succ[v])
            rc = model_gb_add_edge(im->gb, task[v], end, MODEL_EDGE_STEP_END, MODEL_FS, 0, 0);
        if (rc)
            goto out;
    }
    rc = model_gb_add_step(im->gb, &(struct model_step_spec){.rank = rank, .begin = begin, .end = end,
                                                             .name = base_name(r->source), .measured_ns = -1,
                                                             .trace_step = MODEL_NONE});
out:
    free(res);
    free(last);
    free(res_id);
    free(has_succ);
    return rc;
}

/* ---- collectives across ranks -------------------------------------------------------- */

/* One communication node of a rank, for matching. */
struct comm_ref {
    uint32_t pg;     /* string id in its rank's strings, or UINT32_MAX */
    uint16_t ri;     /* the rank (job order) */
    uint32_t node;
    uint32_t k;      /* its place among the rank's nodes of the same key */
};

/* The key a node is matched by: its communicator's name, or for a send or
 * receive "src>dst#tag". */
static void comm_key(const struct model_et_rank *r, const struct model_et_node *x, char *buf, size_t n)
{
    if (x->type == MODEL_ET_COMM_COLL)
        snprintf(buf, n, "c:%s", x->pg == UINT32_MAX ? "" : sc_strtab_str(&r->strings, x->pg));
    else
        snprintf(buf, n, "p:%d>%d#%d", x->src, x->dst, x->tag);
}

struct keyed {
    char key[96];
    uint16_t ri;
    uint32_t node, k;
    uint8_t recv;
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return x->ri < y->ri ? -1 : x->ri > y->ri;
}

static int is_comm(const struct model_et_node *x)
{
    return x->type == MODEL_ET_COMM_COLL || x->type == MODEL_ET_COMM_SEND || x->type == MODEL_ET_COMM_RECV;
}

/* Group the collectives: the k-th of key P on each rank is one group, of
 * as many ranks as P's entry in the table lists (when it has one); the k-th send from a to b with
 * a tag and the k-th receive on b from a with it, one pair. */
static int collectives(struct import *im, struct sc_error *err)
{
    struct keyed *v = NULL;
    size_t n = 0, cap = 0;
    uint32_t *members = NULL;
    int rc = SC_OK;
    for (size_t ri = 0; ri < im->job->n_ranks; ri++) {
        const struct model_et_rank *r = im->ranks[ri];
        size_t first = n;
        for (size_t k = 0; k < r->n_nodes; k++) {
            uint32_t node = r->order[k];
            const struct model_et_node *x = &r->nodes[node];
            if (!is_comm(x))
                continue;
            if (sc_vec_reserve((void **)&v, &cap, n + 1, sizeof *v)) {
                rc = OOM(err);
                goto out;
            }
            struct keyed *e = &v[n++];
            comm_key(r, x, e->key, sizeof e->key);
            e->ri = (uint16_t)ri;
            e->node = node;
            e->recv = x->type == MODEL_ET_COMM_RECV;
            e->k = 0;
            for (size_t j = first; j + 1 < n; j++) /* its place among the rank's of its key */
                e->k += !strcmp(v[j].key, e->key);
        }
    }
    sc_sort(v, n, sizeof *v, cmp_keyed);
    members = malloc((im->job->n_ranks + 1) * sizeof *members);
    if (!members && n) {
        rc = OOM(err);
        goto out;
    }
    for (size_t i = 0; i < n;) {
        size_t j = i, m = 0;
        const struct model_et_rank *r0 = im->ranks[v[i].ri];
        const struct model_et_node *x0 = &r0->nodes[v[i].node];
        const json_t *in = x0->type == MODEL_ET_COMM_COLL && x0->pg != UINT32_MAX
                               ? table_ranks(&im->table, sc_strtab_str(&r0->strings, x0->pg))
                               : NULL;
        while (j < n && !strcmp(v[j].key, v[i].key) && v[j].k == v[i].k)
            j++;
        for (size_t q = i; q < j; q++)
            members[m++] = im->task_of[v[q].ri][v[q].node];
        struct model_group_spec gs = {.op = x0->type == MODEL_ET_COMM_COLL ? x0->coll : MODEL_COLL_SENDRECV,
                                      .bytes = x0->comm_size,
                                      .pg = x0->pg == UINT32_MAX ? NULL : sc_strtab_str(&r0->strings, x0->pg),
                                      .seq = (int64_t)v[i].k,
                                      .size = in ? (uint32_t)json_array_size(in) : 0};
        uint32_t g;
        if (gs.size && gs.size < m)
            gs.size = (uint32_t)m;
        if (m && (rc = model_gb_add_group(im->gb, &gs, members, m, &g)))
            goto out;
        model_gb_stats(im->gb)->collectives_matched += m > 1;
        i = j;
    }
out:
    free(v);
    free(members);
    return rc;
}

/* ---- the job ---------------------------------------------------------------------- */

/* A header-only trace per file, ranked (the job sorts them by rank). */
static int make_job(struct model_et_rank **ets, size_t n, const int64_t *ranks, struct model_job **job,
                    struct sc_error *err)
{
    struct model_trace **traces = calloc(n, sizeof *traces);
    int rc = SC_OK;
    if (!traces)
        return OOM(err);
    for (size_t i = 0; i < n && rc == SC_OK; i++) {
        int named = ranks && ranks[i] >= 0 && ranks[i] <= INT32_MAX ? (int)ranks[i] : model_et_name_rank(ets[i]->source);
        if ((rc = model_trace_new(ets[i]->source, &traces[i], err)))
            break;
        traces[i]->rank = named >= 0 ? named : ets[i]->rank >= 0 ? ets[i]->rank : (int64_t)i;
        traces[i]->world_size = (int64_t)n;
        ets[i]->rank = (int)traces[i]->rank;
    }
    if (rc == SC_OK) {
        rc = model_job_from_traces(traces, n, job, err); /* takes them, also on failure */
    } else {
        for (size_t i = 0; i < n; i++)
            model_trace_free(traces[i]);
    }
    free(traces);
    return rc;
}

int chakra_import(const char *const *paths, size_t n, const struct model_limits *lim, const int64_t *ranks,
                      struct model_job **job, struct model_graph **out, struct sc_error *err)
{
    struct inputs in = {{0}, NULL};
    struct model_et_rank **ets = NULL;
    struct import im = {0};
    int rc;
    *job = NULL;
    *out = NULL;
    if ((rc = gather(paths, n, &in, err)))
        goto out;
    if (ranks && in.files.n != n) {
        rc = sc_error_set(err, SC_EINVAL, "ranks given for files, and folders or a table given");
        goto out;
    }
    size_t nr = in.files.n;
    ets = calloc(nr, sizeof *ets);
    im.ranks = calloc(nr, sizeof *im.ranks);
    im.task_of = calloc(nr, sizeof *im.task_of);
    if (!ets || !im.ranks || !im.task_of) {
        rc = OOM(err);
        goto out;
    }
    for (size_t i = 0; i < nr; i++)
        if ((rc = model_et_read_file(in.files.v[i], lim, &ets[i], err)))
            goto out;
    if ((rc = table_read(in.table, &im.table, err)) || (rc = make_job(ets, nr, ranks, job, err)))
        goto out;
    im.job = *job;
    for (size_t i = 0; i < nr; i++) /* the files in the job's order */
        for (size_t k = 0; k < nr; k++)
            if (ets[k] && ets[k]->rank == (*job)->rank_ids[i])
                im.ranks[i] = ets[k];
    if (!(im.gb = model_gb_new(err))) {
        rc = err->code;
        goto out;
    }
    model_gb_set_job(im.gb, *job);
    for (size_t i = 0; i < nr && rc == SC_OK; i++)
        rc = import_rank(&im, (uint16_t)i, err);
    if (rc == SC_OK)
        rc = collectives(&im, err);
    if (rc == SC_OK) {
        rc = model_gb_finish(im.gb, out, err);
        im.gb = NULL;
    }
out:
    model_gb_free(im.gb);
    for (size_t i = 0; ets && i < in.files.n; i++)
        model_et_rank_free(ets[i]);
    for (size_t i = 0; im.task_of && i < in.files.n; i++)
        free(im.task_of[i]);
    free(ets);
    free(im.ranks);
    free(im.task_of);
    json_decref(im.table.doc);
    model_paths_release(&in.files);
    free(in.table);
    if (rc) {
        model_job_free(*job);
        *job = NULL;
    }
    return rc;
}
