/* model/task_key.c: tasks keyed by rank, kind, name and ordinal
 * (task_key.h). */
#include "model/task_key.h"

#include <assert.h>
#include <string.h>

#include "common/vec.h"
#include "common/banned.h"

struct model_task_key model_task_key_of(const struct model_graph *g, uint32_t i)
{
    const struct model_task *t = &g->tasks[i];
    return (struct model_task_key){model_graph_str(g, g->src[i].name), i, 0, t->rank,
                                   (uint8_t)!model_task_on_gpu(t->cls)};
}

int model_task_key_cmp(const struct model_task_key *a, const struct model_task_key *b, int by_ord)
{
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->cpu != b->cpu)
        return a->cpu < b->cpu ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c)
        return c;
    return by_ord ? (a->ord > b->ord) - (a->ord < b->ord) : (a->task > b->task) - (a->task < b->task);
}

static int by_task(const void *x, const void *y)
{
    return model_task_key_cmp(x, y, 0);
}

void model_task_keys_number(struct model_task_key *k, size_t n)
{
    sc_sort(k, n, sizeof *k, by_task);
    for (size_t i = 1; i < n; i++) {
        const struct model_task_key *p = &k[i - 1], *q = &k[i];
        assert(model_task_key_cmp(p, q, 0) <= 0); /* sorted: a name's keys side by side */
        if (p->rank == q->rank && p->cpu == q->cpu && strcmp(p->name, q->name) == 0)
            k[i].ord = p->ord + 1;
    }
}
