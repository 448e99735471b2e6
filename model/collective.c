/* model/collective.c: collective names and dtypes (collective.h). */
#include "model/collective.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "model/trace.h"

#include "common/banned.h"

static const char *const op_names[MODEL_COLL_OP_COUNT] = {
    "unknown", "allreduce", "allgather", "reducescatter", "alltoall", "broadcast",
    "reduce", "gather", "scatter", "sendrecv", "send", "recv", "barrier",
};

const char *model_coll_op_name(enum model_coll_op op)
{
    return (unsigned)op < MODEL_COLL_OP_COUNT ? op_names[op] : "unknown";
}

int model_is_comm_kernel(const char *k)
{
    char c = (char)(k[0] | 0x20); /* 'n' or 'r' whatever its case; most names begin otherwise */
    return (c == 'n' || c == 'r') && (strncasecmp(k, "nccl", 4) == 0 || strncasecmp(k, "rccl", 4) == 0);
}

enum model_coll_op model_coll_op_parse(const char *name)
{
    char s[96];
    size_t n = 0;
    /* a kernel: what follows "Kernel_" ("ncclKernel_AllReduce_RING.."); an
     * annotation: what follows "nccl:" ("nccl:all_reduce") */
    if (model_is_comm_kernel(name)) {
        const char *k = strstr(name, "Kernel_");
        if (k)
            name = k + 7;
        else if (name[4] == ':')
            name += 5;
    }
    /* lowercase letters only, up to the argument list */
    for (const char *p = name; *p && *p != '(' && n + 1 < sizeof s; p++)
        if (isalpha((unsigned char)*p))
            s[n++] = (char)tolower((unsigned char)*p);
    s[n] = '\0';
    static const struct {
        const char *prefix;
        enum model_coll_op op;
    } table[] = {
        {"allreduce", MODEL_COLL_ALLREDUCE},
        {"allgather", MODEL_COLL_ALLGATHER},
        {"reducescatter", MODEL_COLL_REDUCESCATTER},
        {"alltoall", MODEL_COLL_ALLTOALL},
        {"broadcast", MODEL_COLL_BROADCAST},
        {"sendrecv", MODEL_COLL_SENDRECV},
        {"barrier", MODEL_COLL_BARRIER},
        {"reduce", MODEL_COLL_REDUCE},
        {"gather", MODEL_COLL_GATHER},
        {"scatter", MODEL_COLL_SCATTER},
        {"send", MODEL_COLL_SEND},
        {"recv", MODEL_COLL_RECV},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strncmp(s, table[i].prefix, strlen(table[i].prefix)) == 0)
            return table[i].op;
    return MODEL_COLL_UNKNOWN;
}

int model_dtype_bytes(const char *d)
{
    static const struct {
        const char *name;
        int bytes;
    } table[] = {
        {"float", 4}, {"float32", 4}, {"double", 8}, {"float64", 8}, {"half", 2},
        {"float16", 2}, {"bfloat16", 2}, {"long", 8}, {"int64", 8}, {"int", 4},
        {"int32", 4}, {"short", 2}, {"int16", 2}, {"char", 1}, {"int8", 1},
        {"byte", 1}, {"uint8", 1}, {"bool", 1}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1},
        {"complexfloat", 8}, {"complexdouble", 16},
    };
    if (!d)
        return 0;
    if (strncmp(d, "c10::", 5) == 0)
        d += 5;
    if (strncmp(d, "torch.", 6) == 0)
        d += 6;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcasecmp(d, table[i].name) == 0)
            return table[i].bytes;
    return 0;
}

int64_t model_coll_bytes_of(int dtype_bytes, int64_t in_nelems, int64_t out_nelems, enum model_coll_op op)
{
    int64_t nelems = in_nelems;
    if (op == MODEL_COLL_ALLGATHER || (op == MODEL_COLL_RECV && out_nelems > nelems))
        nelems = out_nelems;
    return dtype_bytes > 0 && nelems >= 0 && nelems <= MODEL_COLL_MAX_BYTES / dtype_bytes ? nelems * dtype_bytes : -1;
}

int64_t model_coll_bytes(const struct model_trace *t, const struct model_collective *c, enum model_coll_op op)
{
    int dt = model_dtype_bytes(c->dtype == MODEL_NONE ? NULL : model_str(t, c->dtype));
    return model_coll_bytes_of(dt, c->in_nelems, c->out_nelems, op);
}
