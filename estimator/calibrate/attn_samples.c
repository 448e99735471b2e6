/* estimator/calibrate/attn_samples.c: fused attention samples from traces and the
 * fit of the kernel model's flash attention throughput (attn_samples.h). */
#include "estimator/calibrate/attn_samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/vec.h"
#include "estimator/calibrate/gemm_samples.h"
#include "estimator/costs/op_kernels.h"
#include "estimator/calibrate/robust_fit.h"
#include "common/banned.h"

/* Where an op's schema keeps what a sample needs: the query and key among
 * its Input Dims, their layout, and is_causal (or the efficient kernels'
 * custom_mask_type: 0 none, 1 and 2 causal) among its Concrete Inputs. */
static const struct attn_op {
    const char *name;
    int backward;
    int bshd;          /* [batch, seq, heads, dim]; else [batch, heads, seq, dim] */
    int query, key;    /* argument indices */
    int causal;        /* argument index of is_causal or custom_mask_type */
    int mask_type;     /* `causal` is custom_mask_type */
} attn_ops[] = {
    {"aten::_flash_attention_forward", 0, 1, 0, 1, 8, 0},
    {"aten::_flash_attention_backward", 1, 1, 1, 2, 11, 0},
    {"aten::_efficient_attention_forward", 0, 1, 0, 1, 9, 1},
    {"aten::_efficient_attention_backward", 1, 1, 1, 2, 14, 1},
    {"aten::_cudnn_attention_forward", 0, 0, 0, 1, 10, 0},
    {"aten::_cudnn_attention_backward", 1, 0, 1, 2, 14, 0},
    {"aten::_scaled_dot_product_flash_attention", 0, 0, 0, 1, 4, 0},
    {"aten::_scaled_dot_product_flash_attention_backward", 1, 0, 1, 2, 11, 0},
    {"aten::_scaled_dot_product_efficient_attention", 0, 0, 0, 1, 6, 0},
    {"aten::_scaled_dot_product_efficient_attention_backward", 1, 0, 1, 2, 11, 0},
    {"aten::_scaled_dot_product_cudnn_attention", 0, 0, 0, 1, 6, 0},
    {"aten::_scaled_dot_product_cudnn_attention_backward", 1, 0, 1, 2, 14, 0},
};

static const struct attn_op *op_of(const char *name)
{
    for (size_t i = 0; name && i < sizeof attn_ops / sizeof attn_ops[0]; i++)
        if (strcmp(name, attn_ops[i].name) == 0)
            return &attn_ops[i];
    return NULL;
}

/* A 4-d tensor's dims: 0, or -1 when it is not one of positive sizes. */
static int dims4(json_t *a, double out[4])
{
    if (!json_is_array(a) || json_array_size(a) != 4)
        return -1;
    for (size_t i = 0; i < 4; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1 << 30))
            return -1;
        out[i] = (double)json_integer_value(v);
    }
    return 0;
}

/* is_causal ("True"/"False") or custom_mask_type ("0".."2"): 0 or 1, or
 * -1 when the argument is not what the schema puts there. */
static int causal_of(const struct attn_op *op, json_t *concrete)
{
    const char *v = json_string_value(json_array_get(concrete, (size_t)op->causal));
    if (!v)
        return -1;
    if (op->mask_type)
        return strcmp(v, "0") == 0 ? 0 : strcmp(v, "1") == 0 || strcmp(v, "2") == 0 ? 1 : -1;
    return strcmp(v, "True") == 0 ? 1 : strcmp(v, "False") == 0 ? 0 : -1;
}

int calib_attn_op_shape(const char *name, const char *dims_text, const char *types_text, const char *concrete_text,
                  struct attn_shape *shape, int *backward, struct sc_error *err)
{
    const struct attn_op *op = op_of(name);
    if (!op)
        return sc_error_set(err, SC_EINVAL, "not a fused attention op");
    if (!dims_text || !types_text || !concrete_text)
        return sc_error_set(err, SC_EPARSE, "no Input Dims, Input type or Concrete Inputs");
    json_t *dims = json_loads(dims_text, 0, NULL), *types = json_loads(types_text, 0, NULL),
           *concrete = json_loads(concrete_text, 0, NULL);
    double q[4], k[4];
    int rc = SC_OK, causal = json_is_array(concrete) ? causal_of(op, concrete) : -1;
    memset(shape, 0, sizeof *shape);
    if (dims4(json_array_get(dims, (size_t)op->query), q) || dims4(json_array_get(dims, (size_t)op->key), k)) {
        rc = sc_error_set(err, SC_EPARSE, "the query and key are not 4-d tensors where the schema puts them");
        goto out;
    }
    if (causal < 0) {
        rc = sc_error_set(err, SC_EPARSE, "no is_causal where the schema puts it");
        goto out;
    }
    if (calib_gemm_torch_dtype(json_string_value(json_array_get(types, (size_t)op->query)), &shape->dtype)) {
        rc = sc_error_set(err, SC_EPARSE, "the query's element type is none attention runs in");
        goto out;
    }
    int s = op->bshd ? 1 : 2, h = op->bshd ? 2 : 1;
    shape->batch = q[0];
    shape->heads = q[h];
    shape->kv_heads = k[h];
    shape->seq_q = q[s];
    shape->seq_kv = k[s];
    shape->head_dim = q[3];
    shape->causal = causal;
    *backward = op->backward;
    if (k[0] != q[0] || k[3] != q[3] || fmod(q[h], k[h]) != 0)
        rc = sc_error_set(err, SC_EPARSE, "the key's batch, head dimension or heads do not fit the query's");
out:
    json_decref(dims);
    json_decref(types);
    json_decref(concrete);
    return rc;
}

int calib_attn_samples_from_trace(const struct model_trace *t, struct attn_samples *out, size_t *unreadable,
                            struct sc_error *err)
{
    struct op_kernels ok;
    int status = cost_op_kernels_join(t, &ok, err);
    if (!status)
        status = calib_attn_samples_of_ops(t, &ok, out, unreadable, err);
    cost_op_kernels_release(&ok);
    return status;
}

int calib_attn_samples_of_ops(const struct model_trace *t, const struct op_kernels *ops, struct attn_samples *out,
                        size_t *unreadable, struct sc_error *err)
{
    const struct op_kernels ok = *ops;
    struct sc_error why;
    int status = SC_OK;
    for (size_t g = 0; g < ok.n_ops && !status; g++) {
        const struct op_launch *l = &ok.ops[g];
        const struct model_event *o = &t->events[l->op];
        const char *name = model_str(t, o->name);
        if (!op_of(name))
            continue;
        const struct model_op_args *in = model_event_args(t, o);
        struct attn_sample s;
        memset(&s, 0, sizeof s);
        if (!in || calib_attn_op_shape(name, model_str(t, in->input_dims), model_str(t, in->input_types),
                                 model_str(t, in->concrete_inputs), &s.shape, &s.backward, &why)) {
            if (unreadable)
                (*unreadable)++;
            continue;
        }
        for (uint32_t j = 0; j < l->n; j++)
            s.measured_us += (double)t->events[ok.kernel[l->first + j]].dur / 1000;
        s.kernels = (int)l->n;
        if (sc_vec_reserve((void **)&out->v, &out->cap, out->n + 1, sizeof *out->v))
            status = sc_error_set(err, SC_ENOMEM, "out of memory");
        else
            out->v[out->n++] = s;
    }
    return status;
}

void calib_attn_samples_release(struct attn_samples *s)
{
    if (!s)
        return;
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* The model's time of a sample: flash attention and the fixed cost of each
 * further kernel. */
static int model_us(const struct kernel_params *p, const struct hw_profile *hw, const struct attn_sample *s,
                    double *us, struct sc_error *err)
{
    int rc = cost_kernel_flash_attention(p, hw, &s->shape, s->backward, us, err);
    *us += p->kernel_fixed_us * (s->kernels - 1);
    return rc;
}

int calib_attn_samples_check(const struct kernel_params *p, const struct hw_profile *hw, const struct attn_sample *s,
                       size_t n, struct estimate_check *out, struct sc_error *err)
{
    double *ratio = malloc((n + 1) * sizeof *ratio);
    size_t m = 0;
    int rc = SC_OK;
    memset(out, 0, sizeof *out);
    if (!ratio)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
        double us;
        if (s[i].measured_us > 0 && (rc = model_us(p, hw, &s[i], &us, err)) == SC_OK)
            ratio[m++] = us / s[i].measured_us;
    }
    if (!rc && cost_estimate_check_ratios(ratio, m, out))
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    free(ratio);
    return rc;
}

#define MIN_FIT_SAMPLES 4
#define FIT_ROUNDS 8

/* One pass's two parameters fitted in place: its throughput (*value, the
 * efficiency or the backward's fraction, inside k) and its fixed time per
 * block and wave (*block_us). Rounds of the robust regression of measured
 * - fixed on the model's throughput-bound time and its waves (the time a
 * microsecond per block adds), until the values hold. Shapes that do not
 * tell the two apart (one shape, or the same FLOPs per block and wave in
 * all: a trace of one model's layers) fit the throughput alone, the block
 * time kept; a negative block time is fitted again without one. 1
 * fitted, 0 too few samples, -1 failed (both unchanged). */
static int fit_pass(struct kernel_params *k, double *value, double *block_us, int backward,
                    const struct hw_profile *hw, const struct attn_sample *s, size_t n, double *t, double *fixed,
                    double *bound, double *waves, double *se_out)
{
    double start = *value, start_block = *block_us;
    int with_block = 1;
    for (int round = 0; round < FIT_ROUNDS; round++) {
        size_t m = 0;
        double c[2], se[2];
        struct sc_error why;
        for (size_t i = 0; i < n; i++) {
            double t0, t1, keep = *block_us;
            if (s[i].backward != backward || !(s[i].measured_us > 0))
                continue;
            *block_us = 0;
            int rc = cost_kernel_flash_attention(k, hw, &s[i].shape, s[i].backward, &t0, &why);
            *block_us = 1;
            rc = rc || cost_kernel_flash_attention(k, hw, &s[i].shape, s[i].backward, &t1, &why);
            *block_us = keep;
            if (rc) {
                *value = start;
                *block_us = start_block;
                return -1;
            }
            t[m] = s[i].measured_us;
            fixed[m] = k->kernel_fixed_us * s[i].kernels;
            bound[m] = t0 - k->kernel_fixed_us;
            waves[m++] = t1 - t0;
        }
        if (m < MIN_FIT_SAMPLES)
            return 0;
        double lo = INFINITY, hi = 0;
        for (size_t j = 0; j < m; j++)
            if (waves[j] > 0) {
                lo = fmin(lo, bound[j] / waves[j]);
                hi = fmax(hi, bound[j] / waves[j]);
            }
        if (!(hi > 1.1 * lo))
            with_block = 0;
        for (size_t j = 0; !with_block && j < m; j++) /* the block time kept is known */
            fixed[j] += *block_us * waves[j];
        const double *x[] = {bound, waves};
        if (calib_robust_fit_relative(t, fixed, x, with_block ? 2 : 1, m, "attention", c, se, &why) || !(c[0] > 0) ||
            !(*value / c[0] >= 0.01 && *value / c[0] <= 1.5) || (with_block && !(c[1] <= 1000))) {
            *value = start;
            *block_us = start_block;
            return -1;
        }
        if (with_block && c[1] < 0) { /* no fixed time to speak of: without one */
            with_block = 0;
            *block_us = 0;
            round = -1;
            continue;
        }
        double moved = fabs(c[0] - 1) + (with_block ? fabs(c[1] - *block_us) / (1 + *block_us) : 0);
        *value /= c[0];
        se_out[0] = se[0] * *value;
        if (with_block) {
            *block_us = c[1];
            se_out[1] = se[1];
        }
        if (moved < 1e-3)
            break;
    }
    return 1;
}

int calib_attn_samples_fit(const struct kernel_params *base_in, const struct hw_profile *hw, const struct attn_sample *s,
                     size_t n, struct kernel_params *out, struct attn_fit *fit, struct sc_error *err)
{
    const struct kernel_params b = *base_in, *base = &b; /* *out may be *base_in */
    double *t = malloc((4 * n + 1) * sizeof *t), *fixed = t + n, *bound = t + 2 * n, *waves = t + 3 * n;
    struct kernel_params k = *base;
    int status = SC_OK, fw, bw = 0;
    memset(fit, 0, sizeof *fit);
    *out = *base;
    if (!t)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        fit->forward += !s[i].backward;
        fit->backward += s[i].backward;
    }
    if ((status = calib_attn_samples_check(base, hw, s, n, &fit->before, err)))
        goto out;
    fw = fit_pass(&k, &k.attn_efficiency, &k.attn_block_us, 0, hw, s, n, t, fixed, bound, waves, fit->forward_se);
    if (fw >= 0)
        bw = fit_pass(&k, &k.attn_backward_fraction, &k.attn_backward_block_us, 1, hw, s, n, t, fixed, bound, waves,
                      fit->backward_se);
    if (fw < 0 || bw < 0) {
        status = sc_error_set(err, SC_ENUMERIC, "the attention fit fails or leaves the physical range");
        goto out;
    }
    fit->fitted = (fw > 0 ? 1u : 0u) | (bw > 0 ? 2u : 0u);
    *out = k;
    status = calib_attn_samples_check(out, hw, s, n, &fit->after, err);
out:
    free(t);
    return status;
}
