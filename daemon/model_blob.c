/* daemon/model_blob.c: a built model to and from bytes (model_blob.h). */
#include "daemon/model_blob.h"

#include <stdlib.h>
#include <string.h>

#include "api/resources.h"
#include "common/strtab.h"
#include "daemon/built.h"
#include "daemon/digest.h"
#include "estimator/model_open.h"
#include "estimator/traced.h"
#include "model/graph.h"
#include "model/graph_check.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "common/banned.h"

static const char magic[8] = {'S', 'C', 'M', 'O', 'D', 'E', 'L', '\0'};

/* The sizes of the records stored whole, and the byte order, hashed. */
static uint32_t layout(void)
{
    const uint64_t sizes[] = {
        0x0102030405060708u,           sizeof(struct api_trace),       sizeof(struct model_track),
        sizeof(struct model_cat),      sizeof(struct model_device),    sizeof(struct model_pg),
        sizeof(struct model_step),     sizeof(struct model_task),      sizeof(struct model_task_src),
        sizeof(struct model_edge),     sizeof(struct model_resource),  sizeof(struct model_graph_step),
        sizeof(struct model_graph_rank), sizeof(struct model_coll_group), sizeof(struct model_task_part),
        sizeof(struct model_task_peer), sizeof(struct model_folded_rank), sizeof(struct model_graph_stats),
        sizeof(struct model_coll_wait),
    };
    return (uint32_t)sc_hash_bytes(sizes, sizeof sizes);
}

/* ---- writing ---- */

struct wbuf {
    uint8_t *p;
    size_t n, cap;
    int oom;
};

static void put(struct wbuf *b, const void *p, size_t n)
{
    if (b->oom || !n)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void put_u64(struct wbuf *b, uint64_t v)
{
    put(b, &v, sizeof v);
}

/* A counted array of records of `size` bytes. */
static void put_array(struct wbuf *b, const void *p, size_t count, size_t size)
{
    put_u64(b, count);
    put(b, p, count * size);
}

/* A string: its length then its bytes; UINT64_MAX for NULL. */
static void put_str(struct wbuf *b, const char *s)
{
    put_u64(b, s ? strlen(s) : UINT64_MAX);
    if (s)
        put(b, s, strlen(s));
}

/* Strings 1.. of a table (0 is always ""), in id order. */
static void put_strtab(struct wbuf *b, const struct sc_strtab *t)
{
    put_u64(b, t->n);
    for (size_t i = 1; i < t->n; i++) {
        put_u64(b, t->strs[i].len);
        put(b, t->strs[i].s, t->strs[i].len);
    }
}

static void put_trace(struct wbuf *b, const struct model_trace *t)
{
    const int64_t v[] = {t->schema_version, t->rank,          t->world_size,    t->backend,
                         t->nccl_version,   t->base_time_ns,  t->has_base_time, t->time_unanchored,
                         t->has_distributed_info, t->has_device_properties, t->synthetic, (int64_t)t->n_entries,
                         (int64_t)t->n_metadata, (int64_t)t->n_counters, (int64_t)t->n_instants,
                         (int64_t)t->n_other_phase, (int64_t)t->n_unknown, t->first_ts, t->last_end,
                         (int64_t)t->n_complete, t->step_marker};
    put_str(b, t->source);
    put_strtab(b, &t->strings);
    put_array(b, t->tracks, t->n_tracks, sizeof *t->tracks);
    put_array(b, t->cats, t->n_cats, sizeof *t->cats);
    put_array(b, t->devices, t->n_devices, sizeof *t->devices);
    put_array(b, t->pgs, t->n_pgs, sizeof *t->pgs);
    put_array(b, t->steps, t->n_steps, sizeof *t->steps);
    put_array(b, v, sizeof v / sizeof v[0], sizeof v[0]);
}

static void put_graph(struct wbuf *b, const struct model_graph *g)
{
    size_t n = g->n_tasks;
    put_strtab(b, &g->names);
    put_array(b, g->tasks, n, sizeof *g->tasks);
    put_array(b, g->src, n, sizeof *g->src);
    put_array(b, g->prev, 4 * n + 2, sizeof *g->prev); /* prev, next, pred_at, succ_at */
    put_array(b, g->edges, g->n_edges, sizeof *g->edges);
    put_array(b, g->succs, g->n_edges, sizeof *g->succs);
    put_array(b, g->res, g->n_res, sizeof *g->res);
    put_array(b, g->steps, g->n_steps, sizeof *g->steps);
    put_array(b, g->ranks, g->n_ranks, sizeof *g->ranks);
    put_array(b, g->groups, g->n_groups, sizeof *g->groups);
    put_array(b, g->group_at, g->n_groups ? g->n_groups + 1 : 0, sizeof *g->group_at);
    put_array(b, g->group_tasks, g->n_groups ? g->group_at[g->n_groups] : 0, sizeof *g->group_tasks);
    put_array(b, g->parts, g->n_parts, sizeof *g->parts);
    put_array(b, g->peers, g->n_peers, sizeof *g->peers);
    put_array(b, &g->stats, 1, sizeof g->stats);
    put_u64(b, (uint64_t)g->folding.on);
    put_u64(b, g->folding.ranks);
    put_array(b, g->folding.folded, g->folding.n_folded, sizeof *g->folding.folded);
    put_array(b, g->folding.measured, g->folding.n_measured, sizeof *g->folding.measured);
}

int model_blob_seal(const void *payload, size_t len, void **out, size_t *n, struct sc_error *err)
{
    uint8_t *p = malloc(MODEL_BLOB_HEADER + len);
    char sum[DIGEST_HEX_LEN + 1];
    uint32_t version = MODEL_BLOB_VERSION, lay = layout();
    uint64_t bytes = len;
    int rc;
    *out = NULL;
    *n = 0;
    if (!p)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if ((rc = digest_hex(payload, len, sum, err))) {
        free(p);
        return rc;
    }
    memcpy(p, magic, 8);
    memcpy(p + 8, &version, 4);
    memcpy(p + 12, &lay, 4);
    memcpy(p + 16, &bytes, 8);
    memcpy(p + 24, sum, DIGEST_HEX_LEN);
    if (len)
        memcpy(p + MODEL_BLOB_HEADER, payload, len);
    *out = p;
    *n = MODEL_BLOB_HEADER + len;
    return SC_OK;
}

int model_blob_write(const struct built_model *m, void **out, size_t *n, struct sc_error *err)
{
    struct wbuf b = {0};
    size_t nt;
    const struct api_trace *traces = built_model_traces(m, &nt);
    const struct est_traced_model *om = built_model_opened(m);
    const struct model_job *job = est_model_job(om);
    const struct model_coll_waits *w = est_model_waits(om);
    put_array(&b, traces, nt, sizeof *traces);
    put_array(&b, job->rank_ids, job->n_ranks, sizeof *job->rank_ids);
    for (size_t i = 0; i < job->n_ranks; i++)
        put_trace(&b, job->ranks[i]);
    put_graph(&b, est_model_graph(om));
    put_array(&b, w->v, w->n, sizeof *w->v);
    int rc = b.oom ? sc_error_set(err, SC_ENOMEM, "out of memory") : model_blob_seal(b.p, b.n, out, n, err);
    free(b.p);
    return rc;
}

/* ---- reading ---- */

struct rbuf {
    const uint8_t *p;
    size_t n, off;
    struct sc_error *err;
    int rc; /* the first failure */
};

/* Fail the read: the first failure is kept. */
#define BAD(r, ...) ((r)->rc ? (r)->rc : ((r)->rc = sc_error_set((r)->err, SC_EINVAL, "model blob: " __VA_ARGS__)))

static int get(struct rbuf *r, void *p, size_t n, const char *what)
{
    if (r->rc)
        return r->rc;
    if (n > r->n - r->off)
        return BAD(r, "truncated in %s (%zu bytes wanted at %zu of %zu)", what, n, r->off, r->n);
    memcpy(p, r->p + r->off, n);
    r->off += n;
    return SC_OK;
}

static uint64_t get_u64(struct rbuf *r, const char *what)
{
    uint64_t v = 0;
    get(r, &v, sizeof v, what);
    return v;
}

/* A counted array of records of `size` bytes into *out (from malloc, at
 * least one byte) and *count; `want`, when not SIZE_MAX, the count it
 * must have. */
static void *get_array(struct rbuf *r, size_t size, size_t *count, size_t want, const char *what)
{
    uint64_t c = get_u64(r, what);
    void *p;
    *count = 0;
    if (r->rc)
        return NULL;
    if (c > (r->n - r->off) / size)
        return BAD(r, "%s: %llu records of %zu bytes, more than the blob holds", what, (unsigned long long)c,
                   size),
               NULL;
    if (want != SIZE_MAX && c != want)
        return BAD(r, "%s: %llu records, not %zu", what, (unsigned long long)c, want), NULL;
    if (!(p = malloc(c ? (size_t)c * size : 1)))
        return r->rc = sc_error_set(r->err, SC_ENOMEM, "out of memory"), NULL;
    if (get(r, p, (size_t)c * size, what)) {
        free(p);
        return NULL;
    }
    *count = (size_t)c;
    return p;
}

static char *get_str(struct rbuf *r, const char *what)
{
    uint64_t len = get_u64(r, what);
    char *s;
    if (r->rc || len == UINT64_MAX)
        return NULL;
    if (len > r->n - r->off)
        return BAD(r, "%s: a string of %llu bytes, more than the blob holds", what, (unsigned long long)len), NULL;
    if (!(s = malloc((size_t)len + 1)))
        return r->rc = sc_error_set(r->err, SC_ENOMEM, "out of memory"), NULL;
    get(r, s, (size_t)len, what);
    s[len] = '\0';
    if (strlen(s) != len) {
        free(s);
        return BAD(r, "%s: a string holds a NUL byte", what), NULL;
    }
    return s;
}

/* Strings into t (initialised, holding ""), each at the id it had. */
static void get_strtab(struct rbuf *r, struct sc_strtab *t, const char *what)
{
    uint64_t n = get_u64(r, what);
    if (!r->rc && (n == 0 || n - 1 > (r->n - r->off) / sizeof(uint64_t)))
        BAD(r, "%s: %llu strings", what, (unsigned long long)n);
    for (uint64_t i = 1; i < n && !r->rc; i++) {
        uint64_t len = get_u64(r, what);
        uint32_t id;
        if (r->rc)
            break;
        if (len > r->n - r->off) {
            BAD(r, "%s: string %llu is cut off", what, (unsigned long long)i);
            break;
        }
        if (sc_strtab_intern(t, (const char *)r->p + r->off, (size_t)len, &id))
            r->rc = sc_error_set(r->err, SC_ENOMEM, "out of memory");
        else if (id != i)
            BAD(r, "%s: string %llu repeats string %u", what, (unsigned long long)i, id);
        r->off += (size_t)len;
    }
}

/* A string id: below n, or MODEL_NONE where none may be. */
static int str_ok(uint32_t id, size_t n, int none)
{
    return id < n || (none && id == MODEL_NONE);
}

static struct model_trace *get_trace(struct rbuf *r)
{
    struct model_trace *t = NULL;
    char *source = get_str(r, "trace source");
    int64_t *v;
    size_t nv, ns;
    if (r->rc || (r->rc = model_trace_new(source ? source : "(trace)", &t, r->err))) {
        free(source);
        return NULL;
    }
    free(source);
    get_strtab(r, &t->strings, "trace strings");
    ns = t->strings.n;
    t->tracks = get_array(r, sizeof *t->tracks, &t->n_tracks, SIZE_MAX, "trace tracks");
    t->cats = get_array(r, sizeof *t->cats, &t->n_cats, SIZE_MAX, "trace categories");
    t->devices = get_array(r, sizeof *t->devices, &t->n_devices, SIZE_MAX, "trace devices");
    t->pgs = get_array(r, sizeof *t->pgs, &t->n_pgs, SIZE_MAX, "trace process groups");
    t->steps = get_array(r, sizeof *t->steps, &t->n_steps, SIZE_MAX, "trace steps");
    t->cap_tracks = t->n_tracks;
    t->cap_cats = t->n_cats;
    t->cap_devices = t->n_devices;
    t->cap_pgs = t->n_pgs;
    v = get_array(r, sizeof *v, &nv, 21, "trace header");
    t->shed = 1;
    for (size_t i = 0; !r->rc && i < t->n_tracks; i++)
        if (!str_ok(t->tracks[i].pid_str, ns, 1) || !str_ok(t->tracks[i].tid_str, ns, 1) ||
            !str_ok(t->tracks[i].label, ns, 1))
            BAD(r, "track %zu names string ids out of range", i);
    for (size_t i = 0; !r->rc && i < t->n_cats; i++)
        if (!str_ok(t->cats[i].name, ns, 0))
            BAD(r, "category %zu names string %u of %zu", i, t->cats[i].name, ns);
    for (size_t i = 0; !r->rc && i < t->n_devices; i++)
        if (!str_ok(t->devices[i].name, ns, 1))
            BAD(r, "device %zu names string %u of %zu", i, t->devices[i].name, ns);
    for (size_t i = 0; !r->rc && i < t->n_pgs; i++)
        if (!str_ok(t->pgs[i].name, ns, 1) || !str_ok(t->pgs[i].desc, ns, 1) || !str_ok(t->pgs[i].ranks, ns, 1))
            BAD(r, "process group %zu names string ids out of range", i);
    for (size_t i = 0; !r->rc && i < t->n_steps; i++)
        if (!str_ok(t->steps[i].name, ns, 0) || (t->steps[i].track >= t->n_tracks && t->steps[i].track != MODEL_NONE))
            BAD(r, "step %zu names a string or track out of range", i);
    if (!r->rc) {
        t->schema_version = v[0];
        t->rank = v[1];
        t->world_size = v[2];
        t->backend = (uint32_t)v[3];
        t->nccl_version = (uint32_t)v[4];
        t->base_time_ns = v[5];
        t->has_base_time = (uint8_t)v[6];
        t->time_unanchored = (uint8_t)v[7];
        t->has_distributed_info = (uint8_t)v[8];
        t->has_device_properties = (uint8_t)v[9];
        t->synthetic = (uint8_t)v[10];
        t->n_entries = (uint64_t)v[11];
        t->n_metadata = (uint64_t)v[12];
        t->n_counters = (uint64_t)v[13];
        t->n_instants = (uint64_t)v[14];
        t->n_other_phase = (uint64_t)v[15];
        t->n_unknown = (uint64_t)v[16];
        t->first_ts = v[17];
        t->last_end = v[18];
        t->n_complete = (uint64_t)v[19];
        t->step_marker = (uint32_t)v[20];
        if (!str_ok(t->backend, ns, 1) || !str_ok(t->nccl_version, ns, 1) || !str_ok(t->step_marker, ns, 1))
            BAD(r, "a trace header names a string out of range");
    }
    free(v);
    if (r->rc) {
        model_trace_free(t);
        return NULL;
    }
    return t;
}

/* What model_graph_check leaves to the reader: parts, peers, sources'
 * tags, folding, and the job's ranks for the graph's. */
static void graph_extra_ok(struct rbuf *r, const struct model_graph *g)
{
    for (size_t i = 0; !r->rc && i < g->n_tasks; i++)
        if (!str_ok(g->src[i].tag, g->names.n, 1))
            BAD(r, "task %zu is tagged by string %u of %zu", i, g->src[i].tag, g->names.n);
    for (size_t i = 0; !r->rc && i < g->n_parts; i++)
        if (g->parts[i].task >= g->n_tasks || (i && g->parts[i].task <= g->parts[i - 1].task))
            BAD(r, "part %zu is of task %u of %zu (parts go by task)", i, g->parts[i].task, g->n_tasks);
    for (size_t i = 0; !r->rc && i < g->n_peers; i++)
        if (g->peers[i].task >= g->n_tasks || g->peers[i].res >= g->n_res)
            BAD(r, "peer %zu names task %u or resource %u out of range", i, g->peers[i].task, g->peers[i].res);
    for (size_t i = 0; !r->rc && i < g->folding.n_folded; i++) {
        const struct model_folded_rank *f = &g->folding.folded[i];
        size_t k = 0;
        for (size_t s = 0; s < g->n_steps; s++)
            k += g->steps[s].rank == f->rep;
        if (f->rep >= g->n_ranks || (i && f->rep < g->folding.folded[i - 1].rep) || f->measured > g->folding.n_measured ||
            k > g->folding.n_measured - f->measured)
            BAD(r, "folded rank %zu stands out of range", i);
    }
}

static struct model_graph *get_graph(struct rbuf *r)
{
    struct model_graph *g = calloc(1, sizeof *g);
    size_t n, k;
    if (!g || sc_strtab_init(&g->names)) {
        free(g);
        r->rc = sc_error_set(r->err, SC_ENOMEM, "out of memory");
        return NULL;
    }
    get_strtab(r, &g->names, "graph names");
    g->tasks = get_array(r, sizeof *g->tasks, &g->n_tasks, SIZE_MAX, "tasks");
    n = g->n_tasks;
    g->src = get_array(r, sizeof *g->src, &k, n, "task sources");
    uint32_t *links = get_array(r, sizeof *links, &k, 4 * n + 2, "task links");
    if (links) {
        g->prev = links;
        g->next = links + n;
        g->pred_at = links + 2 * n;
        g->succ_at = links + 3 * n + 1;
    }
    g->edges = get_array(r, sizeof *g->edges, &g->n_edges, SIZE_MAX, "edges");
    /* the successors share the edges' allocation (graph.c frees them with it) */
    uint32_t *succs = get_array(r, sizeof *succs, &k, g->n_edges, "successors");
    if (!r->rc) {
        struct model_edge *both = realloc((void *)g->edges, (g->n_edges ? g->n_edges : 1) * (sizeof *g->edges + sizeof *succs));
        if (!both)
            r->rc = sc_error_set(r->err, SC_ENOMEM, "out of memory");
        else {
            g->edges = both;
            g->succs = (const uint32_t *)(both + (g->n_edges ? g->n_edges : 1));
            memcpy((void *)g->succs, succs, g->n_edges * sizeof *succs);
        }
    }
    free(succs);
    g->res = get_array(r, sizeof *g->res, &g->n_res, SIZE_MAX, "resources");
    g->steps = get_array(r, sizeof *g->steps, &g->n_steps, SIZE_MAX, "steps");
    g->ranks = get_array(r, sizeof *g->ranks, &g->n_ranks, SIZE_MAX, "ranks");
    g->groups = get_array(r, sizeof *g->groups, &g->n_groups, SIZE_MAX, "groups");
    g->group_at = get_array(r, sizeof *g->group_at, &k, g->n_groups ? g->n_groups + 1 : 0, "group offsets");
    size_t members = g->n_groups && g->group_at ? g->group_at[g->n_groups] : 0;
    g->group_tasks = get_array(r, sizeof *g->group_tasks, &k, members, "group members");
    g->parts = get_array(r, sizeof *g->parts, &g->n_parts, SIZE_MAX, "task parts");
    g->peers = get_array(r, sizeof *g->peers, &g->n_peers, SIZE_MAX, "task peers");
    struct model_graph_stats *stats = get_array(r, sizeof *stats, &k, 1, "graph stats");
    if (stats)
        g->stats = *stats;
    free(stats);
    g->folding.on = get_u64(r, "folding") != 0;
    g->folding.ranks = (size_t)get_u64(r, "folding");
    g->folding.folded = get_array(r, sizeof *g->folding.folded, &g->folding.n_folded, SIZE_MAX, "folded ranks");
    g->folding.measured = get_array(r, sizeof *g->folding.measured, &g->folding.n_measured, SIZE_MAX, "folded steps");
    if (!r->rc) {
        if (g->n_groups && g->group_at[0] != 0)
            BAD(r, "group offsets start at %u", g->group_at[0]);
        for (size_t i = 0; !r->rc && i < g->n_groups; i++)
            if (g->group_at[i] > g->group_at[i + 1])
                BAD(r, "group offsets fall at group %zu", i);
        for (size_t i = 0; !r->rc && i < members; i++)
            if (g->group_tasks[i] >= g->n_tasks)
                BAD(r, "group member %zu is task %u of %zu", i, g->group_tasks[i], g->n_tasks);
    }
    if (!r->rc && model_graph_check(g, r->err))
        r->rc = SC_EINVAL;
    if (!r->rc)
        graph_extra_ok(r, g);
    if (r->rc) {
        model_graph_free(g);
        return NULL;
    }
    return g;
}

/* The header: magic, version, layout, length and checksum. */
static int header_ok(const uint8_t *p, size_t n, struct sc_error *err)
{
    uint32_t version, lay;
    uint64_t bytes;
    char want[DIGEST_HEX_LEN + 1];
    int rc;
    if (n < MODEL_BLOB_HEADER || memcmp(p, magic, 8))
        return sc_error_set(err, SC_EINVAL, "not a built model's blob (%s)",
                            n < MODEL_BLOB_HEADER ? "shorter than its header" : "no magic");
    memcpy(&version, p + 8, 4);
    memcpy(&lay, p + 12, 4);
    memcpy(&bytes, p + 16, 8);
    if (version != MODEL_BLOB_VERSION)
        return sc_error_set(err, SC_EINVAL, "model blob: format version %u, this stepcastd reads %d", version,
                            MODEL_BLOB_VERSION);
    if (lay != layout())
        return sc_error_set(err, SC_EINVAL, "model blob: written by a build whose records differ from this one's "
                                            "(layout %08x, here %08x)",
                            lay, layout());
    if (bytes != n - MODEL_BLOB_HEADER)
        return sc_error_set(err, SC_EINVAL, "model blob: %s (%zu payload bytes of %llu)",
                            bytes > n - MODEL_BLOB_HEADER ? "truncated" : "trailing bytes", n - MODEL_BLOB_HEADER,
                            (unsigned long long)bytes);
    if ((rc = digest_hex(p + MODEL_BLOB_HEADER, n - MODEL_BLOB_HEADER, want, err)))
        return rc;
    if (memcmp(want, p + 24, DIGEST_HEX_LEN))
        return sc_error_set(err, SC_EINVAL, "model blob: checksum mismatch (corrupt)");
    return SC_OK;
}

int model_blob_read(const void *p, size_t n, const char *id, const struct model_load_opts *opts,
                    struct built_model **out, struct sc_error *err)
{
    struct rbuf r = {p, n, MODEL_BLOB_HEADER, err, 0};
    struct model_job *job = NULL;
    struct est_traced model = {0};
    struct api_trace *traces = NULL;
    size_t nt = 0, nr = 0;
    *out = NULL;
    if ((r.rc = header_ok(p, n, err)))
        return r.rc;
    traces = get_array(&r, sizeof *traces, &nt, SIZE_MAX, "traces");
    for (size_t i = 0; !r.rc && i < nt; i++)
        if (!memchr(traces[i].sha256, '\0', sizeof traces[i].sha256) || !digest_is_hex(traces[i].sha256))
            BAD(&r, "trace %zu is named by no hash", i);
    if (!r.rc && !(job = calloc(1, sizeof *job)))
        r.rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    if (job) {
        job->rank_ids = get_array(&r, sizeof *job->rank_ids, &nr, SIZE_MAX, "job ranks");
        if (!r.rc && !(job->ranks = calloc(nr ? nr : 1, sizeof *job->ranks)))
            r.rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        for (size_t i = 0; !r.rc && i < nr; i++)
            if ((job->ranks[i] = get_trace(&r)))
                job->n_ranks = i + 1;
    }
    if (!r.rc && (model.graph = get_graph(&r)))
        model.graph->job = job;
    size_t nw = 0;
    struct model_coll_wait *w = get_array(&r, sizeof *w, &nw, SIZE_MAX, "collective waits");
    model.waits.v = w;
    model.waits.n = nw;
    for (size_t i = 0; !r.rc && i < nw; i++)
        if (w[i].task >= model.graph->n_tasks || w[i].wait < 0)
            BAD(&r, "collective wait %zu is of task %u of %zu", i, w[i].task, model.graph->n_tasks);
    if (!r.rc && r.off != n)
        BAD(&r, "%zu bytes after its end", n - r.off);
    if (r.rc) {
        free(traces);
        est_traced_release(&model);
        model_job_free(job);
        return r.rc;
    }
    struct est_traced_model *om;
    if ((r.rc = est_model_adopt(job, &model, &om, err)) == SC_OK)
        r.rc = built_model_assemble(id, traces, nt, opts, om, out, err);
    free(traces);
    return r.rc;
}
