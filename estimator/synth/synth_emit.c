/* estimator/synth/synth_emit.c: the emitter of the step synthesiser
 * (synth_internal.h): a rank's operations turned into dispatches on its
 * CPU thread and tasks on its streams, with the edges between them.
 *
 * At `layer` and `stage` detail it merges a run of operations on one
 * stream that nothing else waits on into one task, keeping the run's
 * dispatches as one host task. Apart from the operations and the schedule
 * because it knows neither: it only turns what it is given into graph
 * tasks. */
#include "estimator/synth/synth_internal.h"

#include <string.h>

#include "model/kernel_family.h"
#include "common/banned.h"

uint32_t synth_add_task(struct synth *y, const struct model_task_spec *t)
{
    uint32_t id = MODEL_NONE;
    if (!y->failed && model_gb_add_task(y->gb, t, &id))
        y->failed = y->err->code;
    return id;
}

void synth_add_edge(struct synth *y, uint32_t from, uint32_t to, enum model_edge_kind kind,
                    enum model_edge_type type, int64_t lat)
{
    if (!y->failed && from != MODEL_NONE && to != MODEL_NONE &&
        model_gb_add_edge(y->gb, from, to, kind, type, lat, 0))
        y->failed = y->err->code;
}

uint32_t synth_add_group(struct synth *y, enum model_coll_op op, int64_t bytes, uint32_t size,
                         const uint32_t *tasks, size_t n)
{
    uint32_t g = MODEL_NONE;
    struct model_group_spec gs = {.op = op, .bytes = bytes, .dtype = cost_hw_dtype_name(y->sh.dt),
                                  .pg = NULL, .seq = -1, .size = size};
    if (!y->failed && model_gb_add_group(y->gb, &gs, tasks, n, &g))
        y->failed = y->err->code;
    return g;
}

/* A host call on rank r's thread (t, on r->cpu); returns the task that
 * holds it, and *at (unless NULL) when the call starts in that task. With
 * `calls` (synth_build's graph) each call is a task (at 0); without (the one
 * synth_estimate only replays) the task holds the calls since the thread
 * last synchronised: the calls run
 * back to back, nothing waits on one but the work it launches, and that
 * work waits on the task's start plus the call's place in it (SS and SF
 * edges), so every time stays as it was. A synchronising call (`sync`:
 * the caller adds what it waits for, which holds the task's finish) ends
 * the task. */
uint32_t synth_host_call(struct synth *y, struct rank *r, const struct model_task_spec *t, int sync,
                         int64_t *at)
{
    int64_t offset = 0;
    uint32_t call;
    if (y->calls) {
        call = synth_add_task(y, t);
    } else {
        if (r->call == MODEL_NONE) {
            r->call = synth_add_task(y, t);
            r->call_ns = t->dur;
        } else {
            offset = r->call_ns;
            r->call_ns = sc_sat_add(r->call_ns, t->dur);
            if (!y->failed && model_gb_set_dur(y->gb, r->call, r->call_ns))
                y->failed = y->err->code;
        }
        call = r->call;
        if (sync)
            r->call = MODEL_NONE;
    }
    if (at)
        *at = offset;
    return call;
}

/* Turn the pending run into a host dispatch and a GPU task. */
void synth_flush(struct synth *y, struct rank *r)
{
    struct run *u = &r->run;
    const struct run_sum *m = &u->sum;
    if (m->n == 0)
        return;
    int single = m->n == 1;
    uint8_t cls = m->kernel ? MODEL_TASK_KERNEL : m->cls;
    const char *name = single ? u->first.name : r->region;
    int64_t at;
    uint32_t call = synth_host_call(y, r, &(struct model_task_spec){.res = r->cpu, .cls = MODEL_TASK_CALL,
                                                              .sub = MODEL_CALL_LAUNCH, .dur = m->cpu,
                                                              .name = single ? "dispatch" : "dispatches",
                                                              .tag = name}, 0, &at);
    uint32_t task = synth_add_task(y, &(struct model_task_spec){.res = r->st[u->stream], .cls = cls,
                                                          .sub = m->mixed ? MODEL_KF_OTHER : m->sub,
                                                          .dur = m->gpu, .name = name, .tag = r->region});
    /* compute merged with collectives among peers: the breakdown counts
     * the collectives' time as communication, as the kernels apart show;
     * and the FLOPs its kernels execute */
    if (cls == MODEL_TASK_KERNEL && (m->comm > 0 || m->flops > 0) && !y->failed &&
        model_gb_set_part(y->gb, task, m->comm, m->flops))
        y->failed = y->err->code;
    /* it starts once its first dispatch is done, and it cannot end before
     * any of its operations could have: dispatched, then it and the ones
     * after it run (the FF latency counts from the last dispatch; the SF
     * one, of a call merged with others, from the first) */
    synth_add_edge(y, call, task, MODEL_EDGE_LAUNCH, MODEL_SS, at + m->first_cpu);
    if (y->calls)
        synth_add_edge(y, call, task, MODEL_EDGE_LAUNCH, MODEL_FF, m->tail - m->cpu);
    else
        synth_add_edge(y, call, task, MODEL_EDGE_LAUNCH, MODEL_SF, at + m->tail);
    for (int i = 0; i < r->n_waits[u->stream]; i++)
        synth_add_edge(y, r->waits[u->stream][i], task, MODEL_EDGE_EVENT_SYNC, MODEL_FS, 0);
    r->n_waits[u->stream] = 0;
    if (single && cls == MODEL_TASK_COMM && u->first.group_size > 1)
        synth_add_group(y, (enum model_coll_op)m->sub, u->first.bytes, u->first.group_size, &task, 1);
    r->last[u->stream] = task;
    memset(u, 0, sizeof *u);
}

/* The next task on `stream` waits for `task` (on another stream or rank). */
void synth_wait_on(struct synth *y, struct rank *r, int stream, uint32_t task)
{
    if (task == MODEL_NONE)
        return;
    if (r->run.sum.n > 0 && r->run.stream == stream)
        synth_flush(y, r);
    for (int i = 0; i < r->n_waits[stream]; i++)
        if (r->waits[stream][i] == task)
            return;
    if (r->n_waits[stream] == MAX_WAITS) {
        y->failed = sc_error_set(y->err, SC_EINTERNAL, "a synthesised task waits on more than %d others",
                                 MAX_WAITS);
        return;
    }
    r->waits[stream][r->n_waits[stream]++] = task;
}

/* The host time of dispatching operation o: launches are asynchronous, the
 * host does not wait for the GPU work it dispatched. */
static int64_t op_host(const struct synth *y, const struct op *o)
{
    double us = o->cls == MODEL_TASK_COMM ? y->c->host_coll_us : y->c->host_op_us;
    return sc_sat_mul(synth_ns(us), o->ndisp ? o->ndisp : 1);
}

/* Append summary a to b (b's operations after a's). The tail composes in
 * max-plus arithmetic: a run dispatched from host time t0 whose GPU work
 * ended by tail0 ends by max(tail0 + gpu, t0 + tail) after it. */
static void sum_append(struct run_sum *b, const struct run_sum *a)
{
    if (b->n == 0) {
        *b = *a;
        return;
    }
    b->tail = max_i64(sc_sat_add(b->tail, a->gpu), sc_sat_add(b->cpu, a->tail));
    b->mixed |= a->mixed || a->sub != b->sub;
    b->kernel |= a->kernel;
    b->cpu = sc_sat_add(b->cpu, a->cpu);
    b->gpu = sc_sat_add(b->gpu, a->gpu);
    b->comm = sc_sat_add(b->comm, a->comm);
    b->flops += a->flops;
    b->n += a->n;
}

static void sum_op(const struct synth *y, const struct op *o, struct run_sum *out)
{
    int64_t cpu = op_host(y, o);
    *out = (struct run_sum){.n = 1, .cpu = cpu, .gpu = o->dur, .comm = o->cls == MODEL_TASK_COMM ? o->dur : o->comm,
                            .flops = o->flops, .first_cpu = cpu, .tail = sc_sat_add(cpu, o->dur),
                            .cls = o->cls, .sub = o->sub, .kernel = o->cls == MODEL_TASK_KERNEL, .first = o};
}

/* Whether o is a sequence-parallel all-gather or reduce-scatter of the
 * tensor-parallel group (tp_in, tp_out). */
static int tp_coll(const struct op *o, enum model_coll_op op)
{
    return o->cls == MODEL_TASK_COMM && o->sub == op && o->special == OP_PLAIN &&
           !strcmp(o->name, op == MODEL_COLL_ALLGATHER ? "tp all-gather" : "tp reduce-scatter");
}

/* The GEMM next to index i of l in direction dir (+1 after, -1 before),
 * past other kernels (quantisation, bias gradients) but no communication;
 * l->n when none. */
static size_t gemm_beside(const struct oplist *l, size_t i, int dir)
{
    for (size_t j = i + (size_t)dir; j < l->n; j += (size_t)dir) { /* wraps past 0 to SIZE_MAX */
        if (l->v[j].cls != MODEL_TASK_KERNEL || l->v[j].special != OP_PLAIN)
            return l->n;
        if (l->v[j].sub == MODEL_KF_GEMM)
            return j;
    }
    return l->n;
}

/* Transformer Engine's tensor-parallel communication overlap
 * (options.tp_comm_overlap, its userbuffers): a sequence-parallel
 * all-gather runs in tp chunks beside the GEMM that takes it, a
 * reduce-scatter beside the GEMM before it (in the backward, the weight
 * gradient's, as its bulk overlap runs). Each pair becomes one operation:
 * the longer of the two and one chunk of the shorter, which nothing hides;
 * the GEMM's FLOPs, and what it takes beyond the GEMM counted as
 * communication. */
static void overlap_tp(const struct synth *y, struct oplist *l)
{
    if (!y->s->options.tp_comm_overlap || !y->sh.sp)
        return;
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        int ag = tp_coll(&l->v[i], MODEL_COLL_ALLGATHER), rs = tp_coll(&l->v[i], MODEL_COLL_REDUCESCATTER);
        /* an all-gather's GEMM is ahead, a reduce-scatter's among those kept */
        size_t g = ag ? gemm_beside(l, i, 1) : rs && w > 0 ? gemm_beside(l, w, -1) : l->n;
        if (g == l->n || l->v[g].comm > 0) {
            l->v[w++] = l->v[i];
            continue;
        }
        struct op *gemm = &l->v[g];
        int64_t c = l->v[i].dur, k = gemm->dur;
        int64_t both = sc_sat_add(c > k ? c : k, (c < k ? c : k) / (int64_t)y->sh.tp);
        gemm->comm = both - k;
        gemm->dur = both;
        /* the collective is dropped: its GEMM holds its time */
    }
    l->n = w;
}

/* Summarise a list of operations on the compute stream, once its costs are
 * known. */
void synth_summarise(const struct synth *y, struct oplist *l)
{
    overlap_tp(y, l);
    memset(&l->sum, 0, sizeof l->sum);
    l->summed = 1;
    for (size_t i = 0; i < l->n; i++) {
        struct run_sum one;
        if (l->v[i].special != OP_PLAIN)
            l->summed = 0;
        sum_op(y, &l->v[i], &one);
        sum_append(&l->sum, &one);
    }
}

/* Add operations (summarised) on `stream` to the pending run. */
void synth_run_add(struct synth *y, struct rank *r, int stream, const struct run_sum *a)
{
    struct run *u = &r->run;
    /* waits on this stream predate the run (synth_wait_on flushes a run on its
     * stream): they are the run's, so it goes on */
    if (u->sum.n > 0 && u->stream != stream)
        synth_flush(y, r);
    if (u->sum.n == 0) {
        u->stream = stream;
        u->first = *a->first;
    }
    sum_append(&u->sum, a);
    if (y->detail == EST_DETAIL_KERNEL)
        synth_flush(y, r);
}

void synth_emit(struct synth *y, struct rank *r, int stream, const struct op *o)
{
    struct run_sum one;
    sum_op(y, o, &one);
    synth_run_add(y, r, stream, &one);
}

/* The last task on a stream, for other work to wait on. */
uint32_t synth_anchor(struct synth *y, struct rank *r, int stream)
{
    if (r->run.sum.n > 0 && r->run.stream == stream)
        synth_flush(y, r);
    return r->last[stream];
}

/* A host synchronisation: the thread waits until every task in `on` is
 * done. Returns the call. */
uint32_t synth_host_sync(struct synth *y, struct rank *r, const char *name, const uint32_t *on, size_t n)
{
    synth_flush(y, r);
    uint32_t call = synth_host_call(y, r, &(struct model_task_spec){.res = r->cpu, .cls = MODEL_TASK_CALL,
                                                              .sub = MODEL_CALL_SYNC, .dur = 0, .name = name},
                              1, NULL);
    for (size_t i = 0; i < n; i++)
        synth_add_edge(y, on[i], call, MODEL_EDGE_HOST_SYNC, MODEL_FF, 0);
    return call;
}

/* Call `call` (a host synchronisation) waits for the last task of every
 * stream. A task an earlier synchronisation of the thread waited for needs
 * no edge: the thread's calls run in order, so `call` ends after it anyway. */
void synth_sync_streams(struct synth *y, struct rank *r, uint32_t call)
{
    for (int st = 0; st < ST_COUNT; st++)
        if (r->last[st] != r->synced[st]) {
            synth_add_edge(y, r->last[st], call, MODEL_EDGE_HOST_SYNC, MODEL_FF, 0);
            r->synced[st] = r->last[st];
        }
}

void synth_device_sync(struct synth *y, struct rank *r, const char *name)
{
    synth_sync_streams(y, r, synth_host_sync(y, r, name, NULL, 0));
}

/* At layer detail a merged run ends with its layer. */
void synth_layer_boundary(struct synth *y, struct rank *r)
{
    if (y->detail == EST_DETAIL_LAYER)
        synth_flush(y, r);
}

static void emit_cp_attention(struct synth *y, struct rank *r, int backward)
{
    int64_t steps = y->s->parallel.cp;
    const struct op *blk = &y->cp_block[backward], *ex = &y->cp_exchange[backward];
    /* exchange i runs beside block i; block i + 1 needs exchange i */
    for (int64_t i = 0; i < steps; i++) {
        uint32_t prev = synth_anchor(y, r, ST_COMPUTE), received = r->last[ST_CP]; /* exchange i - 1 */
        if (i + 1 < steps) {
            synth_wait_on(y, r, ST_CP, prev);
            synth_emit(y, r, ST_CP, ex);
            synth_flush(y, r);
        }
        if (i > 0)
            synth_wait_on(y, r, ST_COMPUTE, received);
        synth_emit(y, r, ST_COMPUTE, blk);
    }
}

void synth_emit_ops(struct synth *y, struct rank *r, const struct oplist *l, int backward)
{
    if (l->summed && y->detail != EST_DETAIL_KERNEL) {
        if (l->n)
            synth_run_add(y, r, ST_COMPUTE, &l->sum);
        return;
    }
    for (size_t i = 0; i < l->n && !y->failed; i++) {
        if (l->v[i].special == OP_CP_ATTENTION)
            emit_cp_attention(y, r, backward);
        else
            synth_emit(y, r, ST_COMPUTE, &l->v[i]);
    }
}
