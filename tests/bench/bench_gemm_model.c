/* tests/bench/bench_gemm_model.c: the kernel model's GEMM times against the
 * GEMM kernels of real traces (make bench; figures in BENCHMARKS.md).
 *
 *     build/bench-gemm-model TRACE...
 *
 * Every GEMM op with its shape (estimator/calibrate/gemm_samples.h) is timed by the
 * model with its default parameters on the profile of the trace's GPU, and
 * the errors are summed up per GPU: median and mean of |predicted /
 * measured - 1|, and the median of predicted / measured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "estimator/calibrate/gemm_samples.h"
#include "estimator/costs/kernel_model.h"
#include "model/job.h"
#include "common/banned.h"

#define MAX_GPUS 16

struct gpu {
    const struct hw_profile *hw;
    struct gemm_samples s;
    size_t fp32, tf32, other;
};

int main(int argc, char **argv)
{
    struct gpu gpus[MAX_GPUS];
    size_t n_gpus = 0, skipped = 0;
    struct kernel_params p;
    struct sc_error err;
    int status = 0;

    memset(gpus, 0, sizeof gpus);
    cost_kernel_params_default(&p);
    for (int a = 1; a < argc; a++) {
        struct model_job *job = NULL;
        const char *path = argv[a];
        if (model_job_load(&path, 1, NULL, 0, &job, &err)) {
            fprintf(stderr, "bench-gemm-model: %s\n", err.msg);
            return 1;
        }
        for (size_t r = 0; r < job->n_ranks; r++) {
            struct gemm_samples s = {0};
            size_t sk = 0;
            const struct model_trace *t = job->ranks[r];
            if (calib_gemm_samples_from_trace(t, &s, &sk, &err)) {
                fprintf(stderr, "bench-gemm-model: %s\n", err.msg);
                return 1;
            }
            skipped += sk;
            for (size_t i = 0; i < s.n; i++) {
                const char *name = calib_gemm_device_name(t, s.v[i].device);
                const struct hw_profile *hw = name ? cost_hw_profile_for_device(name) : NULL;
                if (!hw) {
                    fprintf(stderr, "bench-gemm-model: %s: no profile for GPU '%s'\n", t->source,
                            name ? name : "(unnamed)");
                    status = 1;
                    break;
                }
                size_t g = 0;
                while (g < n_gpus && gpus[g].hw != hw)
                    g++;
                if (g == n_gpus && n_gpus < MAX_GPUS)
                    gpus[n_gpus++].hw = hw;
                if (g == MAX_GPUS)
                    continue;
                struct gpu *gp = &gpus[g];
                if (sc_vec_reserve((void **)&gp->s.v, &gp->s.cap, gp->s.n + 1, sizeof *gp->s.v))
                    return 1;
                gp->s.v[gp->s.n++] = s.v[i];
                gp->fp32 += s.v[i].dtype == HW_FP32;
                gp->tf32 += s.v[i].dtype == HW_TF32;
                gp->other += s.v[i].dtype != HW_FP32 && s.v[i].dtype != HW_TF32;
            }
            calib_gemm_samples_release(&s);
        }
        model_job_free(job);
    }
    printf("%-16s %8s %6s %6s %6s %12s %10s %14s\n", "gpu", "samples", "fp32", "tf32", "other",
           "median_abs%", "mean_abs%", "median_ratio");
    for (size_t g = 0; g < n_gpus; g++) {
        struct estimate_check c;
        if (calib_gemm_samples_check(&p, gpus[g].hw, gpus[g].s.v, gpus[g].s.n, &c, &err)) {
            fprintf(stderr, "bench-gemm-model: %s\n", err.msg);
            return 1;
        }
        printf("%-16s %8zu %6zu %6zu %6zu %12.1f %10.1f %14.2f\n", gpus[g].hw->id, c.n, gpus[g].fp32,
               gpus[g].tf32, gpus[g].other, c.median_abs_pct, c.mean_abs_pct, c.median_ratio);
        calib_gemm_samples_release(&gpus[g].s);
    }
    printf("(ops whose dims or dtype could not be read: %zu)\n", skipped);
    return status;
}
