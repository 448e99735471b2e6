/* model/chakra_read.c: a Chakra ET file into a node table (chakra_read.h):
 * frames decoded one at a time by protobuf-c, nodes kept compact, ids
 * resolved, a topological order found. */
#include "model/chakra_read.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <et_def.pb-c.h> /* generated from model/et_def.proto into the build */

#include "common/i64map.h"
#include "common/vec.h"
#include "model/chakra_et.h"
#include "model/collective.h"
#include "model/trace.h"
#include "common/banned.h"

#define OOM(err) sc_error_set(err, SC_ENOMEM, "out of memory")

/* An attribute as an integer, whatever integer type, bool or decimal
 * string holds it; 0 when absent or not a number. */
static int attr_int(const ChakraProtoMsg__AttributeProto *a, int64_t *v)
{
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: *v = a->int32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: *v = a->int64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL: *v = a->uint32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL: *v = (int64_t)(a->uint64_val & INT64_MAX); return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL: *v = a->sint32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL: *v = a->sint64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL: *v = a->fixed32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL: *v = (int64_t)(a->fixed64_val & INT64_MAX); return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL: *v = a->sfixed32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL: *v = a->sfixed64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL: *v = a->bool_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL: {
        char *end;
        errno = 0;
        long long x = strtoll(a->string_val, &end, 10);
        if (end == a->string_val || *end || errno)
            return 0;
        *v = x;
        return 1;
    }
    default: return 0;
    }
}

/* Chakra's CollectiveCommType (a number, or its name) as an operation. */
static int8_t coll_of_type(const ChakraProtoMsg__AttributeProto *a)
{
    static const int8_t ops[] = {MODEL_COLL_ALLREDUCE, MODEL_COLL_REDUCE,    MODEL_COLL_ALLGATHER,
                                 MODEL_COLL_GATHER,    MODEL_COLL_SCATTER,   MODEL_COLL_BROADCAST,
                                 MODEL_COLL_ALLTOALL,  MODEL_COLL_REDUCESCATTER, MODEL_COLL_REDUCESCATTER,
                                 MODEL_COLL_BARRIER};
    int64_t v;
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL) {
        const ProtobufCEnumValue *e =
            protobuf_c_enum_descriptor_get_value_by_name(&chakra_proto_msg__collective_comm_type__descriptor,
                                                         a->string_val);
        if (e)
            return ops[e->value];
    }
    return attr_int(a, &v) && v >= 0 && v < (int64_t)(sizeof ops / sizeof ops[0]) ? ops[v] : MODEL_COLL_UNKNOWN;
}

/* A collective's operation from its op's name, its namespace left out
 * ("c10d::allreduce_(3)" is an all-reduce). */
static int8_t coll_of_name(const char *name)
{
    const char *base = name;
    for (const char *p = name; *p && *p != '('; p++)
        if (p[0] == ':' && p[1] == ':')
            base = p + 2;
    return (int8_t)model_coll_op_parse(base);
}

static int intern(struct model_et_rank *r, const char *s, uint32_t *id)
{
    return sc_strtab_intern(&r->strings, s ? s : "", s ? strlen(s) : 0, id);
}

/* Node message nd into the table (its dependencies as ids for now). */
static int add_node(struct model_et_rank *r, const ChakraProtoMsg__Node *nd, size_t *cap, uint64_t **dep_ids,
                    size_t *cap_deps)
{
    if (sc_vec_reserve((void **)&r->nodes, cap, r->n_nodes + 1, sizeof *r->nodes) ||
        sc_vec_reserve((void **)dep_ids, cap_deps, r->n_deps + nd->n_data_deps, sizeof **dep_ids))
        return -1;
    struct model_et_node *x = &r->nodes[r->n_nodes];
    *x = (struct model_et_node){.id = nd->id, .pg = UINT32_MAX, .comm_size = -1, .src = -1, .dst = -1, .tag = -1,
                                .type = (uint8_t)((unsigned)nd->type < MODEL_ET_TYPE_COUNT ? (unsigned)nd->type : MODEL_ET_INVALID),
                                .dep0 = (uint32_t)r->n_deps, .n_deps = (uint32_t)nd->n_data_deps};
    x->dur_ns = nd->duration_micros > (uint64_t)INT64_MAX / 1000 ? INT64_MAX : (int64_t)nd->duration_micros * 1000;
    if (intern(r, nd->name, &x->name))
        return -1;
    for (size_t k = 0; k < nd->n_attr; k++) {
        const ChakraProtoMsg__AttributeProto *a = nd->attr[k];
        int64_t v = 0;
        if (!a->name)
            continue;
        if (!strcmp(a->name, "is_cpu_op"))
            x->cpu = attr_int(a, &v) && v != 0;
        else if (!strcmp(a->name, "comm_type"))
            x->coll = coll_of_type(a);
        else if (!strcmp(a->name, "comm_size") && attr_int(a, &v) && v >= 0)
            x->comm_size = v;
        else if (!strcmp(a->name, "comm_src") && attr_int(a, &v) && v >= 0 && v <= INT32_MAX)
            x->src = (int32_t)v;
        else if (!strcmp(a->name, "comm_dst") && attr_int(a, &v) && v >= 0 && v <= INT32_MAX)
            x->dst = (int32_t)v;
        else if (!strcmp(a->name, "comm_tag") && attr_int(a, &v) && v >= 0 && v <= INT32_MAX)
            x->tag = (int32_t)v;
        else if (!strcmp(a->name, "pg_name")) {
            char num[24];
            const char *s = a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL ? a->string_val : NULL;
            if (!s && attr_int(a, &v)) {
                snprintf(num, sizeof num, "%lld", (long long)v);
                s = num;
            }
            if (s && intern(r, s, &x->pg))
                return -1;
        }
    }
    if (x->type == MODEL_ET_COMM_SEND)
        x->coll = MODEL_COLL_SEND;
    else if (x->type == MODEL_ET_COMM_RECV)
        x->coll = MODEL_COLL_RECV;
    else if (x->type == MODEL_ET_COMM_COLL && x->coll == MODEL_COLL_UNKNOWN)
        x->coll = coll_of_name(nd->name ? nd->name : "");
    for (size_t k = 0; k < nd->n_data_deps; k++)
        (*dep_ids)[r->n_deps++] = nd->data_deps[k];
    r->n_nodes++;
    return 0;
}

/* Dependencies from ids to node indices; duplicate ids, dependencies on
 * no node and cycles refused; the topological order found. */
static int resolve(struct model_et_rank *r, const uint64_t *dep_ids, struct sc_error *err)
{
    struct sc_i64map ids = SC_I64MAP_INIT;
    size_t n = r->n_nodes;
    uint32_t *indeg = calloc(n ? n : 1, sizeof *indeg), *succ_at = calloc(n + 1, sizeof *succ_at);
    uint32_t *succ = malloc((r->n_deps ? r->n_deps : 1) * sizeof *succ);
    r->deps = malloc((r->n_deps ? r->n_deps : 1) * sizeof *r->deps);
    r->order = malloc((n ? n : 1) * sizeof *r->order);
    int rc = SC_OK;
    if (!indeg || !succ_at || !succ || !r->deps || !r->order) {
        rc = OOM(err);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t seen;
        if ((int64_t)r->nodes[i].id == INT64_MIN || sc_i64map_get(&ids, (int64_t)r->nodes[i].id, &seen)) {
            rc = sc_error_set(err, SC_EPARSE, "'%s': node %zu: id %llu given twice", r->source, i,
                              (unsigned long long)r->nodes[i].id);
            goto out;
        }
        if (sc_i64map_put(&ids, (int64_t)r->nodes[i].id, (uint32_t)i)) {
            rc = OOM(err);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const struct model_et_node *x = &r->nodes[i];
        for (uint32_t d = x->dep0; d < x->dep0 + x->n_deps; d++) {
            uint32_t on;
            if ((int64_t)dep_ids[d] == INT64_MIN || !sc_i64map_get(&ids, (int64_t)dep_ids[d], &on)) {
                rc = sc_error_set(err, SC_EPARSE, "'%s': node %llu depends on node %llu, which the file does not hold",
                                  r->source, (unsigned long long)x->id, (unsigned long long)dep_ids[d]);
                goto out;
            }
            assert(d < r->n_deps && on < n);
            r->deps[d] = on;
            succ_at[on + 1]++;
        }
    }
    for (size_t i = 0; i < n; i++)
        succ_at[i + 1] += succ_at[i];
    assert(succ_at[n] == r->n_deps); /* every dependency some node's successor */
    for (size_t i = 0; i < n; i++)
        for (uint32_t d = r->nodes[i].dep0; d < r->nodes[i].dep0 + r->nodes[i].n_deps; d++) {
            assert(succ_at[r->deps[d]] + indeg[r->deps[d]] < succ_at[r->deps[d] + 1]);
            succ[succ_at[r->deps[d]] + indeg[r->deps[d]]++] = (uint32_t)i;
        }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++)
        if (!(indeg[i] = r->nodes[i].n_deps))
            r->order[tail++] = (uint32_t)i;
    while (head < tail) {
        assert(tail <= n); /* Kahn's order: each node queued once */
        uint32_t x = r->order[head++];
        for (uint32_t k = succ_at[x]; k < succ_at[x + 1]; k++)
            if (--indeg[succ[k]] == 0)
                r->order[tail++] = succ[k];
    }
    if (tail != n)
        rc = sc_error_set(err, SC_EPARSE, "'%s': the dependencies of %zu of its %zu nodes form a cycle", r->source,
                          n - tail, n);
out:
    sc_i64map_release(&ids);
    free(indeg);
    free(succ_at);
    free(succ);
    return rc;
}

void model_et_rank_free(struct model_et_rank *r)
{
    if (!r)
        return;
    free(r->source);
    sc_strtab_release(&r->strings);
    free(r->nodes);
    free(r->deps);
    free(r->order);
    free(r);
}

/* The GlobalMetadata's version and "rank" attribute. */
static int read_metadata(struct model_et_rank *r, const ChakraProtoMsg__GlobalMetadata *m)
{
    for (size_t k = 0; k < m->n_attr; k++) {
        int64_t v;
        if (m->attr[k]->name && !strcmp(m->attr[k]->name, "rank") && attr_int(m->attr[k], &v) && v >= 0 &&
            v <= INT32_MAX)
            r->rank = (int)v;
    }
    return intern(r, m->version, &r->version);
}

int model_et_read_mem(const void *buf, size_t n, const char *source, const struct model_limits *lim,
                      struct model_et_rank **out, struct sc_error *err)
{
    struct model_et_cursor c = {buf, n, 0};
    struct model_et_rank *r = calloc(1, sizeof *r);
    uint64_t *dep_ids = NULL;
    size_t cap = 0, cap_deps = 0;
    uint64_t max_nodes = lim ? lim->max_events : MODEL_MAX_EVENTS;
    const unsigned char *msg;
    size_t len;
    int rc = SC_OK, more;
    *out = NULL;
    if (!r || !(r->source = strdup(source)) || sc_strtab_init(&r->strings)) {
        model_et_rank_free(r);
        return OOM(err);
    }
    r->rank = -1;
    if ((more = model_et_next(&c, &msg, &len, err)) <= 0) {
        rc = more < 0 ? (int)err->code : sc_error_set(err, SC_EPARSE, "'%s': empty: no GlobalMetadata", source);
        goto out;
    }
    ChakraProtoMsg__GlobalMetadata *meta = chakra_proto_msg__global_metadata__unpack(NULL, len, msg);
    if (!meta) {
        rc = sc_error_set(err, SC_EPARSE, "'%s': the first message is not a GlobalMetadata", source);
        err->offset = 0;
        goto out;
    }
    rc = read_metadata(r, meta) ? OOM(err) : SC_OK;
    chakra_proto_msg__global_metadata__free_unpacked(meta, NULL);
    while (rc == SC_OK) {
        size_t at = c.off;
        if ((more = model_et_next(&c, &msg, &len, err)) <= 0) {
            rc = more < 0 ? (int)err->code : SC_OK;
            break;
        }
        if (r->n_nodes >= max_nodes) {
            rc = sc_error_set(err, SC_ELIMIT, "'%s': more than %llu nodes", source, (unsigned long long)max_nodes);
            break;
        }
        ChakraProtoMsg__Node *nd = chakra_proto_msg__node__unpack(NULL, len, msg);
        if (!nd) {
            rc = sc_error_set(err, SC_EPARSE, "'%s': node %zu at byte %zu does not decode", source, r->n_nodes, at);
            err->offset = (int64_t)at;
            break;
        }
        if (add_node(r, nd, &cap, &dep_ids, &cap_deps))
            rc = OOM(err);
        chakra_proto_msg__node__free_unpacked(nd, NULL);
    }
    if (rc == SC_OK)
        rc = resolve(r, dep_ids, err);
out:
    if (rc && err->msg[0] && !strstr(err->msg, source))
        sc_error_prefix(err, "'%s'", source);
    free(dep_ids);
    if (rc)
        model_et_rank_free(r);
    else
        *out = r;
    return rc;
}

int model_et_read_file(const char *path, const struct model_limits *lim, struct model_et_rank **out,
                       struct sc_error *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    *out = NULL;
    if (!f)
        return sc_error_set(err, errno == ENOENT ? SC_ENOTFOUND : SC_EIO, "cannot open '%s': %s", path,
                            strerror(errno));
    for (;;) {
        if (sc_vec_reserve((void **)&buf, &cap, n + (1 << 20), 1)) {
            fclose(f);
            free(buf);
            return OOM(err);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    int rc = bad ? sc_error_set(err, SC_EIO, "cannot read '%s'", path) : model_et_read_mem(buf, n, path, lim, out, err);
    free(buf);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

int model_et_name_rank(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n < 4 || strcmp(base + n - 3, ".et"))
        return -1;
    size_t end = n - 3, start = end;
    while (start > 0 && base[start - 1] >= '0' && base[start - 1] <= '9')
        start--;
    if (start == end || end - start > 9 || (start > 0 && base[start - 1] != '.'))
        return -1;
    return (int)strtol(base + start, NULL, 10);
}

int model_et_is_et(const char *path, int *yes, struct sc_error *err)
{
    struct stat st;
    *yes = 0;
    if (stat(path, &st))
        return sc_error_set(err, errno == ENOENT ? SC_ENOTFOUND : SC_EIO, "cannot open '%s': %s", path,
                            strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && !*yes && (e = readdir(d)))
            *yes = e->d_name[0] != '.' && ends_with(e->d_name, ".et");
        if (d)
            closedir(d);
        return SC_OK;
    }
    if (ends_with(path, ".et")) {
        *yes = 1;
        return SC_OK;
    }
    /* no name to go by (an uploaded blob): the first frame decodes as a
     * GlobalMetadata, and the file does not start as JSON, gzip or tar do */
    unsigned char head[4096];
    FILE *f = fopen(path, "rb");
    if (!f)
        return sc_error_set(err, SC_EIO, "cannot open '%s': %s", path, strerror(errno));
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    struct model_et_cursor c = {head, n, 0};
    const unsigned char *msg;
    size_t len;
    struct sc_error ignored;
    if (!n || (head[0] && strchr("{[ \t\r\n\x1f", head[0])) || model_et_next(&c, &msg, &len, &ignored) != 1)
        return SC_OK;
    ChakraProtoMsg__GlobalMetadata *m = chakra_proto_msg__global_metadata__unpack(NULL, len, msg);
    *yes = m != NULL;
    if (m)
        chakra_proto_msg__global_metadata__free_unpacked(m, NULL);
    return SC_OK;
}
