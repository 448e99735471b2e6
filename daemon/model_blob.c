/* daemon/model_blob.c: a built model to and from bytes (model_blob.h). */
#include "daemon/model_blob.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/resources.h"
#include "common/strtab.h"
#include "daemon/blobs.h"
#include "daemon/built.h"
#include "daemon/digest.h"
#include "estimator/costs/hardware.h"
#include "estimator/model_open.h"
#include "estimator/traced.h"
#include "estimator/whatif/trace_notes.h"
#include "model/graph.h"
#include "model/graph_check.h"
#include "model/job.h"
#include "model/replay.h"
#include "model/trace.h"
#include "common/banned.h"

static const char magic[8] = {'S', 'C', 'M', 'O', 'D', 'E', 'L', '\0'};

/* ---- records, field by field ----
 *
 * A record (a struct in an array) is stored as its fields one after the
 * other, in the order listed here, in the host's byte order: never its
 * padding, so that the same model is always the same bytes. A text field
 * (a char array) is stored whole, its bytes after the NUL as zeros. A
 * field missing from a list is not stored, and reads back as zero. */

struct field {
    uint16_t off, size;
    uint8_t text;
};

struct record {
    size_t size; /* sizeof the struct */
    const struct field *f;
    size_t nf;
};

#define FIELD(T, m) {offsetof(struct T, m), sizeof(((struct T *)0)->m), 0}
#define TEXT(T, m) {offsetof(struct T, m), sizeof(((struct T *)0)->m), 1}
#define RECORD(name, T, ...)                                                                                    \
    static const struct field name##_fields[] = {__VA_ARGS__};                                                 \
    static const struct record name = {sizeof(struct T), name##_fields, sizeof name##_fields / sizeof(struct field)}

RECORD(rec_trace_file, api_trace, FIELD(api_trace, rank), TEXT(api_trace, sha256), FIELD(api_trace, bytes),
       FIELD(api_trace, events), FIELD(api_trace, steps), FIELD(api_trace, uploaded_ns));
RECORD(rec_track, model_track, FIELD(model_track, pid), FIELD(model_track, tid), FIELD(model_track, pid_str),
       FIELD(model_track, tid_str), FIELD(model_track, label), FIELD(model_track, n_events),
       FIELD(model_track, n_gpu), FIELD(model_track, is_gpu), FIELD(model_track, is_cpu));
RECORD(rec_cat, model_cat, FIELD(model_cat, name), FIELD(model_cat, kind), FIELD(model_cat, flow),
       FIELD(model_cat, count));
RECORD(rec_device, model_device, FIELD(model_device, id), FIELD(model_device, name), FIELD(model_device, total_mem),
       FIELD(model_device, major), FIELD(model_device, minor), FIELD(model_device, num_sms));
RECORD(rec_pg, model_pg, FIELD(model_pg, name), FIELD(model_pg, desc), FIELD(model_pg, size), FIELD(model_pg, ranks));
RECORD(rec_step, model_step, FIELD(model_step, name), FIELD(model_step, number), FIELD(model_step, start),
       FIELD(model_step, end), FIELD(model_step, track), FIELD(model_step, event), FIELD(model_step, partial));
RECORD(rec_task, model_task, FIELD(model_task, dur), FIELD(model_task, gap), FIELD(model_task, res),
       FIELD(model_task, group), FIELD(model_task, rank), FIELD(model_task, cls), FIELD(model_task, sub),
       FIELD(model_task, kept), FIELD(model_task, paired));
RECORD(rec_task_src, model_task_src, FIELD(model_task_src, name), FIELD(model_task_src, event),
       FIELD(model_task_src, tag));
RECORD(rec_edge, model_edge, FIELD(model_edge, from), FIELD(model_edge, lat), FIELD(model_edge, type),
       FIELD(model_edge, kind), FIELD(model_edge, inferred), FIELD(model_edge, peer));
RECORD(rec_res, model_resource, FIELD(model_resource, rank), FIELD(model_resource, gpu), FIELD(model_resource, comm),
       FIELD(model_resource, track), FIELD(model_resource, label), FIELD(model_resource, first),
       FIELD(model_resource, last), FIELD(model_resource, n), FIELD(model_resource, pid), FIELD(model_resource, tid),
       FIELD(model_resource, origin));
RECORD(rec_graph_step, model_graph_step, FIELD(model_graph_step, rank), FIELD(model_graph_step, step),
       FIELD(model_graph_step, begin), FIELD(model_graph_step, end), FIELD(model_graph_step, name),
       FIELD(model_graph_step, measured_ns), FIELD(model_graph_step, partial));
RECORD(rec_graph_rank, model_graph_rank, FIELD(model_graph_rank, id), FIELD(model_graph_rank, clock_offset_ns),
       FIELD(model_graph_rank, launch_queue_depth));
RECORD(rec_group, model_coll_group, FIELD(model_coll_group, op), FIELD(model_coll_group, bytes),
       FIELD(model_coll_group, dtype), FIELD(model_coll_group, pg), FIELD(model_coll_group, seq),
       FIELD(model_coll_group, size));
RECORD(rec_part, model_task_part, FIELD(model_task_part, task), FIELD(model_task_part, comm_ns),
       FIELD(model_task_part, flops));
RECORD(rec_peer, model_task_peer, FIELD(model_task_peer, task), FIELD(model_task_peer, res));
RECORD(rec_folded, model_folded_rank, FIELD(model_folded_rank, id), FIELD(model_folded_rank, rep),
       FIELD(model_folded_rank, measured), FIELD(model_folded_rank, origin_ns));
RECORD(rec_stats, model_graph_stats, FIELD(model_graph_stats, edges_by_kind),
       FIELD(model_graph_stats, inferred_event_syncs), FIELD(model_graph_stats, cuda_sync_event_syncs),
       FIELD(model_graph_stats, collectives_matched), FIELD(model_graph_stats, collectives_kept),
       FIELD(model_graph_stats, host_waits_gap), FIELD(model_graph_stats, host_waits_loop));
RECORD(rec_wait, model_coll_wait, FIELD(model_coll_wait, task), FIELD(model_coll_wait, wait),
       FIELD(model_coll_wait, from));
RECORD(rec_call_note, trace_call_note, FIELD(trace_call_note, event), FIELD(trace_call_note, track),
       FIELD(trace_call_note, at), FIELD(trace_call_note, layer), FIELD(trace_call_note, backward),
       FIELD(trace_call_note, hook));
RECORD(rec_coll_note, trace_coll_note, FIELD(trace_coll_note, event), FIELD(trace_coll_note, group_size),
       FIELD(trace_coll_note, dtype_bytes), FIELD(trace_coll_note, in_nelems), FIELD(trace_coll_note, out_nelems));
RECORD(rec_gemm_note, trace_gemm_note, FIELD(trace_gemm_note, event), FIELD(trace_gemm_note, shape.m),
       FIELD(trace_gemm_note, shape.n), FIELD(trace_gemm_note, shape.k), FIELD(trace_gemm_note, shape.batch),
       FIELD(trace_gemm_note, shape.dtype));
/* a rank's notes but their arrays */
RECORD(rec_notes, trace_notes, FIELD(trace_notes, ops_busy_ns), FIELD(trace_notes, module_layers),
       FIELD(trace_notes, unit_layers), FIELD(trace_notes, has_autograd), FIELD(trace_notes, has_hooks),
       FIELD(trace_notes, inductor_kernels), FIELD(trace_notes, compiled_regions));

static const struct record *const records[] = {
    &rec_trace_file, &rec_track, &rec_cat,  &rec_device, &rec_pg,   &rec_step,   &rec_task, &rec_task_src,
    &rec_edge,       &rec_res,   &rec_graph_step, &rec_graph_rank, &rec_group, &rec_part, &rec_peer,
    &rec_folded,     &rec_stats, &rec_wait, &rec_call_note, &rec_coll_note, &rec_gemm_note, &rec_notes,
};

/* The bytes a record takes in a blob. */
static size_t packed(const struct record *r)
{
    size_t n = 0;
    for (size_t k = 0; k < r->nf; k++)
        n += r->f[k].size;
    return n;
}

/* The records' fields (their sizes and kinds) and the byte order, hashed. */
static uint32_t layout(void)
{
    uint64_t h[1 + 3 * (sizeof records / sizeof records[0])];
    size_t n = 0;
    h[n++] = 0x0102030405060708u;
    for (size_t i = 0; i < sizeof records / sizeof records[0]; i++) {
        uint64_t sizes = 0, texts = 0;
        for (size_t k = 0; k < records[i]->nf; k++) {
            assert(records[i]->f[k].off + records[i]->f[k].size <= records[i]->size);
            sizes = sizes * 131 + records[i]->f[k].size;
            texts = texts * 2 + records[i]->f[k].text;
        }
        h[n++] = records[i]->nf;
        h[n++] = sizes;
        h[n++] = texts;
    }
    return (uint32_t)sc_hash_bytes(h, sizeof h);
}

/* ---- writing ---- */

/* A blob's bytes are fed to a sink a chunk at a time: the model is
 * walked twice, once to hash (and count) the payload for the header and
 * once to write the header and the payload, so that a build never holds
 * its blob's bytes, only the model and a chunk (model_blob_put streams
 * them to the blob's file, model_blob_write into a buffer of their size). */
struct wbuf {
    uint8_t *p;
    size_t n;     /* in the chunk, not yet fed */
    int failed;   /* the sink failed: rc, err */
    int rc;
    uint64_t fed; /* bytes fed to the sink */
    int (*sink)(void *ctx, const void *p, size_t n, struct sc_error *err);
    void *ctx;
    struct sc_error *err;
};

#define WBUF_CHUNK ((size_t)256 << 10)

/* n bytes fed to the sink: 0, or -1 when it failed. */
static int feed(struct wbuf *b, const void *p, size_t n)
{
    if (n && (b->rc = b->sink(b->ctx, p, n, b->err))) {
        b->failed = 1;
        return -1;
    }
    b->fed += n;
    return 0;
}

/* Room for n more bytes in the chunk, n at most WBUF_CHUNK (the chunk fed
 * first when they do not fit after it): 0, or -1 when the sink failed. */
static int reserve(struct wbuf *b, size_t n)
{
    if (b->failed)
        return -1;
    if (n <= WBUF_CHUNK - b->n)
        return 0;
    assert(n <= WBUF_CHUNK);
    if (feed(b, b->p, b->n))
        return -1;
    b->n = 0;
    return 0;
}

static void put(struct wbuf *b, const void *p, size_t n)
{
    if (n > WBUF_CHUNK) { /* a large array goes to the sink as it is */
        if (!b->failed && !feed(b, b->p, b->n)) {
            b->n = 0;
            feed(b, p, n);
        }
        return;
    }
    if (!n || reserve(b, n))
        return;
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void put_u64(struct wbuf *b, uint64_t v)
{
    put(b, &v, sizeof v);
}

/* A counted array of numbers of `size` bytes each (no padding). */
static void put_array(struct wbuf *b, const void *p, size_t count, size_t size)
{
    put_u64(b, count);
    put(b, p, count * size);
}

/* A counted array of records, field by field. */
static void put_records(struct wbuf *b, const void *p, size_t count, const struct record *r)
{
    size_t w = packed(r);
    assert(w <= WBUF_CHUNK); /* a record fits a chunk */
    put_u64(b, count);
    for (size_t i = 0, batch; i < count; i += batch) {
        batch = WBUF_CHUNK / w; /* a chunk at a time */
        if (batch > count - i)
            batch = count - i;
        if (reserve(b, batch * w))
            return;
        for (size_t j = i; j < i + batch; j++) {
            const uint8_t *rec = (const uint8_t *)p + j * r->size;
            for (size_t k = 0; k < r->nf; k++) {
                const struct field *f = &r->f[k];
                uint8_t *d = b->p + b->n;
                size_t len = f->text ? strnlen((const char *)rec + f->off, f->size) : f->size;
                memcpy(d, rec + f->off, len);
                memset(d + len, 0, f->size - len);
                b->n += f->size;
            }
        }
    }
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
    put_records(b, t->tracks, t->n_tracks, &rec_track);
    put_records(b, t->cats, t->n_cats, &rec_cat);
    put_records(b, t->devices, t->n_devices, &rec_device);
    put_records(b, t->pgs, t->n_pgs, &rec_pg);
    put_records(b, t->steps, t->n_steps, &rec_step);
    put_array(b, v, sizeof v / sizeof v[0], sizeof v[0]);
}

static void put_graph(struct wbuf *b, const struct model_graph *g)
{
    size_t n = g->n_tasks;
    put_strtab(b, &g->names);
    put_records(b, g->tasks, n, &rec_task);
    put_records(b, g->src, n, &rec_task_src);
    put_array(b, g->prev, 4 * n + 2, sizeof *g->prev); /* prev, next, pred_at, succ_at */
    put_records(b, g->edges, g->n_edges, &rec_edge);
    put_array(b, g->succs, g->n_edges, sizeof *g->succs);
    put_records(b, g->res, g->n_res, &rec_res);
    put_records(b, g->steps, g->n_steps, &rec_graph_step);
    put_records(b, g->ranks, g->n_ranks, &rec_graph_rank);
    put_records(b, g->groups, g->n_groups, &rec_group);
    put_array(b, g->group_at, g->n_groups ? g->n_groups + 1 : 0, sizeof *g->group_at);
    put_array(b, g->group_tasks, g->n_groups ? g->group_at[g->n_groups] : 0, sizeof *g->group_tasks);
    put_records(b, g->parts, g->n_parts, &rec_part);
    put_records(b, g->peers, g->n_peers, &rec_peer);
    put_records(b, &g->stats, 1, &rec_stats);
    put_u64(b, (uint64_t)g->folding.on);
    put_u64(b, g->folding.ranks);
    put_records(b, g->folding.folded, g->folding.n_folded, &rec_folded);
    put_array(b, g->folding.measured, g->folding.n_measured, sizeof *g->folding.measured);
}

/* The notes of each graph rank: its arrays, then the rest. */
static void put_notes(struct wbuf *b, const struct trace_notes_set *s)
{
    put_u64(b, s->n_ranks);
    for (size_t r = 0; r < s->n_ranks; r++) {
        const struct trace_notes *n = &s->rank[r];
        put_records(b, n->calls, n->n_calls, &rec_call_note);
        put_records(b, n->colls, n->n_colls, &rec_coll_note);
        put_records(b, n->gemms, n->n_gemms, &rec_gemm_note);
        put_array(b, n->op_keys, n->n_op_keys, sizeof *n->op_keys);
        put_records(b, n, 1, &rec_notes);
    }
}

/* The header of a payload of len bytes whose SHA-256 is sum. */
static void header_of(uint8_t h[MODEL_BLOB_HEADER], uint64_t len, const char sum[DIGEST_HEX_LEN + 1])
{
    uint32_t version = MODEL_BLOB_VERSION, lay = layout();
    memcpy(h, magic, 8);
    memcpy(h + 8, &version, 4);
    memcpy(h + 12, &lay, 4);
    memcpy(h + 16, &len, 8);
    memcpy(h + 24, sum, DIGEST_HEX_LEN);
}

/* Fill in the header of p[0..MODEL_BLOB_HEADER + len), its payload after it. */
static int seal_in_place(uint8_t *p, size_t len, struct sc_error *err)
{
    char sum[DIGEST_HEX_LEN + 1];
    int rc = digest_hex(p + MODEL_BLOB_HEADER, len, sum, err);
    if (rc == SC_OK)
        header_of(p, len, sum);
    return rc;
}

int model_blob_seal(const void *payload, size_t len, void **out, size_t *n, struct sc_error *err)
{
    uint8_t *p = malloc(MODEL_BLOB_HEADER + len);
    int rc;
    *out = NULL;
    *n = 0;
    if (!p)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (len)
        memcpy(p + MODEL_BLOB_HEADER, payload, len);
    if ((rc = seal_in_place(p, len, err))) {
        free(p);
        return rc;
    }
    *out = p;
    *n = MODEL_BLOB_HEADER + len;
    return SC_OK;
}

/* The payload of m's blob into b. */
static void put_model(struct wbuf *b, const struct built_model *m)
{
    size_t nt;
    const struct api_trace *traces = built_model_traces(m, &nt);
    const struct est_traced_model *om = built_model_opened(m);
    const struct model_job *job = est_model_job(om);
    const struct model_coll_waits *w = est_model_waits(om);
    put_records(b, traces, nt, &rec_trace_file);
    put_array(b, job->rank_ids, job->n_ranks, sizeof *job->rank_ids);
    for (size_t i = 0; i < job->n_ranks; i++)
        put_trace(b, job->ranks[i]);
    put_graph(b, est_model_graph(om));
    put_records(b, w->v, w->n, &rec_wait);
    put_notes(b, est_model_notes(om));
}

static int hash_sink(void *ctx, const void *p, size_t n, struct sc_error *err)
{
    return digest_update(ctx, p, n, err);
}

static int file_sink(void *ctx, const void *p, size_t n, struct sc_error *err)
{
    return blob_writer_write(ctx, p, n, err);
}

struct memory {
    uint8_t *p;
    size_t n, cap;
};

static int memory_sink(void *ctx, const void *p, size_t n, struct sc_error *err)
{
    struct memory *mem = ctx;
    if (n > mem->cap - mem->n) /* the second walk gave more than the first */
        return sc_error_set(err, SC_EINTERNAL, "model blob: the model changed while it was written");
    memcpy(mem->p + mem->n, p, n);
    mem->n += n;
    return SC_OK;
}

/* The model's blob walked once: fed to sink (with ctx), header first when
 * header is not NULL; *fed the bytes fed. */
static int stream_model(const struct built_model *m, const uint8_t *header,
                        int (*sink)(void *, const void *, size_t, struct sc_error *), void *ctx, uint64_t *fed,
                        struct sc_error *err)
{
    struct wbuf b = {.sink = sink, .ctx = ctx, .err = err};
    if (!(b.p = malloc(WBUF_CHUNK)))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (header)
        put(&b, header, MODEL_BLOB_HEADER);
    put_model(&b, m);
    if (!b.failed)
        feed(&b, b.p, b.n);
    free(b.p);
    *fed = b.fed;
    return b.rc;
}

/* The header of m's blob: its payload walked once, hashed and counted. */
static int header_of_model(const struct built_model *m, uint8_t header[MODEL_BLOB_HEADER], uint64_t *len,
                           struct sc_error *err)
{
    struct digest md;
    char sum[DIGEST_HEX_LEN + 1];
    int rc;
    if (!est_model_notes(built_model_opened(m))) /* a built model always takes them */
        return sc_error_set(err, SC_EINTERNAL, "model blob: the model has no notes");
    if ((rc = digest_init(&md, err)))
        return rc;
    if ((rc = stream_model(m, NULL, hash_sink, &md, len, err)) == SC_OK)
        rc = digest_final(&md, sum, err);
    digest_release(&md);
    if (rc == SC_OK)
        header_of(header, *len, sum);
    return rc;
}

int model_blob_write(const struct built_model *m, void **out, size_t *n, struct sc_error *err)
{
    uint8_t header[MODEL_BLOB_HEADER];
    uint64_t len, fed;
    int rc;
    *out = NULL;
    *n = 0;
    if ((rc = header_of_model(m, header, &len, err)))
        return rc;
    struct memory mem = {malloc(MODEL_BLOB_HEADER + len), 0, MODEL_BLOB_HEADER + len};
    if (!mem.p)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if ((rc = stream_model(m, header, memory_sink, &mem, &fed, err))) {
        free(mem.p);
        return rc;
    }
    assert(fed == MODEL_BLOB_HEADER + len); /* the same walk twice */
    *out = mem.p;
    *n = mem.n;
    return SC_OK;
}

int model_blob_put(const struct built_model *m, struct blob_store *bs, char sha[DIGEST_HEX_LEN + 1], size_t *n,
                   struct sc_error *err)
{
    struct blob_writer *w = NULL;
    uint8_t header[MODEL_BLOB_HEADER];
    uint64_t len, fed;
    int rc;
    *n = 0;
    if ((rc = header_of_model(m, header, &len, err)))
        return rc;
    if ((rc = blob_writer_new(bs, &w, err)) == SC_OK &&
        (rc = stream_model(m, header, file_sink, w, &fed, err)) == SC_OK &&
        (rc = blob_writer_finish(w, sha, err)) == SC_OK && (rc = blob_writer_commit(w, err)) == SC_OK)
        *n = fed;
    blob_writer_free(w);
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

/* A counted array of records, field by field, into *out (from calloc:
 * what no field covers is zero) and *count; `want` as for get_array. */
static void *get_records(struct rbuf *r, const struct record *rec, size_t *count, size_t want, const char *what)
{
    size_t w = packed(rec);
    uint64_t c = get_u64(r, what);
    uint8_t *p;
    *count = 0;
    if (r->rc)
        return NULL;
    if (c > (r->n - r->off) / w)
        return BAD(r, "%s: %llu records of %zu bytes, more than the blob holds", what, (unsigned long long)c, w),
               NULL;
    if (want != SIZE_MAX && c != want)
        return BAD(r, "%s: %llu records, not %zu", what, (unsigned long long)c, want), NULL;
    if (!(p = calloc(c ? (size_t)c : 1, rec->size)))
        return r->rc = sc_error_set(r->err, SC_ENOMEM, "out of memory"), NULL;
    for (size_t i = 0; i < c; i++)
        for (size_t k = 0; k < rec->nf; k++) {
            memcpy(p + i * rec->size + rec->f[k].off, r->p + r->off, rec->f[k].size);
            r->off += rec->f[k].size;
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
    t->tracks = get_records(r, &rec_track, &t->n_tracks, SIZE_MAX, "trace tracks");
    t->cats = get_records(r, &rec_cat, &t->n_cats, SIZE_MAX, "trace categories");
    t->devices = get_records(r, &rec_device, &t->n_devices, SIZE_MAX, "trace devices");
    t->pgs = get_records(r, &rec_pg, &t->n_pgs, SIZE_MAX, "trace process groups");
    t->steps = get_records(r, &rec_step, &t->n_steps, SIZE_MAX, "trace steps");
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
    g->tasks = get_records(r, &rec_task, &g->n_tasks, SIZE_MAX, "tasks");
    n = g->n_tasks;
    g->src = get_records(r, &rec_task_src, &k, n, "task sources");
    uint32_t *links = get_array(r, sizeof *links, &k, 4 * n + 2, "task links");
    if (links) {
        g->prev = links;
        g->next = links + n;
        g->pred_at = links + 2 * n;
        g->succ_at = links + 3 * n + 1;
    }
    g->edges = get_records(r, &rec_edge, &g->n_edges, SIZE_MAX, "edges");
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
    g->res = get_records(r, &rec_res, &g->n_res, SIZE_MAX, "resources");
    g->steps = get_records(r, &rec_graph_step, &g->n_steps, SIZE_MAX, "steps");
    g->ranks = get_records(r, &rec_graph_rank, &g->n_ranks, SIZE_MAX, "ranks");
    g->groups = get_records(r, &rec_group, &g->n_groups, SIZE_MAX, "groups");
    g->group_at = get_array(r, sizeof *g->group_at, &k, g->n_groups ? g->n_groups + 1 : 0, "group offsets");
    size_t members = g->n_groups && g->group_at ? g->group_at[g->n_groups] : 0;
    g->group_tasks = get_array(r, sizeof *g->group_tasks, &k, members, "group members");
    g->parts = get_records(r, &rec_part, &g->n_parts, SIZE_MAX, "task parts");
    g->peers = get_records(r, &rec_peer, &g->n_peers, SIZE_MAX, "task peers");
    struct model_graph_stats *stats = get_records(r, &rec_stats, &k, 1, "graph stats");
    if (stats)
        g->stats = *stats;
    free(stats);
    g->folding.on = get_u64(r, "folding") != 0;
    g->folding.ranks = (size_t)get_u64(r, "folding");
    g->folding.folded = get_records(r, &rec_folded, &g->folding.n_folded, SIZE_MAX, "folded ranks");
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

/* Each note of v (n of `size` bytes, each led by its uint32_t event):
 * ascending by event, one note an event, each below the events its trace
 * had. */
static void events_ok(struct rbuf *r, const void *v, size_t n, size_t size, uint64_t events, size_t rank,
                      const char *what)
{
    uint32_t prev = 0;
    for (size_t i = 0; !r->rc && i < n; i++) {
        uint32_t e;
        memcpy(&e, (const uint8_t *)v + i * size, sizeof e);
        if (e >= events || (i && e <= prev))
            BAD(r, "rank %zu's %s note %zu is of event %u (its trace had %llu; notes go by event)", rank, what, i, e,
                (unsigned long long)events);
        prev = e;
    }
}

/* What the what-if reads of a rank's notes in range: tracks, layers and
 * hooks that are the trace's, shapes and sums that are numbers. */
static void notes_ok(struct rbuf *r, const struct trace_notes *n, const struct model_trace *t, size_t rank)
{
    if (!t) {
        BAD(r, "rank %zu of the graph has no trace for its notes", rank);
        return;
    }
    events_ok(r, n->calls, n->n_calls, sizeof *n->calls, t->n_complete, rank, "call");
    events_ok(r, n->colls, n->n_colls, sizeof *n->colls, t->n_complete, rank, "collective");
    events_ok(r, n->gemms, n->n_gemms, sizeof *n->gemms, t->n_complete, rank, "GEMM");
    if (!r->rc && (!isfinite(n->ops_busy_ns) || n->module_layers < 0 || n->unit_layers > 1 || n->has_autograd > 1 ||
                   n->has_hooks > 1))
        BAD(r, "rank %zu's notes say nothing a trace could", rank);
    for (size_t i = 0; !r->rc && i < n->n_calls; i++) {
        const struct trace_call_note *c = &n->calls[i];
        if (c->track >= t->n_tracks || c->layer < -1 || c->layer >= n->module_layers || c->backward < 0 ||
            c->backward > 1 || c->hook < -1 || c->hook > TRACE_HOOK_OPTIMIZER)
            BAD(r, "rank %zu's call note %zu names a track, layer or hook out of range", rank, i);
    }
    for (size_t i = 0; !r->rc && i < n->n_gemms; i++) {
        const struct gemm_shape *g = &n->gemms[i].shape;
        if (!(g->m >= 0 && g->n >= 0 && g->k >= 0 && g->batch >= 0) || !isfinite(g->m + g->n + g->k + g->batch) ||
            (unsigned)g->dtype >= HW_DTYPE_COUNT)
            BAD(r, "rank %zu's GEMM note %zu is of no shape", rank, i);
    }
    for (size_t i = 0; !r->rc && i < n->n_op_keys; i++)
        if (n->op_keys[i] < 0 || (i && n->op_keys[i] < n->op_keys[i - 1]))
            BAD(r, "rank %zu's operator notes are out of order at %zu", rank, i);
}

/* The notes of each rank of g (model.notes), read back as put_notes wrote
 * them. */
static void get_notes(struct rbuf *r, const struct model_graph *g, struct trace_notes_set *out)
{
    uint64_t n = get_u64(r, "notes");
    if (r->rc)
        return;
    if (n != g->n_ranks) {
        BAD(r, "notes of %llu ranks, the graph has %zu", (unsigned long long)n, g->n_ranks);
        return;
    }
    if (!(out->rank = calloc(n ? (size_t)n : 1, sizeof *out->rank))) {
        r->rc = sc_error_set(r->err, SC_ENOMEM, "out of memory");
        return;
    }
    out->n_ranks = (size_t)n;
    for (size_t k = 0; !r->rc && k < n; k++) {
        struct trace_notes *t = &out->rank[k];
        size_t one;
        t->calls = get_records(r, &rec_call_note, &t->n_calls, SIZE_MAX, "call notes");
        t->colls = get_records(r, &rec_coll_note, &t->n_colls, SIZE_MAX, "collective notes");
        t->gemms = get_records(r, &rec_gemm_note, &t->n_gemms, SIZE_MAX, "GEMM notes");
        t->op_keys = get_array(r, sizeof *t->op_keys, &t->n_op_keys, SIZE_MAX, "operator notes");
        struct trace_notes *rest = get_records(r, &rec_notes, &one, 1, "notes");
        if (rest) {
            t->ops_busy_ns = rest->ops_busy_ns;
            t->module_layers = rest->module_layers;
            t->unit_layers = rest->unit_layers;
            t->has_autograd = rest->has_autograd;
            t->has_hooks = rest->has_hooks;
            t->inductor_kernels = rest->inductor_kernels;
            t->compiled_regions = rest->compiled_regions;
        }
        free(rest);
        if (!r->rc)
            notes_ok(r, t, model_graph_trace(g, (uint16_t)k), k);
    }
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

int model_blob_stale(const void *p, size_t n)
{
    uint32_t version, lay;
    if (n < MODEL_BLOB_HEADER || memcmp(p, magic, 8))
        return 0;
    memcpy(&version, (const uint8_t *)p + 8, 4);
    memcpy(&lay, (const uint8_t *)p + 12, 4);
    return version != MODEL_BLOB_VERSION || lay != layout();
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
    traces = get_records(&r, &rec_trace_file, &nt, SIZE_MAX, "traces");
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
    struct model_coll_wait *w = get_records(&r, &rec_wait, &nw, SIZE_MAX, "collective waits");
    model.waits.v = w;
    model.waits.n = nw;
    for (size_t i = 0; !r.rc && i < nw; i++)
        if (w[i].task >= model.graph->n_tasks || w[i].wait < 0)
            BAD(&r, "collective wait %zu is of task %u of %zu", i, w[i].task, model.graph->n_tasks);
    if (!r.rc)
        get_notes(&r, model.graph, &model.notes);
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
