/* estimator/calibrate/gemm_samples.c: GEMM shapes and kernel times from a trace
 * (gemm_samples.h): each kernel adds its duration to the sample of the op
 * that launched it (op_kernels.h). */
#include "estimator/calibrate/gemm_samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/i64map.h"
#include "common/vec.h"
#include "estimator/costs/kernel_model.h"
#include "estimator/costs/op_kernels.h"
#include "estimator/calibrate/robust_fit.h"
#include "common/banned.h"

enum gemm_op { OP_NONE, OP_MM, OP_ADDMM, OP_BMM, OP_BADDBMM, OP_LINEAR, OP_MATMUL };

static enum gemm_op gemm_op(const char *name)
{
    static const struct {
        const char *name;
        enum gemm_op op;
    } ops[] = {
        {"aten::mm", OP_MM},         {"aten::addmm", OP_ADDMM},   {"aten::bmm", OP_BMM},
        {"aten::baddbmm", OP_BADDBMM}, {"aten::linear", OP_LINEAR}, {"aten::matmul", OP_MATMUL},
    };
    for (size_t i = 0; name && i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(name, ops[i].name) == 0)
            return ops[i].op;
    return OP_NONE;
}

/* The dims of input i as numbers; returns how many (0 when not a list of
 * positive integers, at most 8). */
static int dims_of(json_t *dims, size_t i, double *d)
{
    json_t *a = json_array_get(dims, i);
    size_t n = json_array_size(a);
    if (!json_is_array(a) || n == 0 || n > 8)
        return 0;
    for (size_t j = 0; j < n; j++) {
        json_t *v = json_array_get(a, j);
        if (!json_is_integer(v) || json_integer_value(v) <= 0)
            return 0;
        d[j] = (double)json_integer_value(v);
    }
    return (int)n;
}

/* (M, N, K, batch) from an op's Input Dims; 0 on success. */
static int shape_of(enum gemm_op op, const char *text, struct gemm_sample *s)
{
    json_t *dims = json_loads(text, 0, NULL);
    double a[8], b[8];
    int na, nb, rc = -1;
    size_t first = op == OP_ADDMM || op == OP_BADDBMM ? 1 : 0; /* after the bias */
    if (!json_is_array(dims))
        goto out;
    na = dims_of(dims, first, a);
    nb = dims_of(dims, first + 1, b);
    s->batch = 1;
    switch (op) {
    case OP_MM:
    case OP_ADDMM: /* [M, K] x [K, N] */
        if (na != 2 || nb != 2 || a[1] != b[0])
            goto out;
        s->m = a[0], s->k = a[1], s->n = b[1];
        break;
    case OP_BMM:
    case OP_BADDBMM: /* [B, M, K] x [B, K, N] */
        if (na != 3 || nb != 3 || a[0] != b[0] || a[2] != b[1])
            goto out;
        s->batch = a[0], s->m = a[1], s->k = a[2], s->n = b[2];
        break;
    case OP_LINEAR: /* [..., K] x [N, K]^T */
        if (na < 1 || nb != 2 || a[na - 1] != b[1])
            goto out;
        s->m = 1;
        for (int i = 0; i < na - 1; i++)
            s->m *= a[i];
        s->k = b[1], s->n = b[0];
        break;
    case OP_MATMUL: /* [..., M, K] x [K, N], or batched [B, M, K] x [B, K, N] */
        if (na >= 2 && nb == 2 && a[na - 1] == b[0]) {
            s->m = 1;
            for (int i = 0; i < na - 1; i++)
                s->m *= a[i];
            s->k = b[0], s->n = b[1];
        } else if (na == 3 && nb == 3 && a[0] == b[0] && a[2] == b[1]) {
            s->batch = a[0], s->m = a[1], s->k = a[2], s->n = b[2];
        } else {
            goto out;
        }
        break;
    default:
        goto out;
    }
    rc = 0;
out:
    json_decref(dims);
    return rc;
}

int calib_gemm_torch_dtype(const char *t, enum hw_dtype *d)
{
    static const struct {
        const char *name;
        enum hw_dtype d;
    } map[] = {{"float", HW_FP32}, {"Half", HW_FP16}, {"BFloat16", HW_BF16},
               {"Float8_e4m3fn", HW_FP8}, {"Float8_e5m2", HW_FP8}};
    if (!t)
        return -1;
    if (strncmp(t, "c10::", 5) == 0)
        t += 5;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(t, map[i].name) == 0) {
            *d = map[i].d;
            return 0;
        }
    return -1;
}

/* The dtype of the first matrix operand from the op's Input type text. */
static int dtype_of(enum gemm_op op, const char *text, enum hw_dtype *d)
{
    json_t *types = json_loads(text, 0, NULL);
    size_t first = op == OP_ADDMM || op == OP_BADDBMM ? 1 : 0;
    int rc = calib_gemm_torch_dtype(json_string_value(json_array_get(types, first)), d);
    json_decref(types);
    return rc;
}

static int tf32_kernel(const char *name)
{
    return name && (strstr(name, "tf32") || strstr(name, "s1688") || strstr(name, "s16816"));
}

const char *calib_gemm_device_name(const struct model_trace *t, int32_t device)
{
    for (size_t i = 0; i < t->n_devices; i++)
        if (t->devices[i].id == device)
            return model_str(t, t->devices[i].name);
    return NULL;
}

int calib_gemm_samples_from_trace(const struct model_trace *t, struct gemm_samples *out, size_t *skipped,
                            struct sc_error *err)
{
    return calib_gemm_samples_of_kernels(t, out, skipped, NULL, err);
}

int calib_gemm_samples_of_kernels(const struct model_trace *t, struct gemm_samples *out, size_t *skipped,
                            uint32_t *sample_of_event, struct sc_error *err)
{
    struct op_kernels ok;
    int status = cost_op_kernels_join(t, &ok, err);
    if (!status)
        status = calib_gemm_samples_of_ops(t, &ok, out, skipped, sample_of_event, err);
    cost_op_kernels_release(&ok);
    return status;
}

/* The shapes of a trace's GEMM ops, each read once per op kind, Input Dims
 * and Input type: those are interned, and a trace repeats a few of them
 * (a layer's GEMMs, step after step), so the JSON texts are parsed once. */
struct shape_memo {
    struct sc_i64map at; /* (dims, types) string ids -> first entry */
    struct parsed {
        enum gemm_op kind;
        int ok;
        double m, n, k, batch;
        enum hw_dtype dtype;
        uint32_t next; /* another kind's entry for the same texts, or MODEL_NONE */
    } *v;
    size_t n, cap;
};

/* The shape and dtype of an op of `kind` with Input Dims and Input type
 * string ids dims and types into s; 0, or -1 when they cannot be read. */
static int shape_memo_get(struct shape_memo *mm, const struct model_trace *t, enum gemm_op kind, uint32_t dims,
                          uint32_t types, struct gemm_sample *s, struct sc_error *err)
{
    int64_t key = (int64_t)((uint64_t)dims << 32 | types);
    uint32_t i = MODEL_NONE, first = MODEL_NONE;
    if (key != INT64_MIN && sc_i64map_get(&mm->at, key, &first))
        for (i = first; i != MODEL_NONE && mm->v[i].kind != kind; i = mm->v[i].next)
            ;
    if (i == MODEL_NONE) {
        const char *dt = model_str(t, dims), *ty = model_str(t, types);
        struct parsed p = {.kind = kind, .next = first};
        struct gemm_sample q = {0};
        p.ok = dt && ty && !shape_of(kind, dt, &q) && !dtype_of(kind, ty, &q.dtype);
        p.m = q.m, p.n = q.n, p.k = q.k, p.batch = q.batch, p.dtype = q.dtype;
        if (mm->n >= MODEL_NONE || sc_vec_reserve((void **)&mm->v, &mm->cap, mm->n + 1, sizeof *mm->v))
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        i = (uint32_t)mm->n;
        mm->v[mm->n++] = p;
        if (key != INT64_MIN && sc_i64map_put(&mm->at, key, i))
            return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    const struct parsed *p = &mm->v[i];
    if (!p->ok)
        return -1;
    s->m = p->m, s->n = p->n, s->k = p->k, s->batch = p->batch, s->dtype = p->dtype;
    return 0;
}

int calib_gemm_samples_of_ops(const struct model_trace *t, const struct op_kernels *ops, struct gemm_samples *out,
                        size_t *skipped, uint32_t *sample_of_event, struct sc_error *err)
{
    const struct op_kernels ok = *ops;
    struct shape_memo memo = {SC_I64MAP_INIT, NULL, 0, 0};
    size_t n_skipped = 0;
    int status = SC_OK;

    if (sample_of_event)
        for (size_t i = 0; i < t->n_events; i++)
            sample_of_event[i] = MODEL_NONE;
    for (size_t g = 0; g < ok.n_ops && !status; g++) {
        const struct op_launch *l = &ok.ops[g];
        const struct model_event *o = &t->events[l->op];
        enum gemm_op kind = gemm_op(model_str(t, o->name));
        if (kind == OP_NONE)
            continue;
        struct gemm_sample s = {.device = -1, .op = l->op};
        const struct model_op_args *in = model_event_args(t, o);
        int got = in && in->input_dims != MODEL_NONE && in->input_types != MODEL_NONE
                      ? shape_memo_get(&memo, t, kind, in->input_dims, in->input_types, &s, err)
                      : -1;
        if (got > 0) {
            status = got;
            break;
        }
        if (got) {
            n_skipped++;
            continue;
        }
        for (uint32_t j = 0; j < l->n; j++) {
            const struct model_event *k = &t->events[ok.kernel[l->first + j]];
            if (sample_of_event)
                sample_of_event[ok.kernel[l->first + j]] = (uint32_t)out->n;
            s.measured_us += (double)k->dur / 1000;
            s.kernels++;
            const struct model_info *ki = model_event_info(t, k);
            if (ki)
                s.device = ki->device;
            if (s.dtype == HW_FP32 && tf32_kernel(model_str(t, k->name)))
                s.dtype = HW_TF32;
        }
        if (sc_vec_reserve((void **)&out->v, &out->cap, out->n + 1, sizeof *out->v))
            status = sc_error_set(err, SC_ENOMEM, "out of memory");
        else
            out->v[out->n++] = s;
    }
    sc_i64map_release(&memo.at);
    free(memo.v);
    if (skipped)
        *skipped = n_skipped;
    return status;
}

void calib_gemm_samples_release(struct gemm_samples *s)
{
    if (!s)
        return;
    free(s->v);
    memset(s, 0, sizeof *s);
}

int calib_gemm_samples_check(const struct kernel_params *p, const struct hw_profile *hw,
                       const struct gemm_sample *s, size_t n, struct estimate_check *out,
                       struct sc_error *err)
{
    memset(out, 0, sizeof *out);
    double *ratio = malloc((n + 1) * sizeof *ratio);
    size_t m = 0;
    int status = SC_OK;
    if (!ratio)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && !status; i++) {
        struct gemm_shape g = {s[i].m, s[i].n, s[i].k, s[i].batch, s[i].dtype};
        struct gemm_estimate e;
        if (!(s[i].measured_us > 0))
            continue; /* a zero-length record: no error to speak of */
        if (!(status = cost_kernel_gemm(p, hw, &g, &e, err)))
            ratio[m++] = e.time_us / s[i].measured_us;
    }
    if (!status && cost_estimate_check_ratios(ratio, m, out))
        status = sc_error_set(err, SC_ENOMEM, "out of memory");
    free(ratio);
    return status;
}

#define MIN_FIT_SAMPLES 8
#define FIT_ROUNDS 8

/* The rows a fit regresses, of the samples with a time (of dtype `only`,
 * or of every dtype when `only` < 0), timed with parameters k: the
 * measured time t, the model's kernel count and its time beyond their
 * fixed cost (bound). *rows gets how many; SC_OK, or cost_kernel_gemm's error. */
static int fit_rows(const struct kernel_params *k, const struct hw_profile *hw, const struct gemm_sample *s,
                    size_t n, int only, double *t, double *kernels, double *bound, size_t *rows,
                    struct sc_error *err)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        struct gemm_shape g = {s[i].m, s[i].n, s[i].k, s[i].batch, s[i].dtype};
        struct gemm_estimate e;
        if (!(s[i].measured_us > 0) || (only >= 0 && s[i].dtype != (enum hw_dtype)only))
            continue;
        int status = cost_kernel_gemm(k, hw, &g, &e, err);
        if (status)
            return status;
        t[m] = s[i].measured_us;
        kernels[m] = e.split_k > 1 ? 2 : 1;
        bound[m] = e.time_us - kernels[m] * k->kernel_fixed_us;
        m++;
    }
    *rows = m;
    return SC_OK;
}

int calib_gemm_samples_fit(const struct kernel_params *base_in, const struct hw_profile *hw,
                     const struct gemm_sample *s, size_t n, struct kernel_params *out,
                     struct gemm_fit *fit, struct sc_error *err)
{
    const struct kernel_params b = *base_in, *base = &b; /* *out may be *base_in */
    memset(fit, 0, sizeof *fit);
    *out = *base;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += s[i].measured_us > 0;
    if (m < MIN_FIT_SAMPLES)
        return sc_error_set(err, SC_EINVAL, "%zu GEMMs with a time: at least %d are needed to fit", m,
                            MIN_FIT_SAMPLES);
    int status = calib_gemm_samples_check(base, hw, s, n, &fit->before, err);
    if (status)
        return status;
    double *t = malloc(3 * m * sizeof *t + 1), *kernels = t + m, *bound = t + 2 * m, c[2], se[2];
    if (!t)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if ((status = fit_rows(base, hw, s, n, -1, t, kernels, bound, &m, err)))
        goto out;
    const double *x[] = {kernels, bound};
    if ((status = calib_robust_fit_relative(t, NULL, x, 2, m, "GEMM", c, se, err)))
        goto out;
    double fixed = c[0], inv_scale = c[1];
    if (!(inv_scale > 0)) {
        status = sc_error_set(err, SC_ENUMERIC, "the GEMM fit failed (a ceiling scale of 1 / %g)", inv_scale);
        goto out;
    }
    out->kernel_fixed_us = fixed;
    out->gemm_ceiling_scale = base->gemm_ceiling_scale / inv_scale;
    if ((status = cost_kernel_params_check(out, err))) {
        status = sc_error_set(err, SC_ENUMERIC, "the GEMM fit gives an unphysical value: %s", err->msg);
        *out = *base;
        goto out;
    }
    fit->samples = m;
    fit->fixed_se_us = se[0];
    fit->scale_se = base->gemm_ceiling_scale * se[1] / (inv_scale * inv_scale);
    status = calib_gemm_samples_check(out, hw, s, n, &fit->after, err);
out:
    free(t);
    return status;
}

int calib_gemm_samples_fit_dtypes(const struct kernel_params *base_in, const struct hw_profile *hw,
                            const struct gemm_sample *s, size_t n, struct kernel_params *out, unsigned *fitted,
                            struct sc_error *err)
{
    const struct kernel_params b = *base_in, *base = &b; /* *out may be *base_in */
    size_t count[HW_DTYPE_COUNT] = {0}, kinds = 0;
    *out = *base;
    *fitted = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].measured_us > 0 && (unsigned)s[i].dtype < HW_DTYPE_COUNT)
            kinds += count[s[i].dtype]++ == 0;
    if (kinds < 2)
        return SC_OK;
    double *t = malloc(3 * n * sizeof *t + 1), *fixed = t + n, *bound = t + 2 * n;
    if (!t)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (int d = 0; d < HW_DTYPE_COUNT; d++) {
        struct kernel_params k = *base;
        int ok = count[d] >= MIN_FIT_SAMPLES;
        /* the bound time is linear in 1 / scale only where compute binds:
         * refit at the scale found until it holds (a few rounds) */
        for (int round = 0; ok && round < FIT_ROUNDS; round++) {
            size_t m;
            struct sc_error why;
            double c, se;
            const double *x[] = {bound};
            ok = fit_rows(&k, hw, s, n, d, t, fixed, bound, &m, &why) == SC_OK;
            for (size_t j = 0; ok && j < m; j++)
                fixed[j] *= k.kernel_fixed_us; /* kernels -> their fixed cost, kept */
            ok = ok && m >= MIN_FIT_SAMPLES && calib_robust_fit_relative(t, fixed, x, 1, m, "GEMM", &c, &se, &why) == SC_OK &&
                 c > 0 && k.dtype_scale[d] / c >= 0.01 && k.dtype_scale[d] / c <= 2;
            if (ok)
                k.dtype_scale[d] /= c;
            if (ok && fabs(c - 1) < 1e-3)
                break;
        }
        if (ok) {
            out->dtype_scale[d] = k.dtype_scale[d];
            *fitted |= 1u << d;
        }
    }
    free(t);
    return SC_OK;
}
