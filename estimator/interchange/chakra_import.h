/* estimator/interchange/chakra_import.h: Chakra execution traces in: ET files (one
 * per rank, as ASTRA-sim takes them) replayed like a job's traces.
 *
 * TRACE... may name .et files, folders of them (with their comm_group.json
 * when there is one), or a comm_group.json. A file's rank is the N of its
 * name <prefix>.N.et, else its GlobalMetadata's "rank" attribute, else its
 * place among the files. Each file is one step (named after the file), with
 * no measured time:
 *   - nodes become tasks. COMP nodes with is_cpu_op are host work on a CPU
 *     thread, other COMP nodes kernels (copies and sets by their names) on
 *     GPU streams, communication nodes communication on a stream; each
 *     lasts its duration_micros. Threads and streams are found from the
 *     dependencies: a node runs on the resource of a dependency it directly
 *     follows when there is one of its kind, else on a resource of its own,
 *     so that the resources add no wait the file does not hold, and a
 *     replay takes the critical path through the durations;
 *   - data_deps become edges (finish-to-start; their kind from the ends:
 *     launch, host sync, event sync or hand-off); the step ends after every
 *     node without a successor;
 *   - collectives are coupled across ranks by communicator and order: the
 *     k-th collective of pg_name P on each rank of P's comm_group.json
 *     entry (every rank when the file has none) is one group; the k-th send
 *     from a to b with tag t pairs with the k-th such receive on b. */
#ifndef ESTIMATOR_CHAKRA_IMPORT_H
#define ESTIMATOR_CHAKRA_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct model_job;
struct model_graph;
struct model_limits;

/* Whether paths[0..n) name Chakra ET (each of them: a mix of ET and
 * Kineto traces is SC_EINVAL). */
int chakra_is_et(const char *const *paths, size_t n, int *yes, struct sc_error *err);

/* The graph of the ET files paths name, and *job: one header-only trace
 * per rank (its source and rank), which the graph borrows. lim: NULL for
 * the defaults. `ranks`, when not NULL, says that every path is a file
 * and ranks[i] (when >= 0) is the rank of paths[i] (uploads). */
int chakra_import(const char *const *paths, size_t n, const struct model_limits *lim, const int64_t *ranks,
                      struct model_job **job, struct model_graph **out, struct sc_error *err);

#endif
