/* estimator/calibrate/mem_samples.c: bytes moved and kernel times of the
 * memory-bound ops of a trace (mem_samples.h), and the fit of the kernel
 * model's HBM fraction on them. */
#include "estimator/calibrate/mem_samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/vec.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/costs/op_kernels.h"
#include "estimator/calibrate/robust_fit.h"
#include "common/banned.h"

/* How an op's inputs turn into bytes. */
enum mem_role {
    ROLE_NONE,
    ROLE_MAP,     /* reads its tensors, writes their broadcast shape */
    ROLE_COMPARE, /* the same, writing bools */
    ROLE_INPLACE, /* reads its tensors, writes its first */
    ROLE_COPY,    /* copy_: reads its second, writes its first */
    ROLE_FILL,    /* writes its first */
    ROLE_DROPOUT  /* native_dropout: reads its input, writes the output and a bool mask */
};

static enum mem_role role_of(const char *name)
{
    static const struct {
        const char *name;
        enum mem_role role;
    } ops[] = {
        {"add", ROLE_MAP}, {"sub", ROLE_MAP}, {"rsub", ROLE_MAP}, {"mul", ROLE_MAP}, {"div", ROLE_MAP},
        {"neg", ROLE_MAP}, {"abs", ROLE_MAP}, {"exp", ROLE_MAP}, {"log", ROLE_MAP}, {"sqrt", ROLE_MAP},
        {"rsqrt", ROLE_MAP}, {"reciprocal", ROLE_MAP}, {"pow", ROLE_MAP}, {"sigmoid", ROLE_MAP},
        {"tanh", ROLE_MAP}, {"relu", ROLE_MAP}, {"gelu", ROLE_MAP}, {"silu", ROLE_MAP},
        {"clamp", ROLE_MAP}, {"clamp_min", ROLE_MAP}, {"clamp_max", ROLE_MAP}, {"where", ROLE_MAP},
        {"threshold_backward", ROLE_MAP}, {"sigmoid_backward", ROLE_MAP}, {"tanh_backward", ROLE_MAP},
        {"gelu_backward", ROLE_MAP}, {"silu_backward", ROLE_MAP}, {"native_dropout_backward", ROLE_MAP},
        {"eq", ROLE_COMPARE}, {"ne", ROLE_COMPARE}, {"lt", ROLE_COMPARE}, {"le", ROLE_COMPARE},
        {"gt", ROLE_COMPARE}, {"ge", ROLE_COMPARE},
        {"add_", ROLE_INPLACE}, {"sub_", ROLE_INPLACE}, {"mul_", ROLE_INPLACE}, {"div_", ROLE_INPLACE},
        {"neg_", ROLE_INPLACE}, {"exp_", ROLE_INPLACE}, {"sqrt_", ROLE_INPLACE}, {"sigmoid_", ROLE_INPLACE},
        {"tanh_", ROLE_INPLACE}, {"relu_", ROLE_INPLACE}, {"clamp_", ROLE_INPLACE},
        {"clamp_min_", ROLE_INPLACE}, {"clamp_max_", ROLE_INPLACE}, {"masked_fill_", ROLE_INPLACE},
        {"addcmul_", ROLE_INPLACE}, {"addcdiv_", ROLE_INPLACE}, {"lerp_", ROLE_INPLACE},
        {"copy_", ROLE_COPY}, {"fill_", ROLE_FILL}, {"zero_", ROLE_FILL},
        {"native_dropout", ROLE_DROPOUT}, {"dropout", ROLE_DROPOUT},
    };
    if (!name || strncmp(name, "aten::", 6) != 0)
        return ROLE_NONE;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(name + 6, ops[i].name) == 0)
            return ops[i].role;
    return ROLE_NONE;
}

/* The element size of a tensor input's type; 0 for an input that is not a
 * tensor ("Scalar", "" for ints, bools and None), -1 for one that cannot
 * be counted (a tensor list, an unknown type). */
static int element_size(const char *type)
{
    static const struct {
        const char *name;
        int size;
    } types[] = {
        {"float", 4}, {"double", 8}, {"Half", 2}, {"BFloat16", 2}, {"long", 8}, {"int64_t", 8},
        {"int", 4}, {"short", 2}, {"signed char", 1}, {"unsigned char", 1}, {"bool", 1},
        {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"complex<float>", 8}, {"complex<double>", 16},
    };
    if (!type)
        return -1;
    if (strcmp(type, "Scalar") == 0 || type[0] == '\0')
        return 0;
    if (strncmp(type, "c10::", 5) == 0)
        type += 5;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(type, types[i].name) == 0)
            return types[i].size;
    return -1;
}

#define MAX_RANK 16
#define MAX_TENSORS 8
#define MAX_TENSOR_BYTES 0x1p50 /* 1 PiB: more than any GPU holds */

struct tensor {
    int rank, size;
    double dim[MAX_RANK];
    double numel;
};

/* Tensor i of an op from its dims (a list of integers >= 0, at most
 * MAX_TENSOR_BYTES in all); 0 on success. */
static int tensor_of(json_t *dims, int size, struct tensor *t)
{
    size_t n = json_array_size(dims);
    if (!json_is_array(dims) || n > MAX_RANK)
        return -1;
    t->rank = (int)n;
    t->size = size;
    t->numel = 1;
    for (size_t j = 0; j < n; j++) {
        json_t *v = json_array_get(dims, j);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return -1;
        t->dim[j] = (double)json_integer_value(v);
        t->numel *= t->dim[j];
    }
    return t->numel * size <= MAX_TENSOR_BYTES ? 0 : -1;
}

/* The elements of the broadcast shape of t[0..n); -1 when they do not
 * broadcast. */
static double broadcast_numel(const struct tensor *t, int n)
{
    int rank = 0;
    double numel = 1;
    for (int i = 0; i < n; i++)
        rank = t[i].rank > rank ? t[i].rank : rank;
    for (int d = 1; d <= rank; d++) { /* from the last dim */
        double size = 1;
        for (int i = 0; i < n; i++) {
            double s = d <= t[i].rank ? t[i].dim[t[i].rank - d] : 1;
            if (s != 1 && size != 1 && s != size)
                return -1;
            if (s != 1)
                size = s;
        }
        numel *= size;
    }
    return numel;
}

/* The bytes moved by an op of `role` with tensors t[0..n). */
static double bytes_of(enum mem_role role, const struct tensor *t, int n)
{
    double read = 0, out;
    int out_size = 0;
    for (int i = 0; i < n; i++)
        read += t[i].numel * t[i].size;
    switch (role) {
    case ROLE_FILL:
        return t[0].numel * t[0].size;
    case ROLE_COPY:
        return n < 2 ? -1 : t[0].numel * t[0].size + t[1].numel * t[1].size;
    case ROLE_INPLACE:
        return read + t[0].numel * t[0].size;
    case ROLE_DROPOUT:
        return read + t[0].numel * (t[0].size + 1);
    default:
        if ((out = broadcast_numel(t, n)) < 0)
            return -1;
        for (int i = 0; i < n; i++) /* the widest input of the full shape */
            if (t[i].numel == out && t[i].size > out_size)
                out_size = t[i].size;
        for (int i = 0; i < n && !out_size; i++) /* none: the widest */
            out_size = t[i].size > out_size ? t[i].size : out_size;
        return read + out * (role == ROLE_COMPARE ? 1 : out_size);
    }
}

int calib_mem_op_bytes(const char *name, const char *dims_text, const char *types_text, double *bytes,
                 struct sc_error *err)
{
    enum mem_role role = role_of(name);
    struct tensor t[MAX_TENSORS];
    int n = 0, rc = SC_OK;
    if (role == ROLE_NONE)
        return sc_error_set(err, SC_EINVAL, "'%.64s' is not a memory-bound op", name ? name : "");
    if (!dims_text || !types_text)
        return sc_error_set(err, SC_EPARSE, "no Input Dims or Input type");
    json_t *dims = json_loads(dims_text, 0, NULL), *types = json_loads(types_text, 0, NULL);
    if (!json_is_array(dims) || !json_is_array(types) || json_array_size(dims) != json_array_size(types)) {
        rc = sc_error_set(err, SC_EPARSE, "Input Dims and Input type are not lists of one length");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(types); i++) {
        int size = element_size(json_string_value(json_array_get(types, i)));
        if (size < 0 || (size > 0 && n == MAX_TENSORS)) {
            rc = sc_error_set(err, SC_EPARSE, size < 0 ? "input %zu: not a tensor of a known type"
                                                       : "input %zu: more than 8 tensors", i);
            goto out;
        }
        if (size && tensor_of(json_array_get(dims, i), size, &t[n++])) {
            rc = sc_error_set(err, SC_EPARSE, "input %zu: dims are not a list of integers >= 0 of at most 1 PiB", i);
            goto out;
        }
    }
    if (n == 0 || !((*bytes = bytes_of(role, t, n)) >= 0) || !isfinite(*bytes))
        rc = sc_error_set(err, SC_EPARSE, n ? "the tensors do not fit the op (too few, too large, or shapes that "
                                              "do not broadcast)"
                                            : "no tensor input");
out:
    json_decref(dims);
    json_decref(types);
    return rc;
}

static int elementwise_kernel(const char *name)
{
    return name && (strstr(name, "elementwise") || strstr(name, "vectorized") || strstr(name, "kernel_vec"));
}

int calib_mem_samples_from_trace(const struct model_trace *t, struct mem_samples *out, struct mem_skips *skips,
                           struct sc_error *err)
{
    struct op_kernels ok;
    int status = cost_op_kernels_join(t, &ok, err);
    if (!status)
        status = calib_mem_samples_of_ops(t, &ok, out, skips, err);
    cost_op_kernels_release(&ok);
    return status;
}

int calib_mem_samples_of_ops(const struct model_trace *t, const struct op_kernels *ops, struct mem_samples *out,
                       struct mem_skips *skips, struct sc_error *err)
{
    const struct op_kernels ok = *ops;
    struct sc_error why;
    int status = SC_OK;

    for (size_t g = 0; g < ok.n_ops && !status; g++) {
        const struct op_launch *l = &ok.ops[g];
        const struct model_event *o = &t->events[l->op];
        if (role_of(model_str(t, o->name)) == ROLE_NONE)
            continue;
        struct mem_sample s = {.device = -1, .op = l->op};
        const struct model_op_args *in = model_event_args(t, o);
        if (calib_mem_op_bytes(model_str(t, o->name), in ? model_str(t, in->input_dims) : NULL,
                         in ? model_str(t, in->input_types) : NULL, &s.bytes, &why)) {
            if (skips)
                skips->unreadable++;
            continue;
        }
        for (uint32_t j = 0; j < l->n && s.kernels >= 0; j++) {
            const struct model_event *k = &t->events[ok.kernel[l->first + j]];
            if (!elementwise_kernel(model_str(t, k->name))) {
                s.kernels = -1;
                break;
            }
            s.measured_us += (double)k->dur / 1000;
            s.kernels++;
            const struct model_info *ki = model_event_info(t, k);
            if (ki)
                s.device = ki->device;
        }
        if (s.kernels < 0) {
            if (skips)
                skips->other_kernel++;
            continue;
        }
        if (sc_vec_reserve((void **)&out->v, &out->cap, out->n + 1, sizeof *out->v))
            status = sc_error_set(err, SC_ENOMEM, "out of memory");
        else
            out->v[out->n++] = s;
    }
    return status;
}

void calib_mem_samples_release(struct mem_samples *s)
{
    if (!s)
        return;
    free(s->v);
    memset(s, 0, sizeof *s);
}

int calib_mem_samples_check(const struct kernel_params *p, const struct hw_profile *hw,
                      const struct mem_sample *s, size_t n, struct estimate_check *out,
                      struct sc_error *err)
{
    double *ratio = malloc((n + 1) * sizeof *ratio);
    size_t m = 0;
    memset(out, 0, sizeof *out);
    if (!ratio)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) /* a zero-length record has no error to speak of */
        if (s[i].measured_us > 0)
            ratio[m++] = (cost_kernel_memory_us(p, hw, s[i].bytes) + p->kernel_fixed_us * (s[i].kernels - 1)) /
                         s[i].measured_us;
    int rc = cost_estimate_check_ratios(ratio, m, out) ? sc_error_set(err, SC_ENOMEM, "out of memory") : SC_OK;
    free(ratio);
    return rc;
}

#define MIN_FIT_SAMPLES 8

int calib_mem_samples_fit(const struct kernel_params *base_in, const struct hw_profile *hw,
                    const struct mem_sample *s, size_t n, struct kernel_params *out, struct mem_fit *fit,
                    struct sc_error *err)
{
    const struct kernel_params b = *base_in, *base = &b; /* *out may be *base_in */
    struct mem_sample *big = malloc((n + 1) * sizeof *big);
    double *t = malloc((3 * n + 1) * sizeof *t), *fixed = t + n, *hbm = t + 2 * n, c, se;
    size_t m = 0;
    int status = SC_OK;
    memset(fit, 0, sizeof *fit);
    *out = *base;
    if (!big || !t) {
        status = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (s[i].measured_us > 0 && s[i].bytes >= MEM_FIT_MIN_BYTES) {
            big[m] = s[i];
            t[m] = s[i].measured_us;
            fixed[m] = base->kernel_fixed_us * s[i].kernels;
            hbm[m++] = s[i].bytes / (hw->hbm_gbps * 1e3); /* at the full bandwidth */
        }
    if (m < MIN_FIT_SAMPLES) {
        status = sc_error_set(err, SC_EINVAL, "%zu memory-bound ops of at least 64 MiB with a time: at least %d "
                              "are needed to fit", m, MIN_FIT_SAMPLES);
        goto out;
    }
    const double *x[] = {hbm};
    if ((status = calib_mem_samples_check(base, hw, big, m, &fit->before, err)) ||
        (status = calib_robust_fit_relative(t, fixed, x, 1, m, "memory-bound", &c, &se, err)))
        goto out;
    out->hbm_fraction = 1 / c;
    if (!(c > 0) || cost_kernel_params_check(out, err)) {
        status = sc_error_set(err, SC_ENUMERIC, "the memory-bound fit gives an unphysical hbm_fraction (%.3g)",
                              1 / c);
        *out = *base;
        goto out;
    }
    fit->samples = m;
    fit->before_fraction = base->hbm_fraction;
    fit->fraction_se = se / (c * c);
    status = calib_mem_samples_check(out, hw, big, m, &fit->after, err);
out:
    free(big);
    free(t);
    return status;
}
