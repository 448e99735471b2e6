/* model/graph_join.c: the ranks' parts joined into one graph: the same
 * collective grouped across ranks, the ranks' clocks aligned on
 * collective completions, and each part handed to the public builder
 * (graph_builder.h) and freed before the next.
 *
 * Apart from the per-rank parts because it is the only step that sees
 * more than one rank at a time. */
#include "model/graph_build_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/hugepage.h"
#include "common/vec.h"
#include "common/banned.h"

/* The join gives the memory of the parts it has freed back to the system
 * after about this many tasks (~60 MB of parts), so the parts and the graph
 * being built are not both held whole. What it freed since is left for the
 * layout and what follows the build to take (given back and faulted in
 * again, it cost inspect a tenth of its page faults); a daemon gives it
 * back once its build is done. */
#define TRIM_TASKS 1000000

/* ---- joining the ranks ------------------------------------------------------------------ */

/* A communication kernel and the key that finds it on the other ranks:
 * its process group and sequence number where the trace has them, else
 * its position among the communication kernels of its stream. */
struct comm_ref {
    const char *pg;   /* process group name, or NULL: keyed by stream */
    int64_t seq;      /* sequence number in the process group */
    int64_t stream;   /* stream id */
    uint32_t ordinal; /* position among the comm kernels of that stream */
    uint16_t rank;
    const struct comm_meta *m;
    int32_t size;     /* its group's size as the trace gives it, or -1 */
};

static int same_key(const struct comm_ref *x, const struct comm_ref *y)
{
    if ((x->pg == NULL) != (y->pg == NULL))
        return 0;
    if (x->pg)
        return x->seq == y->seq && strcmp(x->pg, y->pg) == 0;
    return x->stream == y->stream && x->ordinal == y->ordinal;
}

static int by_comm_key(const void *a, const void *b)
{
    const struct comm_ref *x = a, *y = b;
    if ((x->pg == NULL) != (y->pg == NULL))
        return x->pg ? -1 : 1;
    if (x->pg) {
        int c = strcmp(x->pg, y->pg);
        if (c)
            return c;
        if (x->seq != y->seq)
            return x->seq < y->seq ? -1 : 1;
    } else {
        if (x->stream != y->stream)
            return x->stream < y->stream ? -1 : 1;
        if (x->ordinal != y->ordinal)
            return x->ordinal < y->ordinal ? -1 : 1;
    }
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Whether two refs are of one process group (or, keyed by stream, one
 * stream id). */
static int same_set(const struct comm_ref *x, const struct comm_ref *y)
{
    if ((x->pg == NULL) != (y->pg == NULL))
        return 0;
    return x->pg ? strcmp(x->pg, y->pg) == 0 : x->stream == y->stream;
}

/* What a group of one collective carries, from its first member: its
 * kind, its size in bytes (nccl-tests convention, graph.h), dtype, process
 * group, sequence number and group size (the trace's, else the members'
 * count: a world size assumed for want of one is not recorded). */
static struct model_group_spec group_spec(const struct model_trace *t, const struct comm_meta *m, size_t members)
{
    struct model_group_spec s = {.op = m->op, .bytes = m->bytes, .seq = m->seq, .size = (uint32_t)members};
    s.dtype = m->dtype == MODEL_NONE ? NULL : model_str(t, m->dtype);
    s.pg = m->pg == MODEL_NONE ? NULL : model_str(t, m->pg);
    if (m->group_size > 0 && (size_t)m->group_size >= members)
        s.size = (uint32_t)m->group_size;
    return s;
}

/* The job's world size when some of its ranks were not traced: the
 * largest distributedInfo.world_size of the traces, when it exceeds the
 * ranks given; else 0 (every rank traced, or the traces do not say). */
static size_t untraced_world(const struct join *j)
{
    int64_t world = 0;
    for (size_t rk = 0; rk < j->n; rk++)
        if (j->traces[rk]->world_size > world)
            world = j->traces[rk]->world_size;
    return world > 0 && (uint64_t)world > j->total ? (size_t)world : 0;
}

/* How many ranks part rk stands for: itself and those folded into it. */
static size_t stands(const struct join *j, size_t rk)
{
    return 1 + j->parts[rk]->n_folded;
}

/* Group one collective's kernels across ranks: by process group and
 * sequence number where the trace has them, else the k-th communication
 * kernel of each communication stream across the ranks that have that
 * stream. Its group is as large as the trace says (the kernel's group
 * size, else its process group's in distributedInfo); where the trace
 * does not say, the world when some ranks of the job were not traced,
 * else every rank having the process group (or stream). A group whose
 * members were all traced, one kernel each, all of the same operation, is
 * matched: clocks are aligned on their ends and members get their
 * intrinsic time (the shortest member: the last to arrive waited for
 * nobody). Any other collective is kept on each rank, a group of its own
 * kernel, as a single traced rank's is (its untraced peers are taken to
 * run like it). A part that stands for ranks folded into it (graph.h,
 * MODEL_FOLD_OVER) counts as all of them, and its intrinsic time is the
 * shortest of all of theirs. */
static int collectives(struct join *j)
{
    size_t nranks = j->n;
    struct comm_ref *refs = NULL;
    size_t n = 0;
    int rc = SC_OK;
    int64_t **diffs = NULL;
    size_t *ndiff = NULL, *capdiff = NULL;
    uint32_t *seen = NULL, stamp = 0;
    size_t want = 0, world = untraced_world(j);

    for (size_t rk = 0; rk < nranks; rk++)
        n += j->parts[rk]->n_comm;
    if (!(refs = malloc((n ? n : 1) * sizeof *refs)))
        goto oom;
    n = 0;
    for (size_t rk = 0; rk < nranks; rk++) {
        const struct builder *p = j->parts[rk];
        const struct model_trace *t = j->traces[rk];
        uint32_t ord = 0;
        for (size_t i = 0; i < p->n_comm; i++) {
            const struct comm_meta *m = &p->comm[i];
            if (i && p->tasks[m->task].res != p->tasks[p->comm[i - 1].task].res)
                ord = 0; /* the next stream */
            struct comm_ref ref = {NULL, -1, m->stream, ord++, (uint16_t)rk, m, m->group_size};
            if (m->pg != MODEL_NONE && m->key_seq >= 0) {
                ref.pg = model_str(t, m->pg);
                ref.seq = m->key_seq;
            }
            refs[n++] = ref;
        }
    }
    sc_sort(refs, n, sizeof *refs, by_comm_key);
    diffs = calloc(nranks, sizeof *diffs);
    ndiff = calloc(nranks, sizeof *ndiff);
    capdiff = calloc(nranks, sizeof *capdiff);
    seen = calloc(nranks, sizeof *seen);
    if (!diffs || !ndiff || !capdiff || !seen)
        goto oom;
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && same_key(&refs[e], &refs[i]))
            e++;
        /* how many members a complete group has: the ranks having this
         * stream (or process group) at all */
        if (i == 0 || !same_set(&refs[i], &refs[i - 1])) {
            want = 0;
            stamp++;
            for (size_t q = i; q < n && same_set(&refs[q], &refs[i]); q++)
                if (seen[refs[q].rank] != stamp) {
                    seen[refs[q].rank] = stamp;
                    want += stands(j, refs[q].rank);
                }
        }
        size_t need = refs[i].size > 0 ? (size_t)refs[i].size : world ? world : want, members = 0;
        for (size_t q = i; q < e; q++)
            members += stands(j, refs[q].rank);
        int same = members == need && need > 1;
        for (size_t q = i + 1; q < e && same; q++) /* one kernel per rank, one operation */
            same = refs[q].rank != refs[q - 1].rank && refs[q].m->op == refs[i].m->op;
        if (!same) {
            /* kept: each a group of its own, holding what the trace says
             * of the collective (its size, the ranks taking part) */
            if (sc_vec_reserve((void **)&j->groups, &j->cap_groups, j->n_groups + (e - i), sizeof *j->groups) ||
                sc_vec_reserve((void **)&j->group_tasks, &j->cap_group_tasks, j->n_group_tasks + (e - i),
                               sizeof *j->group_tasks))
                goto oom;
            for (size_t q = i; q < e; q++) {
                size_t rk = refs[q].rank;
                assert(rk < nranks && refs[q].m->task < j->parts[rk]->n_tasks);
                j->parts[rk]->tasks[refs[q].m->task].kept = 1;
                j->groups[j->n_groups++] =
                    (struct bgroup){(uint32_t)j->n_group_tasks, 1, group_spec(j->traces[rk], refs[q].m, 1)};
                j->group_tasks[j->n_group_tasks++] = j->base[rk] + refs[q].m->task;
            }
            j->stats.collectives_kept += e - i;
            i = e;
            continue;
        }
        int64_t intrinsic = INT64_MAX, ref_end = INT64_MIN;
        for (size_t q = i; q < e; q++) {
            const struct builder *p = j->parts[refs[q].rank];
            intrinsic = min64(intrinsic, p->comm_min ? p->comm_min[refs[q].m - p->comm] : p->tasks[refs[q].m->task].dur);
            if (refs[q].rank == refs[i].rank)
                ref_end = refs[q].m->end;
        }
        assert(ref_end != INT64_MIN && intrinsic >= 0 && intrinsic != INT64_MAX);
        if (sc_vec_reserve((void **)&j->groups, &j->cap_groups, j->n_groups + 1, sizeof *j->groups) ||
            sc_vec_reserve((void **)&j->group_tasks, &j->cap_group_tasks, j->n_group_tasks + (e - i),
                           sizeof *j->group_tasks))
            goto oom;
        j->groups[j->n_groups++] = (struct bgroup){(uint32_t)j->n_group_tasks, (uint32_t)(e - i),
                                                   group_spec(j->traces[refs[i].rank], refs[i].m, members)};
        for (size_t q = i; q < e; q++) {
            size_t rk = refs[q].rank;
            assert(rk < nranks && refs[q].m->task < j->parts[rk]->n_tasks);
            j->parts[rk]->tasks[refs[q].m->task].dur = intrinsic;
            j->group_tasks[j->n_group_tasks++] = j->base[rk] + refs[q].m->task;
            if (refs[i].rank == 0) {
                if (sc_vec_reserve((void **)&diffs[rk], &capdiff[rk], ndiff[rk] + 1, sizeof **diffs))
                    goto oom;
                diffs[rk][ndiff[rk]++] = refs[q].m->end - ref_end;
            }
        }
        j->stats.collectives_matched++;
        i = e;
    }
    for (size_t rk = 0; rk < nranks; rk++) {
        if (ndiff[rk]) {
            j->clock_offset[rk] = sc_select_i64(diffs[rk], ndiff[rk], ndiff[rk] / 2);
        }
    }
out:
    for (size_t rk = 0; diffs && rk < nranks; rk++)
        free(diffs[rk]);
    free(diffs);
    free(ndiff);
    free(capdiff);
    free(seen);
    free(refs);
    return rc;
oom:
    rc = sc_error_set(j->err, SC_ENOMEM, "out of memory");
    goto out;
}

/* One rank's resources, tasks (laid out by measured start on rank 0's
 * clock), edges and steps, through the public builder. Task and resource
 * ids follow on from the ranks before. */
static int emit_rank(struct join *j, size_t rk, struct model_gb *gb)
{
    const struct builder *p = j->parts[rk];
    const struct model_trace *t = j->traces[rk];
    uint32_t res0 = 0, id, base = j->base[rk];
    int64_t off = j->clock_offset[rk];
    int rc = SC_OK;

    for (size_t i = 0; i < p->n_res && rc == SC_OK; i++) {
        const struct model_resource *r = &p->res[i];
        assert(r->track < t->n_tracks);
        const struct model_track *tk = &t->tracks[r->track];
        struct model_res_spec rs = {.rank = (uint16_t)rk, .gpu = r->gpu, .comm = r->comm,
                                    .label = tk->label == MODEL_NONE ? NULL : model_str(t, tk->label),
                                    .pid = tk->pid, .tid = tk->tid, .track = r->track, .has_track = 1,
                                    .origin = p->r.origin - off};
        rc = model_gb_add_resource(gb, &rs, &id);
        if (i == 0)
            res0 = id;
    }
    /* tasks in index order: each resource's are contiguous and in its
     * order, so the builder gives every task its index here as its id */
    for (size_t i = 0; i < p->n_tasks && rc == SC_OK; i++) {
        const struct btask *k = &p->tasks[i];
        struct model_task_spec ts = {.res = res0 + k->res, .cls = k->kind, .sub = k->sub, .dur = k->dur,
                                     .gap = k->gap, .event = k->event, .has_event = k->event != MODEL_NONE,
                                     .kept = k->kept, .order = p->ts[i] - off,
                                     .name = k->name == MODEL_NONE ? "(step boundary)" : model_str(t, k->name)};
        rc = model_gb_add_task(gb, &ts, &id);
        assert(rc || id == base + i); /* the builder's id is the task's index */
    }
    for (size_t i = 0; i < p->n_edges && rc == SC_OK; i++) {
        const struct pending_edge *e = &p->edges[i];
        assert(e->from < p->n_tasks && e->to < p->n_tasks);
        rc = model_gb_add_edge(gb, base + e->from, base + e->to, e->kind, e->type, e->lat, e->inferred);
    }
    for (size_t i = 0; i < p->n_steps && rc == SC_OK; i++) {
        const struct model_graph_step *s = &p->steps[i];
        assert(s->step < t->n_steps && s->begin < p->n_tasks && (s->end == MODEL_NONE || s->end < p->n_tasks));
        rc = model_gb_add_step(gb, &(struct model_step_spec){(uint16_t)rk, base + s->begin,
                                                             s->end == MODEL_NONE ? MODEL_NONE : base + s->end,
                                                             model_str(t, t->steps[s->step].name),
                                                             s->measured_ns, s->partial, s->step});
    }
    return rc;
}

static void add_stats(struct model_graph_stats *to, const struct model_graph_stats *s)
{
    to->inferred_event_syncs += s->inferred_event_syncs;
    to->cuda_sync_event_syncs += s->cuda_sync_event_syncs;
    to->host_waits_gap += s->host_waits_gap;
    to->host_waits_loop += s->host_waits_loop;
}

/* Join the ranks' parts into the graph: group collectives, align clocks,
 * then hand each rank over to the public builder and free its part (so
 * the parts and the graph being built are not all held at once). */
int gb_join(struct join *j, const struct model_job *job, struct model_graph **out)
{
    struct model_gb *gb = NULL;
    size_t tasks = 0, edges = 0;
    uint16_t rank;
    int rc = SC_OK, inspect_only = j->n && j->parts[0]->o.inspect_only; /* the parts are freed as they go in */

    j->base = malloc(j->n * sizeof *j->base);
    j->clock_offset = calloc(j->n, sizeof *j->clock_offset);
    if (!j->base || !j->clock_offset)
        return sc_error_set(j->err, SC_ENOMEM, "out of memory");
    for (size_t rk = 0; rk < j->n; rk++) {
        if (tasks + j->parts[rk]->n_tasks >= (1u << 30))
            return sc_error_set(j->err, SC_ELIMIT, "more than %u tasks", 1u << 30);
        j->base[rk] = (uint32_t)tasks;
        tasks += j->parts[rk]->n_tasks;
        edges += j->parts[rk]->n_edges;
        add_stats(&j->stats, &j->parts[rk]->stats);
    }
    if ((rc = collectives(j)))
        return rc;
    assert(j->n_group_tasks <= tasks); /* a task is in one group at most */
    if (!(gb = model_gb_new(j->err)))
        return SC_ENOMEM;
    model_gb_set_job(gb, job);
    rc = model_gb_reserve(gb, tasks, edges, j->n_groups, j->n_group_tasks);
    for (size_t rk = 0; rk < j->n && rc == SC_OK; rk++)
        rc = model_gb_add_rank(gb, &(struct model_rank_spec){j->rank_ids[rk], j->clock_offset[rk],
                                                              j->parts[rk]->queue_depth}, &rank);
    if (j->folded)
        model_gb_folding_on(gb, j->total);
    for (size_t rk = 0; rk < j->n && rc == SC_OK; rk++) {
        const struct builder *p = j->parts[rk];
        for (size_t k = 0; k < p->n_folded && rc == SC_OK; k++)
            rc = model_gb_add_folded(gb, &(struct model_folded_spec){(uint16_t)rk, p->folded[k].id,
                                                                     p->folded[k].anchor - p->anchor,
                                                                     p->folded[k].measured, p->n_steps});
    }
    size_t freed = 0; /* tasks of the parts freed since the heap was last trimmed */
    for (size_t rk = 0; rk < j->n && rc == SC_OK; rk++) {
        if ((rc = CALLED_OFF(j->err)) == SC_OK)
            rc = emit_rank(j, rk, gb);
        freed += j->parts[rk]->n_tasks;
        gb_rank_free(j->parts[rk]);
        j->parts[rk] = NULL;
        if (freed >= TRIM_TASKS) {
            sc_heap_trim();
            freed = 0;
        }
    }
    for (size_t i = 0; i < j->n_groups && rc == SC_OK; i++) {
        assert(j->groups[i].first + j->groups[i].n <= j->n_group_tasks);
        rc = model_gb_add_group(gb, &j->groups[i].spec, j->group_tasks + j->groups[i].first, j->groups[i].n, NULL);
    }
    if (rc) {
        model_gb_free(gb);
        return rc;
    }
    *model_gb_stats(gb) = j->stats;
    if ((rc = model_gb_finish(gb, out, j->err)) == SC_OK)
        (*out)->inspect_only = inspect_only;
    return rc;
}

void gb_join_release(struct join *j)
{
    for (size_t rk = 0; j->parts && rk < j->n; rk++)
        gb_rank_free(j->parts[rk]);
    free(j->parts);
    free(j->traces);
    free(j->rank_ids);
    free(j->base);
    free(j->clock_offset);
    free(j->groups);
    free(j->group_tasks);
}
