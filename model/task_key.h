/* model/task_key.h: the key that finds a task again in another rank or
 * another run of the same program: its rank, whether it is GPU or CPU
 * work, its name and its ordinal among the tasks of that rank, kind and
 * name (the third "ncclKernel_AllReduce" of rank 2). Task ids differ
 * between graphs and names repeat within a step, so this is what diff
 * matches two runs by and what opportunities match kernels across ranks
 * by. */
#ifndef MODEL_TASK_KEY_H
#define MODEL_TASK_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "model/graph.h"

struct model_task_key {
    const char *name; /* the graph's string */
    uint32_t task, ord;
    uint16_t rank;
    uint8_t cpu; /* 0: GPU work (kernels, copies, sets), 1: CPU work */
};

/* Task i of g, its ordinal not yet numbered (0). */
struct model_task_key model_task_key_of(const struct model_graph *g, uint32_t i);

/* Order by rank, kind of work and name, then by task (by_ord 0) or by
 * ordinal (by_ord 1). */
int model_task_key_cmp(const struct model_task_key *a, const struct model_task_key *b, int by_ord);

/* Sort k[0..n) by rank, kind, name and task, and number each key's ord:
 * its place among the keys of its rank, kind and name. */
void model_task_keys_number(struct model_task_key *k, size_t n);

#endif
