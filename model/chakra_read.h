/* model/chakra_read.h: one rank's Chakra execution trace (ET) read into
 * a compact table, for replaying what other tools write.
 *
 * The file is the framing of chakra_et.h: a GlobalMetadata, then Nodes.
 * Two schema generations are read: the current one (GlobalMetadata.version
 * set, "0.0.4"; what stepcast and Chakra's converter write), and the older
 * one of Chakra's sample traces (no version, a "schema" attribute such as
 * "1.0.1", collectives without comm_type). Attribute values are taken in
 * any integer type, as a bool or as a decimal string, so that a value of
 * another type than the feeder expects is not silently 0; comm_type may
 * also be a CollectiveCommType name ("ALL_REDUCE"). A collective without
 * comm_type takes it from its name (c10d::allreduce_, ...).
 *
 * Dependencies are data_deps (what Chakra's feeder and ASTRA-sim walk);
 * ctrl_deps, the parent op of Chakra's converter, are not dependencies.
 * The file is untrusted input: a truncated frame, a message that does not
 * decode, a duplicate node id, a dependency on no node of the file, a
 * cycle, or more nodes than the limits allow is an error naming the byte
 * offset or the node. */
#ifndef MODEL_CHAKRA_READ_H
#define MODEL_CHAKRA_READ_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/strtab.h"

struct model_limits;

/* Chakra's node types (et_def.proto NodeType). */
enum model_et_type {
    MODEL_ET_INVALID, MODEL_ET_METADATA, MODEL_ET_MEM_LOAD, MODEL_ET_MEM_STORE, MODEL_ET_COMP,
    MODEL_ET_COMM_SEND, MODEL_ET_COMM_RECV, MODEL_ET_COMM_COLL, MODEL_ET_TYPE_COUNT
};

struct model_et_node {
    uint64_t id;          /* as the file numbers it */
    uint32_t name;        /* string id */
    uint32_t pg;          /* pg_name's string id, or UINT32_MAX */
    int64_t dur_ns;       /* duration_micros * 1000 */
    int64_t comm_size;    /* bytes, or -1 */
    int32_t src, dst, tag; /* point-to-point ends, or -1 */
    uint8_t type;         /* enum model_et_type */
    uint8_t cpu;          /* is_cpu_op */
    int8_t coll;          /* enum model_coll_op of a collective, send or receive (0: unknown) */
    uint32_t dep0, n_deps; /* its dependencies: deps[dep0 .. dep0 + n_deps), node indices */
};

struct model_et_rank {
    char *source;             /* for messages; from malloc */
    int rank;                 /* GlobalMetadata's "rank" attribute, or -1 */
    uint32_t version;         /* string id of GlobalMetadata.version ("" in the older generation) */
    struct sc_strtab strings;
    struct model_et_node *nodes; /* in file order */
    size_t n_nodes;
    uint32_t *deps;
    size_t n_deps;
    uint32_t *order;          /* the nodes in a topological order (by file order among the ready) */
};

/* Read buf[0..n), named `source`; limits: at most lim->max_events nodes
 * (NULL: the defaults). */
int model_et_read_mem(const void *buf, size_t n, const char *source, const struct model_limits *lim,
                      struct model_et_rank **out, struct sc_error *err);
int model_et_read_file(const char *path, const struct model_limits *lim, struct model_et_rank **out,
                       struct sc_error *err);
void model_et_rank_free(struct model_et_rank *r); /* NULL-safe */

/* The rank a file's name gives it: the N of <prefix>.N.et, or -1. */
int model_et_name_rank(const char *path);

/* Whether path holds Chakra ET: a file whose first frame decodes as a
 * GlobalMetadata (a Kineto trace, gzip or tar never does), or a folder
 * holding .et files. */
int model_et_is_et(const char *path, int *yes, struct sc_error *err);

#endif
