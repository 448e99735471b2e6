/* estimator/costs/op_kernels.c: the innermost CPU op of each launch
 * (op_kernels.h).
 *
 * One sweep per CPU thread over its ops and launch calls in time order,
 * with a stack of the ops open at each call, gives every launch its
 * innermost op; each kernel then takes the op of its launch, and the
 * kernels are grouped by op. */
#include "estimator/costs/op_kernels.h"

#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "model/runtime_api.h"
#include "common/banned.h"

struct item {
    int64_t ts, dur;
    uint32_t track, event;
    uint8_t is_call;
};

static int item_cmp(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;
    if (a->track != b->track)
        return a->track < b->track ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    if (a->is_call != b->is_call) /* an op starting with its call contains it */
        return a->is_call ? 1 : -1;
    if (a->dur != b->dur) /* the enclosing op first */
        return a->dur > b->dur ? -1 : 1;
    return a->event < b->event ? -1 : a->event > b->event;
}

/* For each launch call, the innermost op open at it (MODEL_NONE when
 * none) in *call_op (from malloc, t->n_events entries). */
static int innermost_ops(const struct model_trace *t, uint32_t *call_op, struct sc_error *err)
{
    struct item *items = NULL;
    size_t n_items = 0, cap = 0, depth = 0, stack_cap = 0;
    uint32_t *stack = NULL;
    int status = SC_OK;

    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        call_op[i] = MODEL_NONE;
        int call = (e->kind == MODEL_EV_RUNTIME || e->kind == MODEL_EV_DRIVER) &&
                   (e->rt == MODEL_RT_LAUNCH || e->rt == MODEL_RT_LAUNCH_SYNC) && t->link[i] != MODEL_NONE;
        if (!call && e->kind != MODEL_EV_CPU_OP)
            continue;
        if (sc_vec_reserve((void **)&items, &cap, n_items + 1, sizeof *items))
            goto oom;
        items[n_items++] = (struct item){e->ts, e->dur, e->track, (uint32_t)i, (uint8_t)call};
    }
    /* each thread's events come in time order: a few runs */
    if (sc_sort_runs_alloc(items, n_items, sizeof *items, item_cmp))
        goto oom;
    for (size_t i = 0; i < n_items; i++) {
        const struct item *it = &items[i];
        if (i == 0 || it->track != items[i - 1].track)
            depth = 0;
        while (depth) {
            const struct model_event *top = &t->events[stack[depth - 1]];
            if (top->ts + top->dur >= it->ts)
                break;
            depth--;
        }
        if (it->is_call) {
            if (depth)
                call_op[it->event] = stack[depth - 1];
            continue;
        }
        if (sc_vec_reserve((void **)&stack, &stack_cap, depth + 1, sizeof *stack))
            goto oom;
        stack[depth++] = it->event;
    }
    goto out;
oom:
    status = sc_error_set(err, SC_ENOMEM, "out of memory");
out:
    free(items);
    free(stack);
    return status;
}

/* The op of kernel event i, or MODEL_NONE. */
static uint32_t op_of_kernel(const struct model_trace *t, const uint32_t *call_op, size_t i)
{
    if (t->events[i].kind != MODEL_EV_KERNEL || t->link[i] == MODEL_NONE)
        return MODEL_NONE;
    return call_op[t->link[i]];
}

int cost_op_kernels_join(const struct model_trace *t, struct op_kernels *out, struct sc_error *err)
{
    uint32_t *call_op = NULL, *group = NULL;
    size_t n_kernels = 0;
    int status;

    memset(out, 0, sizeof *out);
    if (!t->link)
        return SC_OK; /* nothing joined: no kernel to attribute */
    call_op = malloc(t->n_events * sizeof *call_op + 1);
    group = malloc(t->n_events * sizeof *group + 1);
    if (!call_op || !group) {
        status = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    if ((status = innermost_ops(t, call_op, err)))
        goto out;
    /* count each op's kernels, numbering the ops by their first kernel */
    for (size_t i = 0; i < t->n_events; i++)
        group[i] = MODEL_NONE;
    for (size_t i = 0; i < t->n_events; i++) {
        uint32_t op = op_of_kernel(t, call_op, i);
        if (op == MODEL_NONE)
            continue;
        if (group[op] == MODEL_NONE)
            group[op] = (uint32_t)out->n_ops++;
        n_kernels++;
    }
    out->ops = calloc(out->n_ops + 1, sizeof *out->ops);
    out->kernel = malloc((n_kernels + 1) * sizeof *out->kernel);
    if (!out->ops || !out->kernel) {
        status = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < t->n_events; i++) {
        uint32_t op = op_of_kernel(t, call_op, i);
        if (op != MODEL_NONE) {
            out->ops[group[op]].op = op;
            out->ops[group[op]].n++;
        }
    }
    for (size_t g = 1; g < out->n_ops; g++)
        out->ops[g].first = out->ops[g - 1].first + out->ops[g - 1].n;
    for (size_t g = 0; g < out->n_ops; g++)
        out->ops[g].n = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        uint32_t op = op_of_kernel(t, call_op, i);
        if (op != MODEL_NONE) {
            struct op_launch *l = &out->ops[group[op]];
            out->kernel[l->first + l->n++] = (uint32_t)i;
        }
    }
out:
    free(call_op);
    free(group);
    if (status)
        cost_op_kernels_release(out);
    return status;
}

void cost_op_kernels_release(struct op_kernels *k)
{
    if (!k)
        return;
    free(k->ops);
    free(k->kernel);
    memset(k, 0, sizeof *k);
}
