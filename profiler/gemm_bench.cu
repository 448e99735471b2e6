// profiler/gemm_bench.cu: the GEMM microbenchmark behind profiler/gemm-bench.sh.
//
//   gemm_bench [--quick] [--dtypes fp16,bf16,tf32,fp32,fp8]
//
// Times C = A B on the GPU through cuBLAS (cublasGemmStridedBatchedEx;
// fp8 through cuBLASLt, on GPUs of compute capability 8.9 and later; bf16
// and tf32 on 8.0 and later) over
// the shapes a transformer's training step runs: the projections and MLP
// matrices of hidden sizes 512 to 16384 at 1K to 16K tokens, their
// weight gradients (K the tokens), and attention's batched score and
// value products. Each shape runs a few times to warm up, then back to
// back for at least 2 ms (at least 5 calls), timed with CUDA events: the
// mean time of one call, which is what a training step sees of a GEMM
// among others. The operands hold uniform random values in [-1, 1) in
// the dtype timed: a GPU runs GEMMs on constant data at higher clocks
// (fewer bits toggle, less power), which no training step sees. Writes the table `stepcast calibrate gemms` reads
// (estimator/calibrate/gemm_table.h) to stdout; progress to stderr.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CUDA_OK(x)                                                                                        \
    do {                                                                                                  \
        cudaError_t e_ = (x);                                                                             \
        if (e_ != cudaSuccess) {                                                                          \
            std::fprintf(stderr, "gemm_bench: %s: %s\n", #x, cudaGetErrorString(e_));                    \
            std::exit(1);                                                                                 \
        }                                                                                                 \
    } while (0)
#define BLAS_OK(x)                                                                                        \
    do {                                                                                                  \
        cublasStatus_t s_ = (x);                                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                \
            std::fprintf(stderr, "gemm_bench: %s: cuBLAS status %d\n", #x, (int)s_);                     \
            std::exit(1);                                                                                 \
        }                                                                                                 \
    } while (0)

struct Shape {
    long long batch, m, n, k;
};

enum Dtype { FP16, BF16, TF32, FP32, FP8, N_DTYPES };
static const char *const dtype_names[N_DTYPES] = {"fp16", "bf16", "tf32", "fp32", "fp8"};

// The shapes: tokens x hidden projections and MLP products, their weight
// gradients, and attention's batched products (batch = micro-batch x heads).
static std::vector<Shape> shapes(bool quick)
{
    std::vector<Shape> v;
    const long long tokens[] = {1024, 4096, 16384};
    const long long widths[] = {512, 1024, 2048, 4096, 8192, 16384};
    const long long quick_widths[] = {1024, 4096};
    const long long *w = quick ? quick_widths : widths;
    size_t nw = quick ? 2 : 6;
    for (long long t : tokens) {
        if (quick && t == 16384)
            continue;
        for (size_t i = 0; i < nw; i++)
            for (size_t j = 0; j < nw; j++) {
                v.push_back({1, t, w[i], w[j]});     // activations x weight
                if (!quick && t == 4096)
                    v.push_back({1, w[i], w[j], t}); // weight gradient: K the tokens
            }
    }
    const long long seqs[] = {1024, 4096};
    const long long heads_batch[] = {16, 64};
    const long long head_dims[] = {64, 128};
    for (long long s : seqs)
        for (long long b : heads_batch)
            for (long long d : head_dims) {
                if (quick && (b == 64 || d == 64))
                    continue;
                v.push_back({b, s, s, d}); // scores: Q K^T
                v.push_back({b, s, d, s}); // context: P V
            }
    return v;
}

// Uniform in [-1, 1): element i of stream `seed` (splitmix64).
__device__ static float uniform(unsigned long long i, unsigned long long seed)
{
    unsigned long long z = i + (seed + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <typename T> __global__ void fill_uniform(T *p, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = T(uniform(i, seed));
}

template <typename T> static void fill(void *p, size_t bytes, unsigned long long seed)
{
    fill_uniform<T><<<1024, 256>>>((T *)p, bytes / sizeof(T), seed);
    CUDA_OK(cudaGetLastError());
}

struct Buffers {
    void *a = nullptr, *b = nullptr, *c = nullptr, *work = nullptr;
    size_t work_bytes = 64u << 20;
};

// The mean time of one call, microseconds: `call` run to warm up, then back
// to back for at least 2 ms and 5 calls.
template <typename F> static double time_us(F call)
{
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++)
        call();
    CUDA_OK(cudaDeviceSynchronize());
    int iters = 5;
    float ms = 0;
    for (;;) {
        CUDA_OK(cudaEventRecord(e0));
        for (int i = 0; i < iters; i++)
            call();
        CUDA_OK(cudaEventRecord(e1));
        CUDA_OK(cudaEventSynchronize(e1));
        CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
        if (ms >= 2.0f || iters >= 1 << 16)
            break;
        iters = ms > 0 ? (int)(iters * 2.5f / ms) + 1 : iters * 8;
    }
    CUDA_OK(cudaEventDestroy(e0));
    CUDA_OK(cudaEventDestroy(e1));
    return 1000.0 * ms / iters;
}

static double time_blas(cublasHandle_t h, Dtype d, const Shape &s, Buffers &buf)
{
    cudaDataType_t t = d == FP16 ? CUDA_R_16F : d == BF16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasComputeType_t ct = d == TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const float alpha = 1, beta = 0;
    long long sa = s.m * s.k, sb = s.k * s.n, sc = s.m * s.n;
    return time_us([&] {
        BLAS_OK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)s.m, (int)s.n, (int)s.k, &alpha,
                                           buf.a, t, (int)s.m, sa, buf.b, t, (int)s.k, sb, &beta, buf.c, t,
                                           (int)s.m, sc, (int)s.batch, ct, CUBLAS_GEMM_DEFAULT));
    });
}

// fp8 (e4m3) inputs, bf16 output, through cuBLASLt: A transposed, as its
// fp8 kernels require; one matrix at a time. A negative time when cuBLASLt
// has no kernel for the shape.
static double time_fp8(cublasLtHandle_t lt, const Shape &s, Buffers &buf)
{
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    BLAS_OK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    BLAS_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    BLAS_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    BLAS_OK(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, s.k, s.m, s.k));
    BLAS_OK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, s.k, s.n, s.k));
    BLAS_OK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, s.m, s.n, s.m));
    BLAS_OK(cublasLtMatmulPreferenceCreate(&pref));
    BLAS_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &buf.work_bytes,
                                                 sizeof buf.work_bytes));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    double us = -1;
    if (cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &heur, &found) ==
            CUBLAS_STATUS_SUCCESS &&
        found > 0) {
        const float alpha = 1, beta = 0;
        us = time_us([&] {
            BLAS_OK(cublasLtMatmul(lt, desc, &alpha, buf.a, la, buf.b, lb, &beta, buf.c, lc, buf.c, lc,
                                   &heur.algo, buf.work, buf.work_bytes, 0));
        });
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
    return us;
}

int main(int argc, char **argv)
{
    bool quick = false, want[N_DTYPES] = {true, true, true, true, true};
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!std::strcmp(argv[i], "--dtypes") && i + 1 < argc) {
            std::string list = std::string(",") + argv[++i] + ",";
            for (int d = 0; d < N_DTYPES; d++)
                want[d] = list.find(std::string(",") + dtype_names[d] + ",") != std::string::npos;
        } else {
            std::fprintf(stderr, "usage: gemm_bench [--quick] [--dtypes fp16,bf16,tf32,fp32,fp8]\n");
            return 2;
        }
    }
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    int sm = prop.major * 10 + prop.minor, runtime = 0;
    CUDA_OK(cudaRuntimeGetVersion(&runtime));
    if (want[FP8] && sm < 89) {
        std::fprintf(stderr, "gemm_bench: %s (sm_%d) has no fp8 tensor cores: fp8 left out\n", prop.name, sm);
        want[FP8] = false;
    }
    for (Dtype d : {BF16, TF32})
        if (want[d] && sm < 80) {
            std::fprintf(stderr, "gemm_bench: %s (sm_%d) has no %s tensor cores: %s left out\n", prop.name, sm,
                         dtype_names[d], dtype_names[d]);
            want[d] = false;
        }
    std::vector<Shape> v = shapes(quick);
    size_t most = 0;
    for (const Shape &s : v)
        most = std::max(most, (size_t)std::max({s.m * s.k, s.k * s.n, s.m * s.n}) * (size_t)s.batch);
    Buffers buf;
    CUDA_OK(cudaMalloc(&buf.a, most * 4));
    CUDA_OK(cudaMalloc(&buf.b, most * 4));
    CUDA_OK(cudaMalloc(&buf.c, most * 4));
    CUDA_OK(cudaMalloc(&buf.work, buf.work_bytes));
    cublasHandle_t h;
    cublasLtHandle_t lt;
    BLAS_OK(cublasCreate(&h));
    BLAS_OK(cublasLtCreate(&lt));
    BLAS_OK(cublasSetWorkspace(h, buf.work, buf.work_bytes));

    std::printf("# stepcast gemm-bench 1: C = A B timed through cuBLAS %zu (fp8 through cuBLASLt), CUDA runtime %d\n",
                cublasLtGetVersion(), runtime);
    std::printf("# device: %s\n", prop.name);
    std::printf("# sm_%d, %d SMs; operands uniform random in [-1, 1)\n", sm, prop.multiProcessorCount);
    std::printf("dtype,batch,m,n,k,us\n");
    size_t done = 0, total = 0;
    for (int d = 0; d < N_DTYPES; d++)
        total += want[d] ? v.size() : 0;
    for (int d = 0; d < N_DTYPES; d++) {
        if (!want[d])
            continue;
        for (void *p : {buf.a, buf.b}) {
            unsigned long long seed = p == buf.a ? 1 : 2;
            if (d == FP8)
                fill<__nv_fp8_e4m3>(p, most * 4, seed);
            else if (d == FP16)
                fill<__half>(p, most * 4, seed);
            else if (d == BF16)
                fill<__nv_bfloat16>(p, most * 4, seed);
            else
                fill<float>(p, most * 4, seed);
        }
        CUDA_OK(cudaDeviceSynchronize());
        for (const Shape &s : v) {
            double us = d == FP8 ? (s.batch == 1 ? time_fp8(lt, s, buf) : -1) : time_blas(h, (Dtype)d, s, buf);
            if (us > 0)
                std::printf("%s,%lld,%lld,%lld,%lld,%.3f\n", dtype_names[d], s.batch, s.m, s.n, s.k, us);
            if (++done % 25 == 0 || done == total)
                std::fprintf(stderr, "\rgemm_bench: %zu of %zu shapes", done, total);
        }
        std::fflush(stdout);
    }
    std::fprintf(stderr, "\n");
    cublasLtDestroy(lt);
    cublasDestroy(h);
    cudaFree(buf.a);
    cudaFree(buf.b);
    cudaFree(buf.c);
    cudaFree(buf.work);
    return 0;
}
