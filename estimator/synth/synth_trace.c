/* estimator/synth/synth_trace.c: a replayed synthesised step as per-rank Kineto
 * traces (synth_trace.h).
 *
 * The file is laid out so that the reader (model/graph_build.c) finds the
 * graph's dependencies again: a launch ends exactly when its GPU task could
 * start (the reader calibrates one launch latency per rank: the launch
 * calls all last LAUNCH_NS, or half the shortest spacing of launches when
 * that is shorter); records follow their work's launch at once, with no
 * duration; waits come just before the launch of the waiting work; a
 * synchronising call ends when the replayed call did. Host time between
 * calls is left as gaps, which the reader takes as host work. */
#include "estimator/synth/synth_trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "estimator/spec/placement.h"
#include "model/collective.h"
#include "model/graph.h"
#include "model/kernel_family.h"
#include "common/banned.h"

/* A launch call's duration when launches are far enough apart. */
#define LAUNCH_NS 5000
/* CPU process ids: this plus the global rank (GPU events use the device). */
#define CPU_PID_BASE 10000
#define NCCL_ARGS "(ncclDevKernelArgsStorage<4096ul>)"

struct launch {
    uint32_t call, task;
    int64_t lat; /* ns after the call's start the task may start */
};

enum part { PART_NONE, PART_EMBEDDING, PART_LAYER, PART_OUTPUT };

/* Where a task belongs, from its tag (synth.h). */
struct where {
    int dir; /* 0 forward, 1 backward, -1 outside the passes */
    int64_t mb, chunk, layer;
    int part;
};

/* An open module span. */
struct span {
    int open;
    struct where at;
    int64_t start, end, id, parent;
};

struct writer {
    const struct est_spec *s;
    const struct hw_profile *hw;
    enum est_detail detail;
    const struct model_graph *g;
    const int64_t *start, *end;
    uint16_t rank;
    int64_t stage, global_rank, device, cpu_pid;
    FILE *f;
    struct sc_error *err;
    int events;
    int64_t corr, python_id, lw;
    struct launch *launches;
    size_t n_launches;
    int64_t *rec_corr; /* per task: its record's correlation id, 0 when it needs one, -1 when not */
    uint8_t *written;  /* per task: its GPU event is written */
    struct est_stage_layers *place;
    struct span pass, part;
};

/* ---- output ---- */

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Microseconds with nanosecond digits, exactly. */
static void put_us(FILE *f, int64_t ns)
{
    if (ns < 0) {
        fputc('-', f);
        ns = -ns;
    }
    fprintf(f, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

/* The head of a complete event; the caller writes its args and closes it. */
static void event_head(struct writer *w, const char *cat, const char *name, int64_t pid, int64_t tid,
                       int64_t ts, int64_t dur)
{
    fprintf(w->f, "%s\n{\"ph\": \"X\", \"cat\": \"%s\", \"name\": ", w->events++ ? "," : "", cat);
    put_str(w->f, name);
    fprintf(w->f, ", \"pid\": %" PRId64 ", \"tid\": %" PRId64 ", \"ts\": ", pid, tid);
    put_us(w->f, ts);
    fputs(", \"dur\": ", w->f);
    put_us(w->f, dur);
    fputs(", \"args\": {", w->f);
}

/* A runtime call on CPU thread tid; returns its correlation id. */
static int64_t runtime_call(struct writer *w, int64_t tid, const char *name, int64_t ts, int64_t dur)
{
    int64_t corr = ++w->corr;
    event_head(w, "cuda_runtime", name, w->cpu_pid, tid, ts, dur);
    fprintf(w->f, "\"correlation\": %" PRId64 "}}", corr);
    return corr;
}

/* ---- names ---- */

static const char *const family_token[MODEL_KF_COUNT] = {
    [MODEL_KF_OTHER] = "kernel",           [MODEL_KF_GEMM] = "gemm",
    [MODEL_KF_ATTENTION] = "flash_attn",   [MODEL_KF_CONVOLUTION] = "conv",
    [MODEL_KF_ELEMENTWISE] = "elementwise", [MODEL_KF_NORMALIZATION] = "layer_norm",
    [MODEL_KF_SOFTMAX] = "softmax",        [MODEL_KF_REDUCTION] = "reduce",
    [MODEL_KF_EMBEDDING] = "embedding",    [MODEL_KF_LOSS] = "cross_entropy",
    [MODEL_KF_ROTARY] = "rotary",          [MODEL_KF_MOE] = "moe_",
    [MODEL_KF_FP8] = "fp8_cast",           [MODEL_KF_OPTIMIZER] = "adam",
    [MODEL_KF_COMMUNICATION] = "nccl",     [MODEL_KF_COPY] = "copy",
};

/* A compute kernel's name that the reader files under the task's family:
 * the operation's own name when it already reads so, else prefixed by the
 * family's word, else the word alone. */
static const char *kernel_name(int family, const char *op, char *buf, size_t n)
{
    if (family < 0 || family >= MODEL_KF_COUNT)
        family = MODEL_KF_OTHER;
    if ((int)model_kernel_family(op) == family)
        return op;
    snprintf(buf, n, "%s: %s", family_token[family], op);
    if ((int)model_kernel_family(buf) == family)
        return buf;
    return family_token[family];
}

static const char *nccl_kernel(int op)
{
    switch (op) {
    case MODEL_COLL_ALLREDUCE: return "ncclDevKernel_AllReduce_Sum_RING_LL" NCCL_ARGS;
    case MODEL_COLL_ALLGATHER: return "ncclDevKernel_AllGather_RING_LL" NCCL_ARGS;
    case MODEL_COLL_REDUCESCATTER: return "ncclDevKernel_ReduceScatter_Sum_RING_LL" NCCL_ARGS;
    case MODEL_COLL_ALLTOALL: return "ncclDevKernel_AllToAll_RING_LL" NCCL_ARGS;
    case MODEL_COLL_BROADCAST: return "ncclDevKernel_Broadcast_RING_LL" NCCL_ARGS;
    case MODEL_COLL_REDUCE: return "ncclDevKernel_Reduce_Sum_RING_LL" NCCL_ARGS;
    default: return "ncclDevKernel_SendRecv" NCCL_ARGS;
    }
}

/* PyTorch's "Collective name" of an operation. */
static const char *collective_name(int op, const char *task)
{
    switch (op) {
    case MODEL_COLL_ALLREDUCE: return "allreduce";
    case MODEL_COLL_ALLGATHER: return "_allgather_base";
    case MODEL_COLL_REDUCESCATTER: return "_reduce_scatter_base";
    case MODEL_COLL_ALLTOALL: return "all_to_allv";
    case MODEL_COLL_BROADCAST: return "broadcast";
    case MODEL_COLL_REDUCE: return "reduce";
    default: return strstr(task, "receive") ? "recv" : strstr(task, "send") ? "send" : "sendrecv";
    }
}

/* PyTorch's dtype name and its size for a graph group's dtype. */
static const char *torch_dtype(const char *d, int *bytes)
{
    static const struct {
        const char *ours, *torch;
        int bytes;
    } table[] = {{"fp32", "Float", 4}, {"tf32", "Float", 4}, {"fp16", "Half", 2},
                 {"bf16", "BFloat16", 2}, {"fp8", "Float8_e4m3fn", 1}, {"fp4", "Byte", 1}};
    for (size_t i = 0; d && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(d, table[i].ours) == 0) {
            *bytes = table[i].bytes;
            return table[i].torch;
        }
    *bytes = 1;
    return "Byte";
}

/* ---- where tasks belong ---- */

/* The model chunk of rank `stage` holding layer L, and its ordinal among
 * the rank's layers; -1 when the rank does not hold it. */
static int64_t chunk_of_layer(const struct writer *w, int64_t layer, int64_t *ordinal)
{
    int64_t pp = w->s->parallel.pp, before = 0;
    for (int64_t c = 0; c < w->s->parallel.vpp; c++) {
        const struct est_stage_layers *st = &w->place[c * pp + w->stage];
        if (layer >= st->first_layer && layer < st->first_layer + st->layers) {
            *ordinal = before + layer - st->first_layer;
            return c;
        }
        before += st->layers;
    }
    return -1;
}

/* The chunk of this rank that holds the embedding (part 1) or the loss
 * (part 2), or -1. */
static int64_t chunk_holding(const struct writer *w, int loss)
{
    int64_t pp = w->s->parallel.pp;
    for (int64_t c = 0; c < w->s->parallel.vpp; c++) {
        const struct est_stage_layers *st = &w->place[c * pp + w->stage];
        if (loss ? st->loss : st->embedding)
            return c;
    }
    return -1;
}

static struct where locate(const struct writer *w, const char *tag)
{
    struct where at = {-1, -1, -1, -1, PART_NONE};
    char dir[16];
    long long a, b;
    if (!tag)
        return at;
    if (sscanf(tag, "%15s mb %lld chunk %lld", dir, &a, &b) == 3) {
        at.mb = a;
        at.chunk = b;
        at.dir = strcmp(dir, "backward") == 0;
        if (w->detail != EST_DETAIL_STAGE && chunk_holding(w, at.dir) == at.chunk)
            at.part = at.dir ? PART_OUTPUT : PART_EMBEDDING;
    } else if (sscanf(tag, "layer %lld %15s mb %lld", &a, dir, &b) == 3) {
        int64_t ordinal;
        at.dir = strcmp(dir, "backward") == 0;
        at.mb = b;
        at.layer = a;
        at.chunk = chunk_of_layer(w, a, &ordinal);
        at.part = PART_LAYER;
    } else if (sscanf(tag, "output layer forward mb %lld", &a) == 1) {
        at = (struct where){0, a, chunk_holding(w, 1), -1, PART_OUTPUT};
    } else if (sscanf(tag, "embedding backward mb %lld", &a) == 1) {
        at = (struct where){1, a, chunk_holding(w, 0), -1, PART_EMBEDDING};
    }
    if (at.dir >= 0 && at.chunk < 0)
        at.dir = -1; /* not of this rank: leave it unannotated */
    return at;
}

static void write_span(struct writer *w, const struct span *sp, int outer)
{
    char name[96];
    int64_t ordinal = 0;
    const struct where *at = &sp->at;
    if (outer)
        snprintf(name, sizeof name, "nn.Module: GPTModel_%" PRId64, at->chunk);
    else if (at->part == PART_LAYER && chunk_of_layer(w, at->layer, &ordinal) >= 0)
        snprintf(name, sizeof name, "nn.Module: TransformerLayer_%" PRId64, ordinal);
    else if (at->part == PART_EMBEDDING)
        snprintf(name, sizeof name, "nn.Module: LanguageModelEmbedding_0");
    else
        snprintf(name, sizeof name, "nn.Module: ColumnParallelLinear_0");
    event_head(w, "python_function", name, w->cpu_pid, 1, sp->start, sp->end - sp->start);
    fprintf(w->f, "\"Python id\": %" PRId64 ", \"Python parent id\": ", sp->id);
    if (sp->parent >= 0)
        fprintf(w->f, "%" PRId64, sp->parent);
    else
        fputs("null", w->f);
    fprintf(w->f, ", \"Python thread\": 0, \"pass\": \"%s\", \"micro-batch\": %" PRId64 ", \"chunk\": %" PRId64,
            at->dir ? "backward" : "forward", at->mb, at->chunk);
    if (!outer && at->part == PART_LAYER)
        fprintf(w->f, ", \"layer\": %" PRId64, at->layer);
    fputs("}}", w->f);
}

static void close_span(struct writer *w, struct span *sp, int outer)
{
    if (sp->open)
        write_span(w, sp, outer);
    sp->open = 0;
}

/* A call at [s, e] working for `at`: extend the open spans or open new
 * ones. */
static void annotate(struct writer *w, struct where at, int64_t s, int64_t e)
{
    struct span *pass = &w->pass, *part = &w->part;
    int same_pass = pass->open && at.dir == pass->at.dir && at.mb == pass->at.mb && at.chunk == pass->at.chunk;
    if (at.dir < 0 || !same_pass) {
        close_span(w, part, 0);
        close_span(w, pass, 1);
        if (at.dir < 0)
            return;
        *pass = (struct span){1, at, s, e, ++w->python_id, -1};
    }
    if (part->open && (at.part != part->at.part || at.layer != part->at.layer))
        close_span(w, part, 0);
    if (at.part != PART_NONE && !part->open)
        *part = (struct span){1, at, s, e, ++w->python_id, pass->id};
    pass->end = e > pass->end ? e : pass->end;
    if (part->open)
        part->end = e > part->end ? e : part->end;
}

/* ---- the rank's tasks ---- */

static int by_call_lat(const void *a, const void *b)
{
    const struct launch *x = a, *y = b;
    if (x->call != y->call)
        return x->call < y->call ? -1 : 1;
    if (x->lat != y->lat)
        return x->lat < y->lat ? -1 : 1;
    return (x->task > y->task) - (x->task < y->task);
}

/* Every GPU task of the rank with the call that launched it, sorted by
 * call and latency; which tasks another stream waits on; the launch
 * call's duration. */
static int index_rank(struct writer *w)
{
    const struct model_graph *g = w->g;
    size_t cap = 0;
    int64_t spacing = INT64_MAX;
    for (size_t k = 0; k < g->n_res; k++) {
        const struct model_resource *res = &g->res[k];
        if (res->rank != w->rank || !res->gpu)
            continue;
        for (uint32_t t = res->first; t != MODEL_NONE; t = g->next[t]) {
            for (uint32_t e = g->pred_at[t]; e < g->pred_at[t + 1]; e++) {
                const struct model_edge *ed = &g->edges[e];
                if (ed->kind == MODEL_EDGE_LAUNCH && ed->type == MODEL_SS) {
                    if (sc_vec_reserve((void **)&w->launches, &cap, w->n_launches + 1, sizeof *w->launches))
                        return sc_error_set(w->err, SC_ENOMEM, "out of memory writing the trace");
                    w->launches[w->n_launches++] = (struct launch){ed->from, t, ed->lat};
                } else if (ed->kind == MODEL_EDGE_EVENT_SYNC && g->tasks[ed->from].res != g->tasks[t].res &&
                           g->tasks[ed->from].rank == w->rank) {
                    w->rec_corr[ed->from] = 0; /* work on another stream of the rank waits for it */
                }
            }
        }
    }
    sc_sort(w->launches, w->n_launches, sizeof *w->launches, by_call_lat);
    for (size_t i = 0; i < w->n_launches; i++) {
        int64_t gap = i && w->launches[i - 1].call == w->launches[i].call ?
                          w->launches[i].lat - w->launches[i - 1].lat : w->launches[i].lat;
        if (gap > 0 && gap < spacing)
            spacing = gap;
    }
    w->lw = spacing / 2 < LAUNCH_NS ? spacing / 2 : LAUNCH_NS;
    return SC_OK;
}

static size_t first_launch_of(const struct writer *w, uint32_t call)
{
    size_t lo = 0, hi = w->n_launches;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->launches[mid].call < call)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A communication kernel's collective arguments. */
static void collective_args(struct writer *w, uint32_t t)
{
    const struct model_graph *g = w->g;
    const struct model_task *k = &g->tasks[t];
    const char *name = model_graph_str(g, g->src[t].name);
    char pg[256];
    int64_t seq, size = -1, bytes = -1;
    int elem;
    const char *dtype = torch_dtype(cost_hw_dtype_name(w->s->options.dtype), &elem);
    if (k->group != MODEL_NONE) {
        const struct model_coll_group *gr = &g->groups[k->group];
        uint32_t first = g->group_at[k->group], n = g->group_at[k->group + 1] - first;
        dtype = torch_dtype(model_graph_str(g, gr->dtype), &elem);
        size = gr->size;
        bytes = gr->bytes;
        seq = k->group;
        if (n > 1) {
            size_t used = (size_t)snprintf(pg, sizeof pg, "ranks");
            for (uint32_t i = 0; i < n && used < sizeof pg; i++)
                used += (size_t)snprintf(pg + used, sizeof pg - used, "%s%" PRId64, i ? "," : " ",
                                         synth_trace_rank(w->s, g, g->tasks[g->group_tasks[first + i]].rank));
        } else {
            snprintf(pg, sizeof pg, "group of %" PRId64 " with rank %" PRId64, size, w->global_rank);
        }
    } else {
        /* no group: a process group of its own, never matched across ranks */
        snprintf(pg, sizeof pg, "rank %" PRId64 " stream %" PRId64, w->global_rank, g->res[k->res].tid);
        seq = (int64_t)g->n_groups + t;
    }
    int64_t in = bytes >= 0 ? bytes / elem : -1, out = in;
    if (k->sub == MODEL_COLL_ALLGATHER && size > 0 && in >= 0)
        in = out / size;
    else if (k->sub == MODEL_COLL_REDUCESCATTER && size > 0 && in >= 0)
        out = in / size;
    fprintf(w->f, ", \"Collective name\": \"%s\", \"dtype\": \"%s\", \"Process Group Name\": ",
            collective_name(k->sub, name), dtype);
    put_str(w->f, pg);
    fprintf(w->f, ", \"Process Group Description\": \"synthesised\", \"Seq\": %" PRId64, seq);
    if (in >= 0)
        fprintf(w->f, ", \"In msg nelems\": %" PRId64 ", \"Out msg nelems\": %" PRId64, in, out);
    if (size > 0)
        fprintf(w->f, ", \"Group size\": %" PRId64, size);
}

static void gpu_task(struct writer *w, uint32_t t, int64_t corr)
{
    const struct model_graph *g = w->g;
    const struct model_task *k = &g->tasks[t];
    const char *op = model_graph_str(g, g->src[t].name);
    char buf[192];
    const char *name = k->cls == MODEL_TASK_COMM ? nccl_kernel(k->sub) : kernel_name(k->sub, op, buf, sizeof buf);
    int64_t stream = g->res[k->res].tid;
    event_head(w, "kernel", name, w->device, stream, w->start[t], w->end[t] - w->start[t]);
    fprintf(w->f, "\"device\": %" PRId64 ", \"stream\": %" PRId64, w->device, stream);
    if (corr > 0)
        fprintf(w->f, ", \"correlation\": %" PRId64, corr);
    if (name != op) {
        fputs(", \"stepcast op\": ", w->f);
        put_str(w->f, op);
    }
    if (k->cls == MODEL_TASK_COMM)
        collective_args(w, t);
    fputs("}}", w->f);
}

/* A cuda_sync record of the call with correlation corr. */
static void cuda_sync(struct writer *w, const char *kind, int64_t stream, int64_t ts, int64_t dur, int64_t corr,
                      int64_t wait_on_stream, int64_t record_corr)
{
    event_head(w, "cuda_sync", kind, w->device, stream, ts, dur);
    fprintf(w->f, "\"cuda_sync_kind\": \"%s\", \"stream\": %" PRId64 ", \"correlation\": %" PRId64
                  ", \"device\": %" PRId64,
            kind, stream, corr, w->device);
    if (wait_on_stream >= 0)
        fprintf(w->f, ", \"wait_on_stream\": %" PRId64 ", \"wait_on_cuda_event_record_corr_id\": %" PRId64,
                wait_on_stream, record_corr);
    fputs("}}", w->f);
}

/* The launches of call c on thread tid: for each, the waits of its task
 * just before, the launch ending when the task may start, the task, and a
 * record after it when other work waits for it. Returns when the last
 * event written ends. */
static int64_t launches(struct writer *w, uint32_t c, int64_t tid, struct where *at)
{
    const struct model_graph *g = w->g;
    int64_t s = w->start[c], cursor = s;
    at->dir = -1;
    for (size_t i = first_launch_of(w, c); i < w->n_launches && w->launches[i].call == c; i++) {
        uint32_t t = w->launches[i].task;
        int64_t ready = s + w->launches[i].lat, stream = g->res[g->tasks[t].res].tid;
        if (i == first_launch_of(w, c))
            *at = locate(w, model_graph_str(g, g->src[t].tag));
        int64_t n_waits = 0;
        for (uint32_t e = g->pred_at[t]; e < g->pred_at[t + 1]; e++)
            n_waits += g->edges[e].kind == MODEL_EDGE_EVENT_SYNC && w->rec_corr[g->edges[e].from] > 0;
        int64_t ts = ready - w->lw - n_waits;
        for (uint32_t e = g->pred_at[t]; e < g->pred_at[t + 1]; e++) {
            const struct model_edge *ed = &g->edges[e];
            if (ed->kind != MODEL_EDGE_EVENT_SYNC || w->rec_corr[ed->from] <= 0)
                continue;
            int64_t corr = runtime_call(w, tid, "cudaStreamWaitEvent", ts, 0);
            cuda_sync(w, "Stream Wait Event", stream, ts, 0, corr, g->res[g->tasks[ed->from].res].tid,
                      w->rec_corr[ed->from]);
            ts++;
        }
        int64_t corr = runtime_call(w, tid, "cudaLaunchKernel", ready - w->lw, w->lw);
        gpu_task(w, t, corr);
        w->written[t] = 1;
        if (w->rec_corr[t] == 0)
            w->rec_corr[t] = runtime_call(w, tid, "cudaEventRecord", ready, 0);
        cursor = ready;
    }
    return cursor;
}

/* A call that waits for GPU work (its finish-to-finish host-sync edges):
 * cudaStreamSynchronize when all of it is on one stream, else
 * cudaDeviceSynchronize, from `from` to the call's replayed end. */
static void sync_call(struct writer *w, uint32_t c, int64_t tid, int64_t from)
{
    const struct model_graph *g = w->g;
    int64_t stream = -1, e = w->end[c];
    int one = 1;
    for (uint32_t i = g->pred_at[c]; i < g->pred_at[c + 1]; i++) {
        const struct model_edge *ed = &g->edges[i];
        if (ed->kind != MODEL_EDGE_HOST_SYNC)
            continue;
        int64_t sid = g->res[g->tasks[ed->from].res].tid;
        one &= stream < 0 || stream == sid;
        stream = sid;
    }
    if (stream < 0)
        return;
    /* after a record written at `from` (or at the call's start, by the call
     * before) with no duration, unless it cannot */
    int64_t ts = from < w->start[c] ? w->start[c] : from;
    if (ts + 1 <= e)
        ts++;
    if (ts > e)
        ts = e;
    int64_t corr = runtime_call(w, tid, one ? "cudaStreamSynchronize" : "cudaDeviceSynchronize", ts, e - ts);
    if (one)
        cuda_sync(w, "Stream Sync", stream, ts, e - ts, corr, -1, -1);
    else
        cuda_sync(w, "Context Sync", -1, ts, e - ts, corr, -1, -1);
}

static void cpu_thread(struct writer *w, const struct model_resource *res)
{
    const struct model_graph *g = w->g;
    for (uint32_t c = res->first; c != MODEL_NONE; c = g->next[c]) {
        const struct model_task *k = &g->tasks[c];
        struct where at = {-1, -1, -1, -1, PART_NONE};
        if (k->cls == MODEL_TASK_CALL) {
            int64_t done = launches(w, c, res->tid, &at);
            if (k->sub == MODEL_CALL_SYNC) { /* between passes (pipeline transfers) or after them */
                sync_call(w, c, res->tid, done);
                at.dir = -1;
            }
        } else if (k->cls == MODEL_TASK_HOST) {
            event_head(w, "cpu_op", model_graph_str(g, g->src[c].name), w->cpu_pid, res->tid, w->start[c],
                       w->end[c] - w->start[c]);
            fputs("}}", w->f);
        }
        if (k->cls != MODEL_TASK_MARKER)
            annotate(w, at, w->start[c], w->end[c]);
    }
    close_span(w, &w->part, 0);
    close_span(w, &w->pass, 1);
}

int64_t synth_trace_rank(const struct est_spec *s, const struct model_graph *g, uint16_t rank)
{
    return (int64_t)g->ranks[rank].id * s->parallel.tp * s->parallel.cp * s->parallel.dp;
}

static void header(struct writer *w)
{
    const struct hw_profile *hw = w->hw;
    fprintf(w->f, "{\"schemaVersion\": 1, \"stepcast_synthetic\": true, \"displayTimeUnit\": \"ms\",\n"
                  " \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %" PRId64 ", \"world_size\": %" PRId64
                  "},\n \"deviceProperties\": [{\"id\": %" PRId64 ", \"name\": ",
            w->global_rank, spec_gpus(w->s), w->device);
    put_str(w->f, hw->n_device_names ? hw->device_names[0] : hw->name);
    fprintf(w->f, ", \"totalGlobalMem\": %.0f, \"numSms\": %d}],\n \"traceEvents\": [", hw->hbm_gb * 1e9,
            hw->sm_count);
    fprintf(w->f, "\n{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %" PRId64
                  ", \"tid\": 0, \"args\": {\"name\": \"pipeline stage %" PRId64 " (synthesised)\"}}",
            w->cpu_pid, w->stage);
    w->events++;
}

int synth_trace_write(const struct est_spec *s, const struct hw_profile *hw, enum est_detail detail,
                          const struct model_graph *g, const int64_t *start, const int64_t *end,
                          uint16_t rank, FILE *f, struct sc_error *err)
{
    struct writer w = {.s = s, .hw = hw, .detail = detail, .g = g, .start = start, .end = end, .rank = rank,
                       .f = f, .err = err};
    int rc = SC_OK;
    if (rank >= g->n_ranks)
        return sc_error_set(err, SC_EINVAL, "no rank %u in the synthesised step", (unsigned)rank);
    w.stage = g->ranks[rank].id;
    w.global_rank = synth_trace_rank(s, g, rank);
    w.device = s->cluster.gpus_per_node > 0 ? w.global_rank % s->cluster.gpus_per_node : 0;
    w.cpu_pid = CPU_PID_BASE + w.global_rank;
    w.rec_corr = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *w.rec_corr);
    w.place = calloc((size_t)(s->parallel.pp * s->parallel.vpp), sizeof *w.place);
    w.written = calloc(g->n_tasks ? g->n_tasks : 1, 1);
    if (!w.rec_corr || !w.place || !w.written) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory writing the trace");
        goto out;
    }
    memset(w.rec_corr, 0xff, g->n_tasks * sizeof *w.rec_corr);
    if ((rc = spec_place_layers((int)s->model.layers, (int)s->parallel.pp, (int)s->parallel.vpp, w.place, err)) ||
        (rc = index_rank(&w)))
        goto out;
    header(&w);
    for (size_t i = 0; i < g->n_steps; i++) {
        const struct model_graph_step *st = &g->steps[i];
        if (st->rank != rank)
            continue;
        event_head(&w, "user_annotation", "ProfilerStep#1", w.cpu_pid, g->res[g->tasks[st->begin].res].tid,
                   start[st->begin], end[st->end] - start[st->begin]);
        fputs("}}", f);
    }
    for (size_t k = 0; k < g->n_res; k++)
        if (g->res[k].rank == rank && !g->res[k].gpu)
            cpu_thread(&w, &g->res[k]);
    for (size_t k = 0; k < g->n_res; k++) {
        const struct model_resource *res = &g->res[k];
        if (res->rank != rank || !res->gpu)
            continue;
        for (uint32_t t = res->first; t != MODEL_NONE; t = g->next[t])
            if (!w.written[t]) /* launched by nothing: no correlation */
                gpu_task(&w, t, 0);
        fprintf(f, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %" PRId64 ", \"tid\": %" PRId64
                   ", \"args\": {\"name\": ",
                w.device, res->tid);
        char label[96];
        snprintf(label, sizeof label, "stream %" PRId64 " (%s)", res->tid, model_graph_str(g, res->label));
        put_str(f, label);
        fputs("}}", f);
    }
    fputs("\n]}\n", f);
    if (ferror(f))
        rc = sc_error_set(err, SC_EIO, "writing the trace of pipeline rank %" PRId64 " failed", w.stage);
out:
    free(w.launches);
    free(w.rec_corr);
    free(w.written);
    free(w.place);
    return rc;
}
