/* model/collective.h: naming collectives and communication kernels.
 *
 * Collectives reach a trace under several spellings: PyTorch's "Collective
 * name" arg ("allreduce", "all_to_allv", "_reduce_scatter_base"), NCCL and
 * RCCL kernel names ("ncclKernel_AllReduce_RING_LL_Sum_float",
 * "ncclDevKernel_SendRecv"). One operation enum serves ingest, the graph and
 * the collective cost model. */
#ifndef MODEL_COLLECTIVE_H
#define MODEL_COLLECTIVE_H

#include <stdint.h>

enum model_coll_op {
    MODEL_COLL_UNKNOWN,
    MODEL_COLL_ALLREDUCE,
    MODEL_COLL_ALLGATHER,
    MODEL_COLL_REDUCESCATTER,
    MODEL_COLL_ALLTOALL,
    MODEL_COLL_BROADCAST,
    MODEL_COLL_REDUCE,
    MODEL_COLL_GATHER,
    MODEL_COLL_SCATTER,
    MODEL_COLL_SENDRECV,
    MODEL_COLL_SEND,
    MODEL_COLL_RECV,
    MODEL_COLL_BARRIER,
    MODEL_COLL_OP_COUNT
};

/* "allreduce", "allgather", ...; "unknown" for MODEL_COLL_UNKNOWN. */
const char *model_coll_op_name(enum model_coll_op op);

/* The operation a "Collective name" arg or a kernel name denotes. Case,
 * underscores and PyTorch's prefixes and suffixes are ignored. */
enum model_coll_op model_coll_op_parse(const char *name);

/* Whether a kernel name is a communication kernel (NCCL or RCCL). */
int model_is_comm_kernel(const char *kernel_name);

/* The size of a collective in bytes (nccl-tests convention, graph.h) from
 * its trace metadata: the input's elements (all-gather: the output's; a
 * receive: the larger) times the dtype's size; -1 when either is unknown,
 * or when the size would pass MODEL_COLL_MAX_BYTES (a pebibyte: no message
 * is that large, and an element count near INT64_MAX from a hostile trace
 * would overflow). */
#define MODEL_COLL_MAX_BYTES (1ll << 50)
struct model_trace;
struct model_collective;
int64_t model_coll_bytes(const struct model_trace *t, const struct model_collective *c, enum model_coll_op op);
/* The same from the dtype's bytes per element (0: unknown) and the
 * element counts (-1: absent). */
int64_t model_coll_bytes_of(int dtype_bytes, int64_t in_nelems, int64_t out_nelems, enum model_coll_op op);

/* Bytes per element of a PyTorch dtype name ("Float", "BFloat16", "c10::Half",
 * "float32", ...), or 0 when unknown. */
int model_dtype_bytes(const char *dtype);

#endif
