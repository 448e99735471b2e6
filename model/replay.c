/* model/replay.c: the list-scheduler simulation and per-step results
 * (replay.h).
 *
 * The simulation is Kahn's algorithm over the graph: a task is scheduled
 * once its resource predecessor and every edge source are done. A
 * collective's members are held until the last one is ready, then all end
 * together. Should inference have left a cycle, the earliest blocked task is
 * scheduled anyway and counted (`forced`), so a replay always finishes. */
#include "model/replay.h"

#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cancel.h"
#include "common/hugepage.h"
#include "common/spans.h"
#include "common/vec.h"
#include "model/graph.h"
#include "model/kernel_family.h"
#include "common/checked.h"
#include "common/banned.h"

static const char *const bound_names[MODEL_BOUND_COUNT] = {
    "gpu_compute", "communication", "host", "launch", "sync", "unexplained",
};

const char *model_bound_name(enum model_bound b)
{
    return (unsigned)b < MODEL_BOUND_COUNT ? bound_names[b] : "unknown";
}

void model_replay_opts_default(struct model_replay_opts *o)
{
    memset(o, 0, sizeof *o);
    o->critical_path = 1;
    o->step_unexplained = 1;
}

void model_replay_opts_steps(struct model_replay_opts *o)
{
    model_replay_opts_default(o);
    o->critical_path = 0;
    o->slowest_breakdown = 1;
    o->step_unexplained = 0;
}

void model_replay_opts_kept(struct model_replay_opts *o, struct model_coll_waits waits)
{
    model_replay_opts_default(o);
    o->critical_path = 0;
    o->keep_unexplained = 1;
    o->waits = waits;
    o->step_unexplained = 0;
}

int model_replay_add_factor(struct model_replay_opts *o, const struct model_replay_factor *f,
                            struct sc_error *err)
{
    if (!(f->factor >= 0) || !isfinite(f->factor))
        return sc_error_set(err, SC_EINVAL, "a factor must be a number >= 0");
    if (!memchr(f->pattern, '\0', sizeof f->pattern))
        return sc_error_set(err, SC_EINVAL, "a name pattern longer than %d bytes", MODEL_REPLAY_PATTERN_MAX - 1);
    size_t stars = 0; /* each '*' may multiply the work of matching a name */
    for (const char *c = f->pattern; *c; c++)
        stars += *c == '*';
    if (stars > MODEL_REPLAY_PATTERN_STARS)
        return sc_error_set(err, SC_EINVAL, "a name pattern with more than %d '*'", MODEL_REPLAY_PATTERN_STARS);
    if (o->n_factors >= MODEL_REPLAY_MAX_FACTORS)
        return sc_error_set(err, SC_ELIMIT, "more than %d factors", MODEL_REPLAY_MAX_FACTORS);
    o->factors[o->n_factors++] = *f;
    return SC_OK;
}

#define SCALE_USAGE                                                                                   \
    "expected WHAT=F or WHAT@R=F, WHAT one of gpu, comm, cpu, launch, all, a task class, kernel:TEXT, " \
    "family:NAME, name:GLOB"

/* The glob of names that contain `text` ("*text*", glob characters
 * escaped); -1 when it does not fit. */
static int contains_glob(const char *text, char *glob, size_t size)
{
    size_t n = 0;
    glob[n++] = '*';
    for (const char *c = text; *c; c++) {
        if (n + 3 >= size)
            return -1;
        if (strchr("*?[\\", *c))
            glob[n++] = '\\';
        glob[n++] = *c;
    }
    glob[n++] = '*';
    glob[n] = '\0';
    return 0;
}

int model_replay_parse_scale(const char *spec, struct model_replay_opts *o, struct sc_error *err)
{
    struct model_replay_factor f = {.rank = -1, .family = -1};
    const char *eq = strrchr(spec, '='), *what_end;
    char *end;

    if (!eq || eq == spec)
        return sc_error_set(err, SC_EINVAL, "bad scale '%s': " SCALE_USAGE, spec);
    errno = 0;
    f.factor = strtod(eq + 1, &end);
    if (end == eq + 1 || *end || errno || !(f.factor >= 0) || f.factor > 1000)
        return sc_error_set(err, SC_EINVAL, "bad scale '%s': the factor must be a number in [0, 1000]", spec);
    /* "@R" right before '=': a rank */
    what_end = eq;
    const char *at = eq;
    while (at > spec && at[-1] >= '0' && at[-1] <= '9')
        at--;
    if (at > spec && at[-1] == '@') {
        if (at == eq)
            return sc_error_set(err, SC_EINVAL, "bad scale '%s': the rank after '@' must be a number", spec);
        errno = 0;
        long rank = strtol(at, &end, 10);
        if (errno || rank > 1000000)
            return sc_error_set(err, SC_EINVAL, "bad scale '%s': the rank after '@' must be a number", spec);
        f.rank = (int)rank;
        what_end = at - 1;
    } else if (memchr(spec, '@', (size_t)(eq - spec)) && strncmp(spec, "name:", 5) != 0 &&
               strncmp(spec, "kernel:", 7) != 0) {
        return sc_error_set(err, SC_EINVAL, "bad scale '%s': the rank after '@' must be a number", spec);
    }
    size_t n = (size_t)(what_end - spec);
    char what[MODEL_REPLAY_PATTERN_MAX + 8];
    if (n >= sizeof what)
        return sc_error_set(err, SC_EINVAL, "bad scale '%s': " SCALE_USAGE, spec);
    memcpy(what, spec, n);
    what[n] = '\0';
    int cls;
    if (strcmp(what, "gpu") == 0) {
        f.classes = MODEL_REPLAY_GPU_CLASSES;
    } else if (strcmp(what, "comm") == 0) {
        f.classes = 1u << MODEL_TASK_COMM;
    } else if (strcmp(what, "cpu") == 0) {
        f.classes = MODEL_REPLAY_CPU_CLASSES;
        f.host_gaps = 1;
    } else if (strcmp(what, "launch") == 0) {
        f.classes = 1u << MODEL_TASK_CALL;
        f.launches_only = 1;
    } else if (strcmp(what, "all") == 0) {
        f.classes = 0;
        f.host_gaps = 1;
    } else if (strncmp(what, "kernel:", 7) == 0 && what[7]) {
        if (contains_glob(what + 7, f.pattern, sizeof f.pattern))
            return sc_error_set(err, SC_EINVAL, "bad scale '%s': the kernel name text is too long", spec);
        f.classes = 1u << MODEL_TASK_KERNEL | 1u << MODEL_TASK_COMM;
    } else if (strncmp(what, "family:", 7) == 0) {
        if ((f.family = model_kernel_family_parse(what + 7)) < 0)
            return sc_error_set(err, SC_EINVAL, "bad scale '%s': no kernel family '%s'", spec, what + 7);
        f.classes = 1u << MODEL_TASK_KERNEL;
    } else if (strncmp(what, "name:", 5) == 0 && what[5]) {
        if (strlen(what + 5) >= sizeof f.pattern)
            return sc_error_set(err, SC_EINVAL, "bad scale '%s': the name pattern is too long", spec);
        snprintf(f.pattern, sizeof f.pattern, "%s", what + 5);
    } else if ((cls = model_task_class_parse(what)) >= 0 && cls != MODEL_TASK_MARKER) {
        f.classes = 1u << cls;
    } else {
        return sc_error_set(err, SC_EINVAL, "bad scale '%s': " SCALE_USAGE, spec);
    }
    return model_replay_add_factor(o, &f, err);
}

/* ---- simulation ------------------------------------------------------------------- */

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Whether factor f applies to task i by rank (rank_ix: the rank's index,
 * -1 for any), class and family; the caller checks the name pattern. */
static int factor_matches(const struct model_graph *g, const struct model_replay_factor *f, uint32_t i,
                          int rank_ix)
{
    const struct model_task *t = &g->tasks[i];
    if (rank_ix >= 0 && t->rank != rank_ix)
        return 0;
    if (f->classes && !(f->classes >> t->cls & 1u))
        return 0;
    if (f->family >= 0 && (t->cls != MODEL_TASK_KERNEL || t->sub != f->family))
        return 0;
    if (f->launches_only && (t->cls != MODEL_TASK_CALL || t->sub != MODEL_CALL_LAUNCH))
        return 0;
    return 1;
}

/* How the wait of rank r's kept collectives scales (replay.h): the work
 * of its busiest resource (a GPU stream's work but communication, a CPU
 * thread's calls, host tasks and gaps), with the factors given for every
 * rank (fa, fga), over the traced. */
static int wait_scales(const struct model_graph *g, const double *fa, const double *fga, double *scale,
                       struct sc_error *err)
{
    size_t nr = g->n_ranks ? g->n_ranks : 1;
    double *w = calloc(2 * (g->n_res + nr), sizeof *w); /* per resource, then per rank: traced, scaled */
    if (!w)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        double *rw = w + 2 * t->res, d = (double)t->dur;
        if (t->cls == MODEL_TASK_COMM || t->cls == MODEL_TASK_MARKER)
            continue;
        if (g->res[t->res].gpu) {
            rw[0] += d;
            rw[1] += d * fa[i];
        } else {
            rw[0] += d + (double)t->gap;
            rw[1] += d * fa[i] + (double)t->gap * fga[i];
        }
    }
    double *rank = w + 2 * g->n_res;
    for (size_t q = 0; q < g->n_res; q++) {
        double *rw = rank + 2 * g->res[q].rank;
        if (w[2 * q] > rw[0])
            rw[0] = w[2 * q];
        if (w[2 * q + 1] > rw[1])
            rw[1] = w[2 * q + 1];
    }
    for (size_t r = 0; r < g->n_ranks; r++)
        scale[r] = rank[2 * r] > 0 ? rank[2 * r + 1] / rank[2 * r] : 1.0;
    free(w);
    return SC_OK;
}

/* The options' waits checked against the graph. */
static int check_waits(const struct model_graph *g, const struct model_coll_waits *w, struct sc_error *err)
{
    for (size_t k = 0; k < w->n; k++) {
        const struct model_coll_wait *cw = &w->v[k];
        if (cw->task >= g->n_tasks || g->tasks[cw->task].cls != MODEL_TASK_COMM || !g->tasks[cw->task].kept ||
            cw->wait < 0 || cw->wait > g->tasks[cw->task].dur || cw->from >= MODEL_WAIT_FROM_COUNT)
            return sc_error_set(err, SC_EINVAL, "a collective's wait for task %u: %s", cw->task,
                                cw->task >= g->n_tasks ? "no such task"
                                : g->tasks[cw->task].cls != MODEL_TASK_COMM || !g->tasks[cw->task].kept
                                    ? "not a collective kept for untraced peers"
                                    : "not within its duration");
    }
    return SC_OK;
}

/* MODEL_REPLAY_MAX_WORK_NS and _ORIGIN_NS: the sum of every duration and
 * gap, in double (it cannot overflow), and the latest origin against the
 * limits. */
static int check_span(const struct model_graph *g, const int64_t *dur, const int64_t *gap, struct sc_error *err)
{
    double sum = 0, origin = 0;
    for (size_t k = 0; k < g->n_res; k++)
        if ((double)g->res[k].origin > origin)
            origin = (double)g->res[k].origin;
    for (size_t i = 0; i < g->n_tasks; i++) {
        if (dur[i] < 0 || gap[i] < 0)
            return sc_error_set(err, SC_EINVAL, "task %zu: a negative duration or gap after its factors", i);
        sum += (double)dur[i] + (double)gap[i];
    }
    if (sum > MODEL_REPLAY_MAX_WORK_NS)
        return sc_error_set(err, SC_ELIMIT, "the step's work sums to %.3g days, over the %.0f days a replay counts",
                            sum / 86400e9, MODEL_REPLAY_MAX_WORK_NS / 86400e9);
    if (origin > MODEL_REPLAY_MAX_ORIGIN_NS)
        return sc_error_set(err, SC_ELIMIT, "a resource starts at %.3g ns, past the %.3g ns a replay counts from",
                            origin, MODEL_REPLAY_MAX_ORIGIN_NS);
    return SC_OK;
}

/* Each task's duration and the host work before it for this replay: the
 * graph's, times the factors that match (a split collective's transfer
 * and wait apart), or its override; kept_wait (NULL, or one per wait of
 * the options) gets each split collective's wait in this replay. */
static int durations(const struct model_graph *g, const struct model_replay_opts *o, int64_t *dur, int64_t *gap,
                     int64_t *kept_wait, struct sc_error *err)
{
    size_t n = g->n_tasks, nw = o ? o->waits.n : 0;
    double *f = NULL, *fg = NULL, *fa = NULL, *fga = NULL, *ws = NULL;
    uint8_t *name_ok = NULL;
    int rc = SC_OK;

    if (g->inspect_only)
        return sc_error_set(err, SC_EINVAL, "a graph built for inspection only cannot be replayed");
    for (size_t i = 0; i < n; i++) {
        dur[i] = g->tasks[i].dur;
        gap[i] = g->tasks[i].gap;
    }
    if (nw && (rc = check_waits(g, &o->waits, err)))
        return rc;
    for (size_t k = 0; k < nw && kept_wait; k++)
        kept_wait[k] = o->waits.v[k].wait;
    if (!o || (!o->n_factors && !o->n_overrides))
        return check_span(g, dur, gap, err);
    f = malloc((n ? n : 1) * sizeof *f);
    fg = malloc((n ? n : 1) * sizeof *fg);
    name_ok = malloc(g->names.n ? g->names.n : 1);
    if (nw) { /* the factors given for every rank, for the waits */
        fa = malloc((n ? n : 1) * sizeof *fa);
        fga = malloc((n ? n : 1) * sizeof *fga);
        ws = malloc((g->n_ranks ? g->n_ranks : 1) * sizeof *ws);
    }
    if (!f || !fg || !name_ok || (nw && (!fa || !fga || !ws))) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        f[i] = fg[i] = 1.0;
        if (fa)
            fa[i] = fga[i] = 1.0;
    }
    for (size_t k = 0; k < o->n_factors; k++) {
        const struct model_replay_factor *fc = &o->factors[k];
        int rank_ix = -1;
        if (fc->rank >= 0) {
            for (size_t r = 0; r < g->n_ranks && rank_ix < 0; r++)
                if (g->ranks[r].id == fc->rank)
                    rank_ix = (int)r;
            for (size_t q = 0; q < g->folding.n_folded && rank_ix < 0; q++)
                if (g->folding.folded[q].id == fc->rank) {
                    rc = sc_error_set(err, SC_EINVAL,
                                      "scale @%d: rank %d was folded into rank %d (replay with --no-fold to "
                                      "scale it alone)", fc->rank, fc->rank, g->ranks[g->folding.folded[q].rep].id);
                    goto out;
                }
            if (rank_ix < 0) {
                rc = sc_error_set(err, SC_EINVAL, "scale @%d: the job has no rank %d", fc->rank, fc->rank);
                goto out;
            }
        }
        if (fc->pattern[0]) /* match each distinct name once */
            for (size_t s = 0; s < g->names.n; s++)
                name_ok[s] = fnmatch(fc->pattern, model_graph_str(g, (uint32_t)s), 0) == 0;
        int every = fa && rank_ix < 0;
        for (uint32_t i = 0; i < n; i++) {
            if (factor_matches(g, fc, i, rank_ix) && (!fc->pattern[0] || name_ok[g->src[i].name])) {
                f[i] *= fc->factor;
                if (every)
                    fa[i] *= fc->factor;
            }
            if (fc->host_gaps && !g->res[g->tasks[i].res].gpu && (rank_ix < 0 || g->tasks[i].rank == rank_ix)) {
                fg[i] *= fc->factor;
                if (every)
                    fga[i] *= fc->factor;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (f[i] != 1.0)
            dur[i] = sc_sat_round((double)dur[i] * f[i]);
        if (fg[i] != 1.0)
            gap[i] = sc_sat_round((double)gap[i] * fg[i]);
    }
    if (nw && (rc = wait_scales(g, fa, fga, ws, err)))
        goto out;
    for (size_t k = 0; k < nw; k++) {
        const struct model_coll_wait *cw = &o->waits.v[k];
        const struct model_task *t = &g->tasks[cw->task];
        double wait = (double)cw->wait * ws[t->rank];
        dur[cw->task] = (int64_t)llround((double)(t->dur - cw->wait) * f[cw->task] + wait);
        if (kept_wait)
            kept_wait[k] = (int64_t)llround(wait);
    }
    for (size_t k = 0; k < o->n_overrides; k++) {
        const struct model_replay_override *ov = &o->overrides[k];
        if (ov->task >= n || ov->dur < 0 || (ov->has_gap && ov->gap < 0) || (ov->has_wait && ov->wait < 0)) {
            rc = sc_error_set(err, SC_EINVAL, "an override of task %u: %s", ov->task,
                              ov->task >= n ? "no such task" : "a negative duration, gap or wait");
            goto out;
        }
        dur[ov->task] = ov->dur;
        if (ov->has_gap)
            gap[ov->task] = ov->gap;
    }
    for (size_t k = 0; k < nw && kept_wait && o->n_overrides; k++) /* an override holds the wait at most */
        if (kept_wait[k] > dur[o->waits.v[k].task])
            kept_wait[k] = dur[o->waits.v[k].task];
    rc = check_span(g, dur, gap, err);
out:
    free(f);
    free(fg);
    free(fa);
    free(fga);
    free(ws);
    free(name_ok);
    return rc;
}

int model_replay_durations(const struct model_graph *g, const struct model_replay_opts *o, int64_t *dur,
                           int64_t *gap, struct sc_error *err)
{
    return durations(g, o, dur, gap, NULL, err);
}

/* The simulation schedules two events per task: its start and its finish.
 * A start waits for the resource's previous finish and for its FS (finish)
 * and SS (start) predecessors; a finish waits for its own start and its FF
 * (finish) and SF (start) predecessors. A call that waits for the kernel it
 * launched (start -> start, then finish -> finish) is thus no cycle.
 * Events are numbered task * 2 + (0 start, 1 finish).
 *
 * Ready events are kept on a stack, the last released first: the
 * simulation then follows a chain of tasks (a rank's dispatches and the
 * kernels they launch) while it is in cache, where a queue swept every
 * rank's wavefront at once. The order changes no time: an event is
 * processed once everything it waits for has been, its time is a function
 * of theirs, and the events processed before nothing is ready (and a cycle
 * must be broken) are all those that can be, whatever the order. */
enum { PENDING, STARTED, FINISHED };

struct sim {
    const struct model_graph *g;
    int64_t *start, *end;
    uint32_t *wait_s, *wait_f; /* events still awaited by each start and finish */
    uint32_t *queue; /* the ready events: a stack (2 x n_tasks) */
    uint8_t *state;
    uint32_t *gwait;
    int64_t *gready, *gdur; /* per group: when its last member was ready, its longest member */
    int64_t *dur;           /* per task, this replay's */
    const int64_t *gap;     /* per task, the host gaps this replay used */
    int keep_unexplained;   /* apply unexplained edges (else they only order) */
    int64_t *wait;          /* per task, a kept wait's latency overridden, or -1; NULL: none is */
    size_t tail, finished;
};

static void release(struct sim *s, uint32_t task, int finish_event)
{
    uint32_t *w = finish_event ? &s->wait_f[task] : &s->wait_s[task];
    assert(task < s->g->n_tasks);
    if (*w && --*w == 0) {
        assert(s->tail < 2 * s->g->n_tasks); /* each task's start and finish queued once */
        s->queue[s->tail++] = task << 1 | (uint32_t)finish_event;
    }
}

/* Tell the successors of task k that it started (fin = 0) or finished. */
static void notify(struct sim *s, uint32_t k, int fin)
{
    const struct model_graph *g = s->g;
    for (uint32_t e = g->succ_at[k]; e < g->succ_at[k + 1]; e++) {
        uint32_t v = g->succs[e] >> 2, type = g->succs[e] & 3;
        int from_finish = type == MODEL_FS || type == MODEL_FF;
        if (from_finish == fin)
            release(s, v, type == MODEL_FF || type == MODEL_SF);
    }
    if (fin) {
        if (g->next[k] != MODEL_NONE)
            release(s, g->next[k], 0);
    } else {
        release(s, k, 1); /* its own finish */
    }
}

/* Task i ends: its start plus its duration, or later as its finish-to-
 * finish and start-to-finish predecessors say. Every one of them has
 * finished or started, unless `forced` past a cycle: then only those that
 * have count. */
static inline void end_task(struct sim *s, uint32_t i, int forced)
{
    const struct model_graph *g = s->g;
    /* a paired task runs from when both its sides were ready (start_task) */
    int64_t end = (g->tasks[i].paired ? s->end[i] : s->start[i]) + s->dur[i];
    for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++) {
        const struct model_edge *ed = &g->edges[e];
        if (ed->type == MODEL_FF && (!forced || s->state[ed->from] == FINISHED))
            end = max64(end, s->end[ed->from] + ed->lat);
        else if (ed->type == MODEL_SF && (!forced || s->state[ed->from] != PENDING))
            end = max64(end, s->start[ed->from] + ed->lat);
    }
    assert(s->state[i] == STARTED && end >= s->start[i]); /* time runs forward */
    s->end[i] = end;
    s->state[i] = FINISHED;
    s->finished++;
}

/* end_task, and its successors told */
static void finish_task(struct sim *s, uint32_t i, int forced)
{
    end_task(s, i, forced);
    notify(s, i, 1);
}

/* All members of a collective end together: the last ready plus its time. */
static void finish_group(struct sim *s, uint32_t gi)
{
    const struct model_graph *g = s->g;
    for (uint32_t m = g->group_at[gi]; m < g->group_at[gi + 1]; m++) {
        uint32_t k = g->group_tasks[m];
        if (s->state[k] == PENDING) { /* only when forced past a cycle */
            s->start[k] = s->gready[gi];
            s->state[k] = STARTED;
            notify(s, k, 0);
        }
        s->end[k] = max64(s->start[k], s->gready[gi] + s->gdur[gi]);
        assert(s->end[k] >= s->start[k] && s->gready[gi] != INT64_MIN);
        s->state[k] = FINISHED;
        s->finished++;
        s->wait_f[k] = 0;
    }
    for (uint32_t m = g->group_at[gi]; m < g->group_at[gi + 1]; m++)
        notify(s, g->group_tasks[m], 1);
}

/* The latency of task i's kept unexplained wait: the graph's, or an
 * override's. */
static int64_t kept_lat(const struct sim *s, uint32_t i, int64_t lat)
{
    return s->wait && s->wait[i] >= 0 ? s->wait[i] : lat;
}

/* Task i starts: its resource free (and the host work before it done) and
 * every start predecessor met, which all have been unless `forced` past a
 * cycle: then only those that finished (finish-to-start) or started count. */
static inline void start_task(struct sim *s, uint32_t i, int forced)
{
    const struct model_graph *g = s->g;
    const struct model_task *t = &g->tasks[i];
    /* [0] its own side's ready time, [1] a paired task's other side's */
    int64_t ready[2] = {(g->prev[i] == MODEL_NONE ? g->res[t->res].origin : s->end[g->prev[i]]) + s->gap[i],
                        INT64_MIN};
    for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++) {
        const struct model_edge *ed = &g->edges[e];
        int64_t lat = ed->lat;
        if (ed->kind == MODEL_EDGE_UNEXPLAINED && (!s->keep_unexplained || (lat = kept_lat(s, i, lat)) < 0))
            continue;
        if (ed->type == MODEL_FS && (!forced || s->state[ed->from] == FINISHED))
            ready[ed->peer] = max64(ready[ed->peer], s->end[ed->from] + lat);
        else if (ed->type == MODEL_SS && (!forced || s->state[ed->from] != PENDING))
            ready[ed->peer] = max64(ready[ed->peer], s->start[ed->from] + lat);
    }
    assert(s->state[i] == PENDING && s->gap[i] >= 0);
    /* a resource runs one task at a time, in order */
    assert(forced || g->prev[i] == MODEL_NONE || (s->state[g->prev[i]] == FINISHED && ready[0] >= s->end[g->prev[i]]));
    s->start[i] = ready[0];
    s->state[i] = STARTED;
    if (t->paired) /* when its transfer runs, until end_task reads it */
        s->end[i] = max64(ready[0], ready[1]);
    if (t->group != MODEL_NONE) {
        /* a collective member: its finish waits for every member's start */
        uint32_t gi = t->group;
        s->gready[gi] = max64(s->gready[gi], ready[0]);
        for (uint32_t e = g->succ_at[i]; e < g->succ_at[i + 1]; e++) {
            uint32_t type = g->succs[e] & 3;
            if (type == MODEL_SS || type == MODEL_SF)
                release(s, g->succs[e] >> 2, type == MODEL_SF);
        }
        if (--s->gwait[gi] == 0)
            finish_group(s, gi);
        return;
    }
    if (s->wait_f[i] == 1) {
        /* nothing but its own start holds its finish any more: it ends
         * now, and its successors learn of both at once */
        s->wait_f[i] = 0;
        end_task(s, i, 0);
        for (uint32_t e = g->succ_at[i]; e < g->succ_at[i + 1]; e++) {
            uint32_t type = g->succs[e] & 3;
            release(s, g->succs[e] >> 2, type == MODEL_FF || type == MODEL_SF);
        }
        if (g->next[i] != MODEL_NONE)
            release(s, g->next[i], 0);
        return;
    }
    notify(s, i, 0);
}

/* Nothing is ready but events remain: a dependency cycle. Complete a
 * collective that members wait in, else force the first pending event
 * whose resource allows it. */
static void break_cycle(struct sim *s)
{
    const struct model_graph *g = s->g;
    for (uint32_t gi = 0; gi < g->n_groups; gi++)
        if (s->gwait[gi] && s->gready[gi] != INT64_MIN) {
            s->gwait[gi] = 0;
            finish_group(s, gi);
            return;
        }
    for (uint32_t i = 0; i < g->n_tasks; i++)
        if (s->state[i] == STARTED && g->tasks[i].group == MODEL_NONE) {
            s->wait_f[i] = 0;
            finish_task(s, i, 1);
            return;
        }
    uint32_t pick = MODEL_NONE;
    for (uint32_t i = 0; i < g->n_tasks && pick == MODEL_NONE; i++) {
        if (s->state[i] != PENDING)
            continue;
        if (g->prev[i] == MODEL_NONE || s->state[g->prev[i]] == FINISHED)
            pick = i;
    }
    for (uint32_t i = 0; i < g->n_tasks && pick == MODEL_NONE; i++)
        if (s->state[i] == PENDING)
            pick = i;
    s->wait_s[pick] = 0;
    start_task(s, pick, 1);
}

/* model_replay_simulate, the host gaps it used left in gap[] (n_tasks)
 * and, when kept_wait is not NULL, the split collectives' waits (one per
 * wait of the options). With dur_out, the durations it ran the tasks with
 * (n_tasks, the caller's to free; NULL when it failed). */
static int simulate(const struct model_graph *g, const struct model_replay_opts *o, int64_t *start,
                    int64_t *end, int64_t *gap, int64_t *kept_wait, size_t *forced, int64_t **dur_out,
                    struct sc_error *err)
{
    size_t n = g->n_tasks, ng = g->n_groups ? g->n_groups : 1;
    struct sim s = {g, start, end};
    int rc = SC_OK;

    *forced = 0;
    /* the scratch arrays in one allocation, large enough for huge pages:
     * 64-bit ones first, then 32-bit ones, then bytes */
    size_t words = 8 * (n + 2 * ng) + 4 * (4 * n + ng) + n;
    int64_t *scratch = sc_huge_alloc(words);
    if (!scratch) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    s.dur = scratch;
    s.gready = s.dur + n;
    s.gdur = s.gready + ng;
    s.wait_s = (uint32_t *)(s.gdur + ng);
    s.wait_f = s.wait_s + n;
    s.queue = s.wait_f + n;
    s.gwait = s.queue + 2 * n;
    s.state = (uint8_t *)(s.gwait + ng);
    memset(s.state, 0, n);
    s.gap = gap;
    s.keep_unexplained = o && o->keep_unexplained;
    for (size_t k = 0; o && k < o->n_overrides && !s.wait; k++)
        if (o->overrides[k].has_wait && !(s.wait = malloc(n * sizeof *s.wait))) {
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
            goto out;
        }
    if (s.wait) {
        memset(s.wait, 0xff, n * sizeof *s.wait); /* -1 */
        for (size_t k = 0; k < o->n_overrides; k++)
            if (o->overrides[k].has_wait && o->overrides[k].task < n)
                s.wait[o->overrides[k].task] = o->overrides[k].wait;
    }
    if ((rc = durations(g, o, s.dur, gap, kept_wait, err)))
        goto out;
    for (size_t i = 0; i < n; i++)
        assert(s.dur[i] >= 0 && gap[i] >= 0);
    /* a start waits for its resource's task before and its start edges
     * (FS, SS); a finish for its start and its finish edges (FF, SF) */
    _Static_assert(MODEL_FS < 2 && MODEL_SS < 2 && MODEL_FF >= 2 && MODEL_SF >= 2, "start edges first");
    for (uint32_t i = 0; i < n; i++) {
        uint32_t starts = g->prev[i] != MODEL_NONE, preds = g->pred_at[i + 1] - g->pred_at[i];
        for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++)
            starts += g->edges[e].type < 2;
        s.wait_s[i] = starts;
        s.wait_f[i] = 1 + preds - (starts - (g->prev[i] != MODEL_NONE));
        if (!starts)
            s.queue[s.tail++] = i << 1;
        assert(s.wait_f[i] >= 1); /* its own start holds every finish */
    }
    for (size_t k = 0; k < g->n_groups; k++) {
        s.gwait[k] = g->group_at[k + 1] - g->group_at[k];
        s.gready[k] = INT64_MIN;
        s.gdur[k] = 0;
        for (uint32_t m = g->group_at[k]; m < g->group_at[k + 1]; m++)
            s.gdur[k] = max64(s.gdur[k], s.dur[g->group_tasks[m]]);
        assert(s.gwait[k] >= 1 && s.gdur[k] >= 0);
    }
    for (uint32_t step = 0; s.finished < n; step++) {
        if (!(step & 0xffff) && sc_cancelled()) {
            rc = sc_error_set(err, SC_ECANCELED, "the replay was called off");
            goto out;
        }
        if (s.tail > 0) {
            uint32_t ev = s.queue[--s.tail], i = ev >> 1;
            if (!(ev & 1)) {
                if (s.state[i] == PENDING)
                    start_task(&s, i, 0);
            } else if (s.state[i] == STARTED && g->tasks[i].group == MODEL_NONE) {
                finish_task(&s, i, 0);
            }
        } else {
            ++*forced;
            break_cycle(&s);
        }
    }
    for (size_t i = 0; !rc && i < n; i++)
        assert(s.state[i] == FINISHED && end[i] >= start[i]);
out:
    if (dur_out && !rc) {
        *dur_out = s.dur; /* the scratch's first n words */
        s.dur = NULL;
    }
    free(s.dur); /* the scratch */
    free(s.wait);
    return rc;
}

int model_replay_simulate(const struct model_graph *g, const struct model_replay_opts *o,
                          int64_t *start, int64_t *end, size_t *forced, struct sc_error *err)
{
    int64_t *gap = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *gap);
    if (!gap)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    int rc = simulate(g, o, start, end, gap, NULL, forced, NULL, err);
    free(gap);
    return rc;
}

/* ---- per-step results --------------------------------------------------------------- */

static int64_t covered(const struct sc_spans *s, int64_t a, int64_t b)
{
    int64_t sum = 0;
    for (size_t i = sc_span_seek(s->v, s->n, a); i < s->n && s->v[i].a < b; i++) {
        int64_t lo = s->v[i].a > a ? s->v[i].a : a, hi = s->v[i].b < b ? s->v[i].b : b;
        if (hi > lo)
            sum += hi - lo;
    }
    assert(sum <= (b > a ? b - a : 0)); /* merged spans: disjoint */
    return sum;
}

/* The breakdown of [a, b) from the merged spans of compute, communication,
 * kept unexplained waits and host work (sp[BD_*]): a sweep over the
 * boundaries in the window. */
enum { BD_COMPUTE, BD_COMM, BD_UNEXPLAINED, BD_HOST, BD_KINDS };

static struct model_breakdown breakdown(const struct sc_spans *const sp[BD_KINDS], int64_t a, int64_t b)
{
    struct model_breakdown out = {0};
    size_t ix[BD_KINDS];
    int in[BD_KINDS];
    int64_t t = a;
    for (int k = 0; k < BD_KINDS; k++)
        ix[k] = sc_span_seek(sp[k]->v, sp[k]->n, a);
    while (t < b) {
        int64_t next = b;
        for (int k = 0; k < BD_KINDS; k++) {
            const struct sc_spans *s = sp[k];
            in[k] = ix[k] < s->n && s->v[ix[k]].a <= t;
            if (ix[k] < s->n) {
                int64_t edge = in[k] ? s->v[ix[k]].b : s->v[ix[k]].a;
                next = edge < next ? edge : next;
            }
        }
        int64_t d = next - t;
        assert(d > 0); /* the sweep moves forward */
        if (in[BD_COMPUTE] && in[BD_COMM])
            out.overlap += d;
        else if (in[BD_COMPUTE])
            out.compute_exposed += d;
        else if (in[BD_COMM])
            out.comm_exposed += d;
        else if (in[BD_UNEXPLAINED])
            out.unexplained += d;
        else if (in[BD_HOST])
            out.host += d;
        else
            out.idle += d;
        t = next;
        for (int k = 0; k < BD_KINDS; k++)
            if (in[k] && sp[k]->v[ix[k]].b <= t)
                ix[k]++;
    }
    /* the window's time, each moment counted once */
    assert(a >= b || out.overlap + out.compute_exposed + out.comm_exposed + out.unexplained + out.host + out.idle ==
                         b - a);
    return out;
}


/* When task i's resource became free for it. */
static int64_t res_free(const struct model_graph *g, const int64_t *end, uint32_t i)
{
    return g->prev[i] == MODEL_NONE ? g->res[g->tasks[i].res].origin : end[g->prev[i]];
}

static uint8_t task_bound(const struct model_graph *g, uint32_t i)
{
    const struct model_task *t = &g->tasks[i];
    switch (t->cls) {
    case MODEL_TASK_KERNEL:
    case MODEL_TASK_COPY:
    case MODEL_TASK_SET:
        return MODEL_BOUND_GPU_COMPUTE;
    case MODEL_TASK_COMM:
        return MODEL_BOUND_COMMUNICATION;
    case MODEL_TASK_CALL:
        return t->sub == MODEL_CALL_LAUNCH                                  ? MODEL_BOUND_LAUNCH
               : t->sub == MODEL_CALL_SYNC || t->sub == MODEL_CALL_MEMCPY ? MODEL_BOUND_SYNC
                                                                           : MODEL_BOUND_HOST;
    default:
        return MODEL_BOUND_HOST;
    }
}

static uint8_t edge_bound(uint8_t kind)
{
    return kind == MODEL_EDGE_LAUNCH ? MODEL_BOUND_LAUNCH
           : kind == MODEL_EDGE_INTER_THREAD ? MODEL_BOUND_HOST
           : kind == MODEL_EDGE_UNEXPLAINED  ? MODEL_BOUND_UNEXPLAINED
                                             : MODEL_BOUND_SYNC;
}

struct path {
    struct model_replay_segment *v;
    size_t n, cap;
};

/* A segment [a, b) of task's, held back by edge e (NULL: its own work or
 * host work). */
static int seg_by(struct path *p, uint32_t task, int64_t a, int64_t b, uint8_t bound, const struct model_edge *e)
{
    if (b <= a)
        return 0;
    if (sc_vec_reserve((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v))
        return -1;
    p->v[p->n++] = (struct model_replay_segment){task, a, b, bound, e ? e->kind : MODEL_EDGE_KIND_COUNT,
                                                 e ? e->from : MODEL_NONE};
    return 0;
}

static int seg(struct path *p, uint32_t task, int64_t a, int64_t b, uint8_t bound)
{
    return seg_by(p, task, a, b, bound, NULL);
}

/* When edge e's constraint falls: its source's end (FS, FF) or start, plus
 * its latency. */
static int64_t edge_time(const int64_t *start, const int64_t *end, const struct model_edge *e)
{
    return (e->type == MODEL_FF || e->type == MODEL_FS ? end[e->from] : start[e->from]) + e->lat;
}

/* The edge into task i that sets its finish (FF, SF) or its start (FS, SS)
 * latest, later than `after`; NULL when none does. Unexplained edges count
 * only when the replay kept them. Of a paired task, the edges of its own
 * side (peer 0) or of its other side (peer 1). */
static const struct model_edge *latest_edge(const struct model_graph *g, const int64_t *start,
                                            const int64_t *end, uint32_t i, int finish,
                                            int64_t after, int keep_unexplained, int peer)
{
    const struct model_edge *by = NULL;
    for (uint32_t e = g->pred_at[i]; e < g->pred_at[i + 1]; e++) {
        const struct model_edge *ed = &g->edges[e];
        if ((ed->kind == MODEL_EDGE_UNEXPLAINED && !keep_unexplained) || ed->peer != peer)
            continue;
        int sets_finish = ed->type == MODEL_FF || ed->type == MODEL_SF;
        if (sets_finish != finish)
            continue;
        int64_t v = edge_time(start, end, ed);
        if (v > after) {
            by = ed;
            after = v;
        }
    }
    return by;
}

/* Where the walk back from cur goes next, at t: never before floor, and
 * never forward (an edge of negative latency, the host resuming before
 * the kernel it waited on had ended, leaves its source running at cur). */
static int64_t walk_to(int64_t t, int64_t floor, int64_t cur)
{
    assert(floor <= cur);
    return t < floor ? floor : t > cur ? cur : t;
}

/* Walk back from the end of task `last` to time `floor`, following at each
 * task what set its end, then what set its start. Segments come out
 * backwards and tile [floor, end[last]]. */
static int critical_path(const struct model_graph *g, const int64_t *start, const int64_t *end,
                         const int64_t *gap, int keep_unexplained, uint32_t last, int64_t floor,
                         struct path *p)
{
    uint32_t i = last;
    int at_end = 1;
    int64_t cur = end[last];
    size_t first = p->n;
    /* an edge of negative latency walked back through: its source's run up
     * to cur is what the target waited on, and its segment says so */
    const struct model_edge *through = NULL;
    for (size_t guard = 0; cur > floor && guard <= 4 * g->n_tasks + 16; guard++) {
        const struct model_task *t = &g->tasks[i];
        const struct model_edge *by;
        assert(i < g->n_tasks && cur >= floor);
        if (at_end) {
            /* what set the end: (a collective) the last member to be ready,
             * a finish-to-finish wait, or its own duration */
            if (t->group != MODEL_NONE) {
                uint32_t gi = t->group, last_ready = i;
                for (uint32_t m = g->group_at[gi]; m < g->group_at[gi + 1]; m++)
                    if (start[g->group_tasks[m]] > start[last_ready])
                        last_ready = g->group_tasks[m];
                int64_t from = walk_to(start[last_ready], floor, cur);
                if (seg(p, i, from, cur, MODEL_BOUND_COMMUNICATION))
                    return -1;
                cur = from;
                i = last_ready;
                at_end = 0;
                continue;
            }
            if (t->paired) {
                /* a transfer runs once both its sides are ready: from
                 * its other side's, when that came later */
                by = latest_edge(g, start, end, i, 0, start[i], 0, 1);
                int64_t run = by ? edge_time(start, end, by) : start[i];
                int64_t from = walk_to(run, floor, cur);
                if (seg(p, i, from, cur, MODEL_BOUND_COMMUNICATION))
                    return -1;
                cur = from;
                if (!by) {
                    at_end = 0;
                    continue;
                }
            } else {
                by = latest_edge(g, start, end, i, 1, end[i] - 1, keep_unexplained, 0);
            }
            if (!by) {
                int64_t from = walk_to(start[i], floor, cur);
                if (seg_by(p, i, from, cur, task_bound(g, i), through))
                    return -1;
                cur = from;
                at_end = 0;
                through = NULL;
                continue;
            }
        } else {
            /* what set the start: an edge, or the resource (and the host
             * work before it) */
            int64_t free_at = res_free(g, end, i);
            by = latest_edge(g, start, end, i, 0, free_at + gap[i], keep_unexplained, 0);
            if (!by) {
                /* host work on the resource, then its previous task */
                int64_t from = walk_to(free_at, floor, cur);
                if (seg(p, i, from, cur, MODEL_BOUND_HOST))
                    return -1;
                cur = from;
                if (g->prev[i] == MODEL_NONE)
                    break;
                i = g->prev[i];
                at_end = 1;
                continue;
            }
        }
        at_end = by->type == MODEL_FF || by->type == MODEL_FS;
        int64_t src = at_end ? end[by->from] : start[by->from], from = walk_to(src, floor, cur);
        if (seg_by(p, i, from, cur, edge_bound(by->kind), by))
            return -1;
        through = src > cur ? by : NULL;
        cur = from;
        i = by->from;
    }
    if (cur > floor && seg(p, i, floor, cur, MODEL_BOUND_HOST)) /* reached an origin */
        return -1;
    assert(p->n == first || p->v[p->n - 1].start == floor); /* the walk reached the step's start */
    return 0;
}

/* Segments in time order: critical_path() writes them backwards, each
 * ending where the one before it starts, so reversing them sorts them. */
static void reverse_segments(struct model_replay_segment *v, size_t n)
{
    for (size_t i = 0; i < n / 2; i++) {
        struct model_replay_segment t = v[i];
        v[i] = v[n - 1 - i];
        v[n - 1 - i] = t;
    }
    for (size_t i = 1; i < n; i++)
        assert(v[i].start == v[i - 1].end); /* they tile the step, in time order */
}

/* What the graph's unexplained waits cost each measured step of r: how
 * much its time changes when they are kept, |replayed with them - without|,
 * both from the graph's durations (kept, they give back the measured
 * timeline). A wait off the step's critical path, say a GPU idle while the
 * step was bound by its host, costs it nothing; a wait that holds work past
 * a step's end may make the next step shorter, hence the magnitude. */
static int steps_unexplained(const struct model_graph *g, struct model_replay *r, struct sc_error *err)
{
    size_t n = g->n_tasks, forced;
    if (!g->stats.edges_by_kind[MODEL_EDGE_UNEXPLAINED])
        return SC_OK; /* nothing to keep: every step's cost is 0 */
    int64_t *t = malloc((n ? n : 1) * 4 * sizeof *t);
    struct model_replay_opts ro;
    int rc;
    if (!t)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    model_replay_opts_default(&ro);
    ro.critical_path = 0;
    rc = model_replay_simulate(g, &ro, t, t + n, &forced, err);
    ro.keep_unexplained = 1;
    if (rc == SC_OK)
        rc = model_replay_simulate(g, &ro, t + 2 * n, t + 3 * n, &forced, err);
    for (size_t k = 0; k < g->n_steps && rc == SC_OK; k++) {
        const struct model_graph_step *gs = &g->steps[k];
        if (gs->end == MODEL_NONE || gs->measured_ns < 0)
            continue;
        int64_t without = t[n + gs->end] - t[gs->begin], with = t[3 * n + gs->end] - t[2 * n + gs->begin];
        r->steps[k].unexplained_ns = with > without ? with - without : without - with;
    }
    free(t);
    return rc;
}

int64_t model_replay_folded_ns(const struct model_replay *r, size_t s, size_t k, const struct model_folded_rank *f)
{
    return r->steps[s].replayed_ns - (k == 0 ? f->origin_ns : 0);
}

/* The ranks folded into others (graph.h, MODEL_FOLD_OVER) scored as
 * their representative's steps are: each measured step of theirs against
 * the representative's replayed one, into *sum, r's maximum and count. */
static int score_folded(const struct model_graph *g, struct model_replay *r, double *sum, struct sc_error *err)
{
    const struct model_graph_folding *f = &g->folding;
    size_t *ord = calloc(g->n_ranks ? g->n_ranks : 1, sizeof *ord); /* each rank's steps so far */
    if (!ord)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t s = 0; s < g->n_steps; s++) {
        const struct model_replay_step *rs = &r->steps[s];
        size_t k = ord[rs->rank]++, first, n = model_graph_folded_into(g, rs->rank, &first);
        if (rs->partial)
            continue;
        for (size_t q = first; q < first + n; q++) {
            int64_t m = f->measured[f->folded[q].measured + k];
            if (m <= 0)
                continue;
            double a = fabs((double)(model_replay_folded_ns(r, s, k, &f->folded[q]) - m) / (double)m * 100.0);
            *sum += a;
            if (a > r->max_abs_error_pct)
                r->max_abs_error_pct = a;
            r->n_scored++;
        }
    }
    free(ord);
    return SC_OK;
}

int model_replay_run(const struct model_graph *g, const struct model_replay_opts *o,
                     struct model_replay **out, struct sc_error *err)
{
    struct model_replay_opts dflt;
    struct model_replay *r = calloc(1, sizeof *r);
    size_t ranks = g->n_ranks, n = g->n_tasks;
    /* per rank: compute, communication, kept waits and host work (BD_*),
     * then collectives kept for untraced peers */
    enum { KEPT_COLL = BD_KINDS, N_SPANS };
    struct sc_spans (*sp)[N_SPANS] = NULL;
    struct path path = {0};
    struct sc_spans tmp = {0}; /* sc_spans_union's */
    int64_t *kept_wait = NULL, *task_wait = NULL, *dur = NULL;
    int rc = SC_OK;

    *out = NULL;
    if (!o) {
        model_replay_opts_default(&dflt);
        o = &dflt;
    }
    if (!r)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    r->g = g;
    r->start = sc_huge_alloc(2 * n * sizeof *r->start); /* and end: one allocation */
    r->end = r->start ? r->start + n : NULL;
    r->gap = malloc((n ? n : 1) * sizeof *r->gap);
    r->steps = calloc(g->n_steps ? g->n_steps : 1, sizeof *r->steps);
    sp = calloc(ranks ? ranks : 1, sizeof *sp);
    if (!r->start || !r->end || !r->gap || !r->steps || !sp) {
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    if (o->waits.n) {
        /* per task: its wait in this replay when it is split, else -1 */
        kept_wait = malloc(o->waits.n * sizeof *kept_wait);
        task_wait = malloc((n ? n : 1) * sizeof *task_wait);
        if (!kept_wait || !task_wait) {
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
            goto out;
        }
    }
    if ((rc = simulate(g, o, r->start, r->end, r->gap, kept_wait, &r->forced, &dur, err)))
        goto out;
    if (task_wait) {
        memset(task_wait, 0xff, n * sizeof *task_wait); /* -1 */
        for (size_t k = 0; k < o->waits.n; k++) {
            task_wait[o->waits.v[k].task] = kept_wait[k];
            r->split_from[o->waits.v[k].from]++;
        }
    }

    for (size_t s = 0; s < g->n_steps; s++) {
        const struct model_graph_step *gs = &g->steps[s];
        struct model_replay_step *rs = &r->steps[r->n_steps++];
        rs->rank = gs->rank;
        rs->step = gs->step;
        rs->partial = gs->partial;
        rs->measured_ns = gs->measured_ns;
        rs->start = r->start[gs->begin];
        rs->end = gs->end == MODEL_NONE ? rs->start : r->end[gs->end];
        rs->replayed_ns = rs->end - rs->start;
    }
    if (o->step_unexplained && (rc = steps_unexplained(g, r, err)))
        goto out;
    /* the steps that get breakdowns, and the ranks whose spans they need */
    const struct model_replay_step *only = o->slowest_breakdown ? model_replay_slowest(r) : NULL;
    int rank_only = only ? (int)only->rank : -1;

    /* what each rank's resources were doing, for the breakdowns: resource
     * by resource, each in its order, so that a rank's spans of one kind
     * come as one sorted run per resource (what the union sorts fastest) */
    for (size_t q = 0; q < g->n_res; q++) {
        if (rank_only >= 0 && g->res[q].rank != rank_only)
            continue;
        struct sc_spans *rs = sp[g->res[q].rank];
        /* a resource's tasks come in the order of their numbers
         * (graph.h), as the communication parts do */
        size_t part = g->n_parts ? model_graph_part_seek(g, g->res[q].first) : 0;
        for (uint32_t i = g->res[q].first; i != MODEL_NONE; i = g->next[i]) {
            const struct model_task *t = &g->tasks[i];
            int bad = 0;
            while (part < g->n_parts && g->parts[part].task < i)
                part++;
            switch (t->cls) {
            case MODEL_TASK_KERNEL:
            case MODEL_TASK_COPY:
            case MODEL_TASK_SET: {
                /* busy for its duration from its start; a run held open
                 * longer (a merged task waiting for its launches) is not
                 * compute meanwhile; a merged task's communication is the
                 * run's last part */
                int64_t comm = part < g->n_parts && g->parts[part].task == i ? g->parts[part].comm_ns : 0;
                int64_t split = max64(r->start[i], r->end[i] - comm);
                int64_t busy = r->start[i] + max64(dur[i] - comm, 0);
                bad = sc_spans_add(&rs[BD_COMPUTE], r->start[i], busy < split ? busy : split) ||
                      sc_spans_add(&rs[BD_COMM], split, r->end[i]);
                break;
            }
            case MODEL_TASK_COMM:
                bad = sc_spans_add(&rs[BD_COMM], r->start[i], r->end[i]);
                if (t->kept) /* its wait comes first */
                    bad |= sc_spans_add(&rs[KEPT_COLL], r->start[i],
                                     task_wait && task_wait[i] >= 0 ? r->start[i] + task_wait[i] : r->end[i]);
                break;
            default: {
                int64_t free_at = res_free(g, r->end, i);
                bad = sc_spans_add(&rs[BD_HOST], free_at, free_at + r->gap[i]) ||
                      sc_spans_add(&rs[BD_HOST], r->start[i], r->end[i]);
            }
            }
            if (o->keep_unexplained && model_task_on_gpu(t->cls)) {
                int64_t w = model_graph_unexplained_wait(g, i);
                bad |= w > 0 && sc_spans_add(&rs[BD_UNEXPLAINED], r->start[i] - w, r->start[i]);
            }
            if (bad) {
                rc = sc_error_set(err, SC_ENOMEM, "out of memory");
                goto out;
            }
        }
    }
    /* the other side of each paired transfer: communication on that
     * side's stream from when that side was ready (as a group member's) */
    for (size_t k = 0; k < g->n_peers; k++) {
        uint32_t i = g->peers[k].task;
        uint16_t rank = g->res[g->peers[k].res].rank;
        if (rank_only >= 0 && rank != rank_only)
            continue;
        const struct model_edge *by = latest_edge(g, r->start, r->end, i, 0, INT64_MIN, 0, 1);
        int64_t ready = by ? edge_time(r->start, r->end, by) : r->start[i];
        if (sc_spans_add(&sp[rank][BD_COMM], ready, r->end[i])) {
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
            goto out;
        }
    }
    for (size_t i = 0; i < ranks; i++)
        for (int kind = 0; kind < N_SPANS; kind++)
            if (sc_spans_union(&sp[i][kind], &tmp)) {
                rc = sc_error_set(err, SC_ENOMEM, "out of memory");
                goto out;
            }
    double sum = 0;
    for (size_t s = 0; s < g->n_steps; s++) {
        const struct model_graph_step *gs = &g->steps[s];
        struct model_replay_step *rs = &r->steps[s];
        rs->error_pct = gs->measured_ns > 0
                            ? (double)(rs->replayed_ns - gs->measured_ns) / (double)gs->measured_ns * 100.0
                            : 0.0;
        if (!only || rs == only) {
            const struct sc_spans *const bd[BD_KINDS] = {&sp[gs->rank][BD_COMPUTE], &sp[gs->rank][BD_COMM],
                                                      &sp[gs->rank][BD_UNEXPLAINED], &sp[gs->rank][BD_HOST]};
            rs->breakdown = breakdown(bd, rs->start, rs->end);
            rs->collective_kept_ns = covered(&sp[gs->rank][KEPT_COLL], rs->start, rs->end);
        }
        if (!rs->partial && gs->measured_ns > 0) {
            double a = fabs(rs->error_pct);
            sum += a;
            if (a > r->max_abs_error_pct)
                r->max_abs_error_pct = a;
            r->n_scored++;
        }
        if (o->critical_path && gs->end != MODEL_NONE) {
            size_t first = path.n;
            if (critical_path(g, r->start, r->end, r->gap, o->keep_unexplained, gs->end, rs->start, &path)) {
                rc = sc_error_set(err, SC_ENOMEM, "out of memory");
                goto out;
            }
            reverse_segments(path.v + first, path.n - first);
            rs->path_first = first;
            rs->path_n = path.n - first;
        }
    }
    if (g->folding.n_folded && (rc = score_folded(g, r, &sum, err)))
        goto out;
    r->mean_abs_error_pct = r->n_scored ? sum / (double)r->n_scored : 0.0;
    r->segments = path.v;
    r->n_segments = path.n;
    path.v = NULL;
    *out = r;
    r = NULL;
out:
    for (size_t i = 0; sp && i < ranks; i++)
        for (int kind = 0; kind < N_SPANS; kind++)
            free(sp[i][kind].v);
    free(sp);
    free(tmp.v);
    free(path.v);
    free(kept_wait);
    free(task_wait);
    free(dur);
    model_replay_free(r);
    return rc;
}

const struct model_replay_step *model_replay_slowest(const struct model_replay *r)
{
    const struct model_replay_step *slow = NULL;
    for (size_t k = 0; k < r->n_steps; k++)
        if (!slow || r->steps[k].replayed_ns > slow->replayed_ns)
            slow = &r->steps[k];
    return slow;
}

int model_replay_mean_step(const struct model_graph *g, const struct model_replay_opts *o, const uint8_t *use,
                           int64_t *mean, int64_t *idle, int64_t *each, struct sc_error *err)
{
    struct model_replay *r;
    int rc = model_replay_run(g, o, &r, err);
    if (rc)
        return rc;
    int64_t sum = 0, idle_sum = 0, n = 0;
    for (size_t s = 0; s < r->n_steps; s++) {
        if (each)
            each[s] = r->steps[s].replayed_ns;
        if (!use[s])
            continue;
        const struct model_breakdown *b = &r->steps[s].breakdown;
        sum += r->steps[s].replayed_ns;
        idle_sum += r->steps[s].replayed_ns - b->compute_exposed - b->overlap - b->comm_exposed;
        n++;
    }
    model_replay_free(r);
    *mean = n ? sum / n : 0;
    if (idle)
        *idle = n ? idle_sum / n : 0;
    return SC_OK;
}

void model_replay_free(struct model_replay *r)
{
    if (!r)
        return;
    free(r->start); /* and end */
    free(r->gap);
    free(r->steps);
    free(r->segments);
    free(r);
}
