/* estimator/costs/op_kernels.h: which CPU op launched each kernel of a trace.
 *
 * PyTorch records its CPU ops (with `Input Dims` and `Input type`) and the
 * runtime calls that launch kernels, joined to the kernels by correlation
 * id. An op launches its kernels from inside its time span on its thread;
 * ops nest (aten::matmul calls aten::mm, aten::clone calls aten::copy_), so
 * a launch belongs to the innermost op open at its call. The GEMM samples
 * and the memory-bound samples (gemm_samples.h, mem_samples.h) both read
 * a kernel's op from here. */
#ifndef ESTIMATOR_OP_KERNELS_H
#define ESTIMATOR_OP_KERNELS_H

#include <stdint.h>

#include "common/error.h"
#include "model/trace.h"

/* One op and the kernels it launched. */
struct op_launch {
    uint32_t op;          /* the CPU op's event index */
    uint32_t first, n;    /* its kernels: kernel[first .. first + n), in event order */
};

struct op_kernels {
    struct op_launch *ops; /* in the order of their first kernels */
    size_t n_ops;
    uint32_t *kernel;      /* kernel event indices, grouped by op */
};

/* The ops of a trace that launched kernels, each with its kernels (a
 * launch outside every op counts for none). Empty when the trace has no
 * launch links. */
int cost_op_kernels_join(const struct model_trace *t, struct op_kernels *out, struct sc_error *err);

void cost_op_kernels_release(struct op_kernels *k);

#endif
