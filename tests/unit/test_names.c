/* tests/unit/test_names.c: the name tables of model/: kernel families on
 * real kernel names (those of the shared traces, and transformer kernels
 * from public PyTorch, flash-attention, Apex, Megatron-LM and Transformer
 * Engine sources), each with the family a person would give it; runtime
 * API calls; collective names and dtypes. */
#include <string.h>

#include "model/collective.h"
#include "model/graph.h"
#include "model/kernel_family.h"
#include "model/runtime_api.h"
#include "tests/check.h"
#include "common/banned.h"

static const struct {
    const char *name;
    enum model_kernel_family family;
} kernels[] = {
    /* cuBLAS, CUTLASS (shared traces) */
    {"volta_sgemm_128x64_nt", MODEL_KF_GEMM},
    {"ampere_sgemm_32x128_nt", MODEL_KF_GEMM},
    {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)", MODEL_KF_GEMM},
    {"void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)", MODEL_KF_GEMM},
    {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>, float, float)", MODEL_KF_GEMM},
    {"void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, float*, int*)", MODEL_KF_GEMM},
    {"void gemmSN_TN_kernel<float, 128, 16, 2, 4, 4, 4, true, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float> >(cublasGemmSmallNParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>)", MODEL_KF_GEMM},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", MODEL_KF_GEMM},
    /* convolutions (shared traces) */
    {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer", MODEL_KF_CONVOLUTION},
    {"sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x64_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_train", MODEL_KF_CONVOLUTION},
    {"sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer", MODEL_KF_CONVOLUTION},
    {"_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGemmMultistageE", MODEL_KF_CONVOLUTION},
    {"void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_nonfused::WinogradDataParams<float, float>)", MODEL_KF_CONVOLUTION},
    {"void fft2d_r2c_32x32<float, false, 1u, false>(float2*, float const*, int, int, int, int, int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)", MODEL_KF_CONVOLUTION},
    {"void wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int, int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, float, int, int, int, int)", MODEL_KF_CONVOLUTION},
    {"void cudnn::detail::dgrad_engine<float, 128, 6, 8, 3, 3, 5, false>(int, int, int, float const*, int, float const*, int, float*, kernel_grad_params, unsigned long long, int, unsigned long long, int, float, int, int, int)", MODEL_KF_CONVOLUTION},
    /* elementwise, copies (shared traces) */
    {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)", MODEL_KF_ELEMENTWISE},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", MODEL_KF_ELEMENTWISE},
    {"void at::native::unrolled_elementwise_kernel<at::native::(anonymous namespace)::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >", MODEL_KF_COPY},
    {"void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", MODEL_KF_COPY},
    {"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)", MODEL_KF_ELEMENTWISE},
    {"void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} const&)::{lambda(int)#1}>(long, at::native::gpu_index_kernel)", MODEL_KF_ELEMENTWISE},
    {"triton_poi_fused_add_mul_0", MODEL_KF_ELEMENTWISE},
    /* softmax, reductions (shared traces) */
    {"void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(float*, float const*, int, int, int, bool const*, int, bool)", MODEL_KF_SOFTMAX},
    {"void (anonymous namespace)::softmax_warp_backward<float, float, float, 10, true, false>(float*, float const*, float const*, int, int, int, bool const*)", MODEL_KF_SOFTMAX},
    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)", MODEL_KF_REDUCTION},
    {"void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)", MODEL_KF_REDUCTION},
    {"void reduce_1Block_kernel<float, 128, 7, cublasGemvTensorStridedBatched<float>, cublasGemvTensorStridedBatched<float>, cublasGemvTensorStridedBatched<float> >(float const*, float, float*, int, float const*, float, cublasGemvTensorStridedBatched<float>, cublasGemvTensorStridedBatched<float>, cublasPointerMode_t, cublasLtEpilogue_t, cublasGemvTensorStridedBatched<biasType<cublasGemvTensorStridedBatched<float>::value_type, float>::type const>)", MODEL_KF_GEMM},
    {"triton_red_fused_sum_1", MODEL_KF_REDUCTION},
    /* normalization (shared traces) */
    {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)", MODEL_KF_NORMALIZATION},
    {"void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(float const*, float const*, float const*, float const*, float const*, float*, int)", MODEL_KF_NORMALIZATION},
    {"void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>(long, long, float const*, float const*, float const*, float const*, float*, float*)", MODEL_KF_NORMALIZATION},
    {"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float const*, float, float, float*, float*, float*, float*, float, float)", MODEL_KF_NORMALIZATION},
    {"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float*, float*, float const*, float const*, float)", MODEL_KF_NORMALIZATION},
    {"triton_red_fused_native_layer_norm_0", MODEL_KF_NORMALIZATION},
    /* embeddings (shared traces) */
    {"void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>(long const*, float const*, float*, int, long, int)", MODEL_KF_EMBEDDING},
    {"void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)", MODEL_KF_EMBEDDING},
    {"void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 4>(at::GenericPackedTensorAccessor<float, 1, at::RestrictPtrTraits, long>)", MODEL_KF_EMBEDDING},
    {"void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<float, float, 4, 32>(at::GenericPackedTensorAccessor<float, 2, at::RestrictPtrTraits, long>)", MODEL_KF_EMBEDDING},
    {"void fbgemm_gpu::permute_pooled_embs_kernel<float>(float const*, long const*, long const*, long const*, float*, long, long, long)", MODEL_KF_EMBEDDING},
    /* fp8 (shared traces: fbgemm's FP8 quantization) */
    {"void fbgemm_gpu::(anonymous namespace)::_compute_FP8_quantize_cuda_kernel<float>(at::GenericPackedTensorAccessor<float, 1, at::RestrictPtrTraits, int>)", MODEL_KF_FP8},
    {"void fbgemm_gpu::(anonymous namespace)::_FP8rowwise_to_float_cuda_kernel<float>(at::GenericPackedTensorAccessor<unsigned char, 1, at::RestrictPtrTraits, int>)", MODEL_KF_FP8},
    /* optimizer, loss (shared traces) */
    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)", MODEL_KF_OPTIMIZER},
    {"void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)", MODEL_KF_LOSS},
    {"void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)", MODEL_KF_LOSS},
    /* communication (shared traces; NCCL 2.19+ names) */
    {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", MODEL_KF_COMMUNICATION},
    {"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", MODEL_KF_COMMUNICATION},
    {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", MODEL_KF_COMMUNICATION},
    {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", MODEL_KF_COMMUNICATION},
    /* attention (flash-attention, PyTorch's memory-efficient and cuDNN SDPA) */
    {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)", MODEL_KF_ATTENTION},
    {"void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, true, false, false, false, false, true, false, false>(Flash_bwd_params)", MODEL_KF_ATTENTION},
    {"void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, false>(Flash_bwd_params, int)", MODEL_KF_ATTENTION},
    {"fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", MODEL_KF_ATTENTION},
    {"cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_4x1x1_kernel0_0", MODEL_KF_ATTENTION},
    /* layer_norm and rms_norm (Apex, Transformer Engine) */
    {"void cuApplyLayerNorm<c10::BFloat16, float, c10::BFloat16>(c10::BFloat16*, float*, float*, c10::BFloat16 const*, int, int, float, c10::BFloat16 const*, c10::BFloat16 const*)", MODEL_KF_NORMALIZATION},
    {"void cuApplyRMSNorm<c10::BFloat16, float, c10::BFloat16>(c10::BFloat16*, float*, c10::BFloat16 const*, int, int, float, c10::BFloat16 const*)", MODEL_KF_NORMALIZATION},
    {"void cuComputeGradInput<c10::BFloat16, float, c10::BFloat16>(c10::BFloat16 const*, c10::BFloat16 const*, int, int, float const*, float const*, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16*, bool)", MODEL_KF_NORMALIZATION},
    {"void transformer_engine::normalization::rmsnorm_fwd_tuned_kernel<transformer_engine::normalization::Kernel_traits<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, unsigned int, 4096u, 1u, 4u, 1u, 16u, transformer_engine::normalization::Kernel_traits_base> >(transformer_engine::normalization::ForwardKernelParams)", MODEL_KF_NORMALIZATION},
    {"void transformer_engine::layer_norm::ln_bwd_tuned_kernel<transformer_engine::layer_norm::Kernel_traits<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, unsigned int, 4096u, 1u, 4u, 1u, 16u> >(transformer_engine::layer_norm::BwdParams)", MODEL_KF_NORMALIZATION},
    /* fused Adam (Apex, PyTorch), cross-entropy (Apex, Megatron) */
    {"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, float, float, float, float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>, AdamFunctor<float>, float, float, float, float, float, float, adamMode_t, float)", MODEL_KF_OPTIMIZER},
    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, float*, float*>", MODEL_KF_OPTIMIZER},
    {"void cunn_SoftMaxXEntropyForward<4, c10::BFloat16, float, float, Epilogue>(float*, c10::BFloat16*, long*, long, float)", MODEL_KF_LOSS},
    {"cross_entropy_fwd_kernel_0d1d2d3d4d5d6d7d8d9d10d11d12d13d", MODEL_KF_LOSS},
    /* rotary embedding (Transformer Engine, flash-attention) */
    {"void transformer_engine::fused_rope_forward_kernel<__nv_bfloat16, __nv_bfloat16>(__nv_bfloat16 const*, float const*, __nv_bfloat16*, int, int, int, int, int, int, int, int, int, int, int, int, int)", MODEL_KF_ROTARY},
    {"rotary_kernel_0d1d2d3d4d5d6d7d8d9d10d", MODEL_KF_ROTARY},
    /* MoE permutation (Transformer Engine, Megatron-LM) */
    {"void moe_permute_row_map(int const*, int*, int, int, int)", MODEL_KF_MOE},
    {"void moe_unpermute_kernel<__nv_bfloat16, float, true>(__nv_bfloat16 const*, __nv_bfloat16*, int const*, float const*, float*, int, int, int)", MODEL_KF_MOE},
    {"void moe_permute_kernel<__nv_bfloat16, float, 128, false>(__nv_bfloat16 const*, __nv_bfloat16*, int const*, float const*, float*, int, int, int, int)", MODEL_KF_MOE},
    /* Transformer Engine fp8 cast and amax */
    {"void transformer_engine::detail::cast_transpose_kernel<8, false, __nv_bfloat16, __nv_fp8_e4m3, float, transformer_engine::Empty, &transformer_engine::detail::identity<float, transformer_engine::Empty> >(__nv_bfloat16 const*, __nv_fp8_e4m3*, __nv_fp8_e4m3*, float const*, float*, float*, unsigned long, unsigned long)", MODEL_KF_FP8},
    {"void transformer_engine::(anonymous namespace)::amax_kernel<8, __nv_bfloat16>(__nv_bfloat16 const*, float*, float*, unsigned long, float const*)", MODEL_KF_FP8},
    {"void transformer_engine::delayed_scaling_recipe::(anonymous namespace)::kernel::amax_and_scale_update_kernel(float const*, float*, float*, float const*, float*, float*, float, float, unsigned long, unsigned long, int)", MODEL_KF_FP8},
    /* nothing above */
    {"void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*, long, long, long, int, int, int, int, int, int, int, int, int, int, float*, long*)", MODEL_KF_OTHER},
    {"void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, cub::NullType, unsigned int>::Policy800, true, long, cub::NullType, unsigned int, int, int>", MODEL_KF_OTHER},
    {"triton__0d1d2d3d", MODEL_KF_OTHER},
};

TEST(names_kernel_families_of_real_kernels)
{
    size_t n = sizeof kernels / sizeof kernels[0];
    CHECK(n >= 50);
    size_t seen[MODEL_KF_COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        enum model_kernel_family f = model_kernel_family(kernels[i].name);
        if (f != kernels[i].family)
            sc_check_fail(__FILE__, __LINE__, "%.80s: %s, expected %s", kernels[i].name, model_kernel_family_name(f),
                          model_kernel_family_name(kernels[i].family));
        seen[kernels[i].family]++;
    }
    /* every family has a real name here */
    for (int f = 0; f < MODEL_KF_COUNT; f++)
        if (!seen[f])
            sc_check_fail(__FILE__, __LINE__, "no kernel of family %s", model_kernel_family_name((enum model_kernel_family)f));
    /* case does not matter; NULL and "" are other */
    CHECK_EQ_INT(model_kernel_family("VOLTA_SGEMM_128X64_NT"), MODEL_KF_GEMM);
    CHECK_EQ_INT(model_kernel_family(NULL), MODEL_KF_OTHER);
    CHECK_EQ_INT(model_kernel_family(""), MODEL_KF_OTHER);
    /* names round-trip */
    for (int f = 0; f < MODEL_KF_COUNT; f++)
        CHECK_EQ_INT(model_kernel_family_parse(model_kernel_family_name((enum model_kernel_family)f)), f);
    CHECK_EQ_INT(model_kernel_family_parse("gemms"), -1);
    CHECK_STREQ(model_kernel_family_name(MODEL_KF_COUNT), "other");
}

TEST(names_task_classes_round_trip)
{
    for (int c = 0; c < MODEL_TASK_CLASS_COUNT; c++)
        CHECK_EQ_INT(model_task_class_parse(model_task_class_name((enum model_task_class)c)), c);
    CHECK_EQ_INT(model_task_class_parse("gpu"), -1);
    CHECK_STREQ(model_task_class_name(MODEL_TASK_CLASS_COUNT), "unknown");
    CHECK_STREQ(model_call_kind_name(MODEL_CALL_MEMCPY), "memcpy");
    CHECK(model_task_on_gpu(MODEL_TASK_COMM) && model_task_on_gpu(MODEL_TASK_COPY));
    CHECK(!model_task_on_gpu(MODEL_TASK_CALL) && !model_task_on_gpu(MODEL_TASK_MARKER));
}

TEST(names_runtime_api_classes)
{
    static const struct {
        const char *name;
        enum model_rt_class rt;
    } calls[] = {
        {"cudaLaunchKernel", MODEL_RT_LAUNCH},
        {"cudaLaunchKernel_v7000", MODEL_RT_LAUNCH},
        {"cuLaunchKernel", MODEL_RT_LAUNCH},
        {"cudaLaunchKernelExC_v11060", MODEL_RT_LAUNCH},
        {"hipLaunchKernel", MODEL_RT_LAUNCH},
        {"hipExtModuleLaunchKernel", MODEL_RT_LAUNCH},
        {"cudaMemcpyAsync", MODEL_RT_LAUNCH},
        {"cudaMemsetAsync", MODEL_RT_LAUNCH},
        {"cudaGraphLaunch", MODEL_RT_LAUNCH},
        {"cudaMemcpy", MODEL_RT_LAUNCH_SYNC},
        {"cudaMemset", MODEL_RT_LAUNCH_SYNC},
        {"cudaStreamSynchronize", MODEL_RT_SYNC_STREAM},
        {"hipStreamSynchronize", MODEL_RT_SYNC_STREAM},
        {"cudaDeviceSynchronize", MODEL_RT_SYNC_DEVICE},
        {"cuCtxSynchronize", MODEL_RT_SYNC_DEVICE},
        {"cudaEventSynchronize", MODEL_RT_SYNC_EVENT},
        {"cudaEventRecord", MODEL_RT_EVENT_RECORD},
        {"cudaStreamWaitEvent", MODEL_RT_STREAM_WAIT},
        {"cudaEventQuery", MODEL_RT_QUERY},
        {"cudaStreamQuery", MODEL_RT_QUERY},
        {"hipEventQuery", MODEL_RT_QUERY},
        {"hipStreamQuery", MODEL_RT_QUERY},
        {"cuStreamQuery", MODEL_RT_QUERY},
        {"cudaGetDevice", MODEL_RT_OTHER},
        {"cudaFuncGetAttributes", MODEL_RT_OTHER},
        {"cudaMalloc", MODEL_RT_OTHER},
        {"", MODEL_RT_OTHER},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (model_runtime_class(calls[i].name) != calls[i].rt)
            sc_check_fail(__FILE__, __LINE__, "%s: class %d, expected %d", calls[i].name,
                          (int)model_runtime_class(calls[i].name), (int)calls[i].rt);
}

TEST(names_collectives_and_dtypes)
{
    static const struct {
        const char *name;
        enum model_coll_op op;
    } colls[] = {
        {"allreduce", MODEL_COLL_ALLREDUCE},
        {"all_reduce", MODEL_COLL_ALLREDUCE},
        {"nccl:all_reduce", MODEL_COLL_ALLREDUCE},
        {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", MODEL_COLL_ALLREDUCE},
        {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", MODEL_COLL_ALLGATHER},
        {"_allgather_base", MODEL_COLL_ALLGATHER},
        {"all_gather_into_tensor_coalesced", MODEL_COLL_ALLGATHER},
        {"_reduce_scatter_base", MODEL_COLL_REDUCESCATTER},
        {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", MODEL_COLL_REDUCESCATTER},
        {"all_to_allv", MODEL_COLL_ALLTOALL},
        {"broadcast", MODEL_COLL_BROADCAST},
        {"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", MODEL_COLL_BROADCAST},
        {"reduce", MODEL_COLL_REDUCE},
        {"gather", MODEL_COLL_GATHER},
        {"scatter", MODEL_COLL_SCATTER},
        {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", MODEL_COLL_SENDRECV},
        {"send", MODEL_COLL_SEND},
        {"recv", MODEL_COLL_RECV},
        {"barrier", MODEL_COLL_BARRIER},
        {"wait", MODEL_COLL_UNKNOWN},
        {"", MODEL_COLL_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++)
        if (model_coll_op_parse(colls[i].name) != colls[i].op)
            sc_check_fail(__FILE__, __LINE__, "%s: %s, expected %s", colls[i].name,
                          model_coll_op_name(model_coll_op_parse(colls[i].name)), model_coll_op_name(colls[i].op));
    CHECK_STREQ(model_coll_op_name(MODEL_COLL_REDUCESCATTER), "reducescatter");
    CHECK_STREQ(model_coll_op_name(MODEL_COLL_OP_COUNT), "unknown");
    CHECK(model_is_comm_kernel("ncclDevKernel_SendRecv") && model_is_comm_kernel("rcclKernel_x"));
    CHECK(!model_is_comm_kernel("volta_sgemm_128x64_nt"));
    CHECK(model_is_comm_kernel("NCCL_AllReduce") && model_is_comm_kernel("RcclKernel"));
    CHECK(!model_is_comm_kernel("nccx") && !model_is_comm_kernel("r") && !model_is_comm_kernel("") &&
          !model_is_comm_kernel("\x0e" "ccl"));
    CHECK_EQ_INT(model_dtype_bytes("Float"), 4);
    CHECK_EQ_INT(model_dtype_bytes("c10::BFloat16"), 2);
    CHECK_EQ_INT(model_dtype_bytes("torch.float16"), 2);
    CHECK_EQ_INT(model_dtype_bytes("Double"), 8);
    CHECK_EQ_INT(model_dtype_bytes("Float8_e4m3fn"), 1);
    CHECK_EQ_INT(model_dtype_bytes("Long"), 8);
    CHECK_EQ_INT(model_dtype_bytes("nosuch"), 0);
    CHECK_EQ_INT(model_dtype_bytes(NULL), 0);
}
