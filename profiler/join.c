/* profiler/join.c: write-time joins (join.h). */
#include "profiler/join.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cupti.h>

#include "common/banned.h"

int prof_is_nccl_kernel(const char *name)
{
    return name && strncasecmp(name, "nccl", 4) == 0;
}

/* ---- CUDA events ---------------------------------------------------------------------- */

/* CUDA event records and the syncs that wait on them, ordered by (context,
 * event id, correlation id): the fields sit in the same places in both. */
static int event_order(const struct prof_event *x, const struct prof_event *y)
{
    if (x->at.gpu.context != y->at.gpu.context)
        return x->at.gpu.context < y->at.gpu.context ? -1 : 1;
    if (x->u.sync.event_id != y->u.sync.event_id)
        return x->u.sync.event_id < y->u.sync.event_id ? -1 : 1;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static const struct prof_store *sort_store; /* qsort has no context argument */

static int cmp_cuda_event(const void *a, const void *b)
{
    return event_order(prof_store_at(sort_store, *(const uint32_t *)a),
                       prof_store_at(sort_store, *(const uint32_t *)b));
}

const struct prof_event *prof_join_wait(const struct prof_join *j, const struct prof_event *s)
{
    uint64_t idx;
    if ((s->flags & PROF_F_HAS_SYNC_ID) && prof_map_get(&j->sync_id, s->u.sync.sync_id, &idx))
        return prof_store_at(j->st, (size_t)idx);
    if (s->u.sync.event_id == PROF_INVALID)
        return NULL;
    /* the last record of (context, event) with a smaller correlation id */
    size_t lo = 0, hi = j->n_cuda_events;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (event_order(prof_store_at(j->st, j->cuda_events[mid]), s) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct prof_event *e = prof_store_at(j->st, j->cuda_events[lo - 1]);
    if (e->at.gpu.context != s->at.gpu.context || e->u.sync.event_id != s->u.sync.event_id)
        return NULL;
    return e;
}

uint32_t prof_join_launch_index(const struct prof_join *j, uint32_t corr)
{
    uint64_t idx;
    return corr && prof_map_get(&j->api, corr, &idx) ? (uint32_t)idx : PROF_INVALID;
}

const struct prof_event *prof_join_launch(const struct prof_join *j, uint32_t corr)
{
    uint32_t i = prof_join_launch_index(j, corr);
    return i == PROF_INVALID ? NULL : prof_store_at(j->st, i);
}

uint32_t prof_join_device(const struct prof_join *j, uint32_t context)
{
    uint64_t d;
    return prof_map_get(&j->ctx_dev, context, &d) ? (uint32_t)d : PROF_INVALID;
}

const struct prof_nccl_unit *prof_join_unit(const struct prof_join *j, size_t index)
{
    uint64_t u;
    return prof_map_get(&j->kernel_unit, index, &u) ? &j->units[u] : NULL;
}

/* ---- NCCL units ------------------------------------------------------------------------ */

struct pair {
    uint64_t parent, number;
};

static int cmp_pair(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    if (x->parent != y->parent)
        return x->parent < y->parent ? -1 : 1;
    return x->number < y->number ? -1 : x->number > y->number;
}

/* The first index of `parent` in sorted pairs, or n. */
static size_t first_of(const struct pair *p, size_t n, uint64_t parent)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p[mid].parent < parent)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && p[lo].parent == parent ? lo : n;
}

static int push_op(struct prof_join *j, size_t *cap, const struct prof_nccl_rec *api,
                   const struct prof_nccl_rec *task)
{
    if (j->n_ops == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        struct prof_nccl_op *o = realloc(j->ops, c * sizeof *o);
        if (!o)
            return -1;
        j->ops = o;
        *cap = c;
    }
    j->ops[j->n_ops].api = api;
    j->ops[j->n_ops].task = task;
    j->n_ops++;
    return 0;
}

static int push_unit(struct prof_join *j, size_t *cap, const struct prof_nccl_rec *launch,
                     uint32_t first_op)
{
    if (j->n_units == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        struct prof_nccl_unit *u = realloc(j->units, c * sizeof *u);
        if (!u)
            return -1;
        j->units = u;
        *cap = c;
    }
    struct prof_nccl_unit *u = &j->units[j->n_units++];
    u->launch = launch->number;
    u->start = launch->start;
    u->comm = launch->comm;
    u->first_op = first_op;
    u->n_ops = (uint32_t)(j->n_ops - first_op);
    u->matched = 0;
    return 0;
}

static int build_units(struct prof_join *j)
{
    struct prof_nccl_log *l = j->nl;
    uint64_t first = (uint64_t)l->first_chunk * PROF_NCCL_CHUNK;
    struct pair *members = NULL; /* (parent, number): v5 API records, or v4 tasks */
    size_t n_members = 0, cap_ops = 0, cap_units = 0;
    struct prof_map task_of_api = {0}, consumed = {0};
    int have_launches = 0, rc = -1;

    for (uint64_t n = first; n < l->n; n++) {
        const struct prof_nccl_rec *r = prof_nccl_get(l, n);
        have_launches |= r && r->kind == PROF_NCCL_K_KERNEL_LAUNCH;
    }
    members = malloc((size_t)(l->n - first + 1) * sizeof *members);
    if (!members)
        goto out;
    for (uint64_t n = first; n < l->n; n++) {
        const struct prof_nccl_rec *r = prof_nccl_get(l, n);
        if (!r)
            continue;
        int member = have_launches ? r->kind == PROF_NCCL_K_COLL_API || r->kind == PROF_NCCL_K_P2P_API
                                   : r->kind == PROF_NCCL_K_COLL || r->kind == PROF_NCCL_K_P2P;
        if (member)
            members[n_members++] = (struct pair){r->parent, r->number};
        if (have_launches && (r->kind == PROF_NCCL_K_COLL || r->kind == PROF_NCCL_K_P2P) &&
            r->parent && prof_map_put_new(&task_of_api, r->parent - 1, r->number))
            goto out;
    }
    if (n_members > 1)
        qsort(members, n_members, sizeof *members, cmp_pair);

    for (uint64_t n = first; n < l->n; n++) {
        const struct prof_nccl_rec *launch = prof_nccl_get(l, n);
        if (!launch || launch->kind != (have_launches ? PROF_NCCL_K_KERNEL_LAUNCH : PROF_NCCL_K_GROUP))
            continue;
        /* v5: the group's API calls of this communicator, taken by its first launch;
         * v4: the plan's tasks */
        uint64_t parent = have_launches ? launch->parent : launch->number + 1, dummy;
        uint64_t key = parent | (uint64_t)launch->comm << 48;
        uint32_t first_op = (uint32_t)j->n_ops;
        if (!have_launches || (parent && !prof_map_get(&consumed, key, &dummy))) {
            for (size_t i = first_of(members, n_members, parent);
                 parent && i < n_members && members[i].parent == parent; i++) {
                const struct prof_nccl_rec *m = prof_nccl_get(l, members[i].number), *task = m;
                uint64_t t;
                if (!m || m->comm != launch->comm)
                    continue;
                if (have_launches)
                    task = prof_map_get(&task_of_api, m->number, &t) ? prof_nccl_get(l, t) : NULL;
                if (push_op(j, &cap_ops, have_launches ? m : NULL, task))
                    goto out;
            }
            if (have_launches && prof_map_put(&consumed, key, 1))
                goto out;
        }
        if (push_unit(j, &cap_units, launch, first_op))
            goto out;
    }
    rc = 0;
out:
    free(members);
    prof_map_release(&task_of_api);
    prof_map_release(&consumed);
    return rc;
}

/* The NCCL function a kernel name names ("AllReduce"), or NULL (a generic
 * kernel that runs whatever its work list says). */
static const char *kernel_func(const char *name)
{
    static const char *const funcs[] = {"ReduceScatter", "AllReduce", "AllGather", "Broadcast",
                                        "AlltoAll", "SendRecv", "Reduce", "Gather", "Scatter"};
    for (size_t i = 0; i < sizeof funcs / sizeof funcs[0]; i++)
        if (strstr(name, funcs[i]))
            return funcs[i];
    return NULL;
}

static const char *op_func(const struct prof_nccl_op *o)
{
    return o->api ? o->api->func : o->task ? o->task->func : "";
}

static int unit_fits(const struct prof_join *j, const struct prof_nccl_unit *u, const char *kfunc)
{
    if (!kfunc || !u->n_ops)
        return 1;
    const char *f = op_func(&j->ops[u->first_op]);
    if (strcmp(kfunc, "SendRecv") == 0)
        return strcmp(f, "Send") == 0 || strcmp(f, "Recv") == 0 || strcmp(f, "SendRecv") == 0;
    return strcmp(f, kfunc) == 0;
}

static int match_by_order(struct prof_join *j)
{
    const struct prof_store *st = j->st;
    uint32_t *kernels = NULL;
    size_t nk = 0;
    size_t n_comms = j->nl->n_comms;
    size_t *next = calloc(n_comms + 1, sizeof *next); /* per communicator: next unit to try */
    struct prof_map stream_comm = {0};
    int rc = -1;

    if (!next || !(kernels = malloc((st->n + 1) * sizeof *kernels)))
        goto out;
    /* the NCCL kernels the exact join left */
    for (size_t i = 0; i < st->n; i++) {
        const struct prof_event *e = prof_store_at(st, i);
        uint64_t u;
        if (e->type == PROF_EV_KERNEL && !prof_map_get(&j->kernel_unit, i, &u) &&
            prof_is_nccl_kernel(prof_store_str(st, e->name)))
            kernels[nk++] = (uint32_t)i;
    }
    if (!nk || !j->n_units) {
        j->nccl_kernels_unmatched += nk;
        rc = 0;
        goto out;
    }
    if (prof_store_sort_by_corr(st, kernels, nk))
        goto out;

    for (size_t k = 0; k < nk; k++) {
        const struct prof_event *e = prof_store_at(st, kernels[k]);
        const char *kfunc = kernel_func(prof_store_str(st, e->name));
        uint64_t skey = (uint64_t)e->at.gpu.device << 32 | e->at.gpu.stream, comm;
        size_t best = j->n_units;
        if (prof_map_get(&stream_comm, skey, &comm)) {
            for (size_t u = next[comm]; u < j->n_units; u++)
                if (j->units[u].comm == comm && !j->units[u].matched) {
                    if (unit_fits(j, &j->units[u], kfunc))
                        best = u;
                    break;
                }
        } else {
            /* the earliest unmatched launch that fits, of any communicator */
            for (size_t u = 0; u < j->n_units; u++)
                if (!j->units[u].matched && unit_fits(j, &j->units[u], kfunc) &&
                    (best == j->n_units || j->units[u].start < j->units[best].start))
                    best = u;
        }
        if (best == j->n_units) {
            j->nccl_kernels_unmatched++;
            continue;
        }
        struct prof_nccl_unit *u = &j->units[best];
        u->matched = 1;
        if (u->comm < n_comms)
            next[u->comm] = best + 1;
        if (prof_map_put_new(&stream_comm, skey, u->comm) ||
            prof_map_put(&j->kernel_unit, kernels[k], best))
            goto out;
        j->nccl_by_order++;
    }
    rc = 0;
out:
    free(kernels);
    free(next);
    prof_map_release(&stream_comm);
    return rc;
}

static int match_exact(struct prof_join *j)
{
    struct prof_map unit_of_launch = {0};
    int rc = -1;
    for (size_t u = 0; u < j->n_units; u++)
        if (prof_map_put(&unit_of_launch, j->units[u].launch, u))
            goto out;
    for (size_t i = 0; i < j->st->n; i++) {
        const struct prof_event *e = prof_store_at(j->st, i);
        uint64_t id, u;
        if (e->type != PROF_EV_KERNEL || !e->corr || !prof_map_get(&j->nccl_id, e->corr, &id) ||
            !id || !prof_map_get(&unit_of_launch, id - 1, &u))
            continue;
        j->units[u].matched = 1;
        if (prof_map_put(&j->kernel_unit, i, u))
            goto out;
        j->nccl_exact++;
    }
    rc = 0;
out:
    prof_map_release(&unit_of_launch);
    return rc;
}

/* ---- collective args ------------------------------------------------------------------ */

static void op_sizes(const char *func, uint64_t count, int nranks, int64_t *in, int64_t *out)
{
    int64_t c = (int64_t)count, all = c * (nranks > 0 ? nranks : 1);
    *in = *out = c;
    if (strcmp(func, "AllGather") == 0 || strcmp(func, "Gather") == 0)
        *out = all;
    else if (strcmp(func, "ReduceScatter") == 0 || strcmp(func, "Scatter") == 0)
        *in = all;
    else if (strcmp(func, "AlltoAll") == 0)
        *in = *out = all;
}

static int rooted(const char *func)
{
    return strcmp(func, "Broadcast") == 0 || strcmp(func, "Reduce") == 0 ||
           strcmp(func, "Gather") == 0 || strcmp(func, "Scatter") == 0;
}

void prof_join_coll(const struct prof_join *j, const struct prof_nccl_unit *u, struct prof_coll *c)
{
    const struct prof_nccl_comm *comm = u->comm < j->nl->n_comms ? &j->nl->comms[u->comm] : NULL;
    int same_func = 1, sends = 0, recvs = 0;
    memset(c, 0, sizeof *c);
    c->group_size = comm ? comm->nranks : -1;
    c->rank = comm ? comm->rank : -1;
    c->comm_id = comm ? comm->id : 0;
    c->comm_name = comm ? comm->name : "";
    c->seq = -1;
    c->peer = c->root = -1;
    c->n_ops = u->n_ops;
    c->func = c->nccl_dtype = c->algo = c->proto = "";
    for (uint32_t i = 0; i < u->n_ops; i++) {
        const struct prof_nccl_op *o = &j->ops[u->first_op + i];
        const struct prof_nccl_rec *r = o->api ? o->api : o->task;
        int64_t in, out;
        if (!r)
            continue;
        op_sizes(r->func, r->count, c->group_size, &in, &out);
        c->in_nelems += in;
        c->out_nelems += out;
        sends += strcmp(r->func, "Send") == 0;
        recvs += strcmp(r->func, "Recv") == 0;
        if (i == 0) {
            c->func = r->func;
            c->nccl_dtype = r->datatype;
            if (r->kind == PROF_NCCL_K_COLL_API || r->kind == PROF_NCCL_K_COLL)
                c->root = r->root;
            if (o->task) {
                if (o->task->kind == PROF_NCCL_K_COLL)
                    c->seq = (int64_t)o->task->seq;
                else
                    c->peer = o->task->root;
                c->algo = o->task->algo;
                c->proto = o->task->proto;
                c->n_channels = o->task->n_channels;
            }
        } else if (strcmp(r->func, c->func) != 0) {
            same_func = 0;
        }
    }
    const char *base = prof_nccl_c10d_name(c->func);
    const char *dt = prof_nccl_c10d_dtype(c->nccl_dtype);
    c->dtype = dt ? dt : c->nccl_dtype;
    if (sends + recvs == (int)u->n_ops && sends && recvs)
        base = "sendrecv";
    else if (!same_func)
        base = "coalesced";
    snprintf(c->name, sizeof c->name, "%s%s", base ? base : c->func,
             u->n_ops > 1 && same_func ? "_coalesced" : "");
    if (u->n_ops != 1)
        c->peer = -1;
    if (!rooted(c->func))
        c->root = -1;
}

/* ---- building ------------------------------------------------------------------------- */

int prof_join_build(struct prof_join *j, const struct prof_store *st, struct prof_nccl_log *nl)
{
    size_t n_ev = 0;
    memset(j, 0, sizeof *j);
    j->st = st;
    j->nl = nl;
    for (size_t i = 0; i < st->n_contexts; i++)
        if (prof_map_put(&j->ctx_dev, st->contexts[i].id, st->contexts[i].device))
            return -1;
    for (size_t i = 0; i < st->n; i++) {
        const struct prof_event *e = prof_store_at(st, i);
        int rc = 0;
        switch (e->type) {
        case PROF_EV_RUNTIME:
            rc = e->corr ? prof_map_put(&j->api, e->corr, i) : 0;
            break;
        case PROF_EV_DRIVER:
            rc = e->corr ? prof_map_put_new(&j->api, e->corr, i) : 0;
            break;
        case PROF_EV_EXT_CORR:
            if (e->u.ext.kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
                rc = prof_map_put(&j->ext, e->corr, e->u.ext.id);
            else if (e->u.ext.kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2)
                rc = prof_map_put(&j->nccl_id, e->corr, e->u.ext.id);
            break;
        case PROF_EV_CUDA_EVENT:
            n_ev++;
            if (e->flags & PROF_F_HAS_SYNC_ID)
                rc = prof_map_put(&j->sync_id, e->u.sync.sync_id, i);
            if (!rc && (e->flags & PROF_F_HAS_DEVICE))
                rc = prof_map_put_new(&j->ctx_dev, e->at.gpu.context, e->at.gpu.device);
            break;
        case PROF_EV_KERNEL:
        case PROF_EV_MEMCPY:
        case PROF_EV_MEMSET:
            rc = prof_map_put_new(&j->ctx_dev, e->at.gpu.context, e->at.gpu.device);
            break;
        default:
            break;
        }
        if (rc)
            goto oom;
    }
    if (n_ev && !(j->cuda_events = malloc(n_ev * sizeof *j->cuda_events)))
        goto oom;
    for (size_t i = 0; i < st->n; i++)
        if (prof_store_at(st, i)->type == PROF_EV_CUDA_EVENT)
            j->cuda_events[j->n_cuda_events++] = (uint32_t)i;
    sort_store = st;
    if (j->n_cuda_events > 1)
        qsort(j->cuda_events, j->n_cuda_events, sizeof *j->cuda_events, cmp_cuda_event);

    if (nl) {
        pthread_mutex_lock(&nl->mu);
        int rc = build_units(j);
        if (!rc)
            rc = match_exact(j);
        if (!rc)
            rc = match_by_order(j);
        pthread_mutex_unlock(&nl->mu);
        if (rc)
            goto oom;
    }
    return 0;
oom:
    prof_join_release(j);
    return -1;
}

void prof_join_release(struct prof_join *j)
{
    prof_map_release(&j->api);
    prof_map_release(&j->ext);
    prof_map_release(&j->nccl_id);
    prof_map_release(&j->ctx_dev);
    prof_map_release(&j->sync_id);
    prof_map_release(&j->kernel_unit);
    free(j->cuda_events);
    free(j->units);
    free(j->ops);
    memset(j, 0, sizeof *j);
}
