/* tests/unit/test_hardware.c: the compiled-in hardware profiles, their
 * parser, and the map from trace device names to profiles (checked on the
 * device names the shared traces carry). */
#include <stdlib.h>
#include <string.h>

#include "estimator/costs/hardware.h"
#include "model/trace.h"
#include "tests/check.h"
#include "tests/helpers.h"
#include "common/banned.h"

static const char *const issue_profiles[] = {
    "a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "h200", "h800", "b200", "b300", "gb200",
    "v100-sxm2-16gb", "v100-sxm2-32gb", "mi300x"};

TEST(hardware_every_profile_is_compiled_in_and_sane)
{
    CHECK_EQ_INT(cost_hw_profile_count(), sizeof issue_profiles / sizeof issue_profiles[0]);
    for (size_t i = 0; i < sizeof issue_profiles / sizeof issue_profiles[0]; i++) {
        const struct hw_profile *p = cost_hw_profile_find(issue_profiles[i]);
        CHECK(p != NULL);
        if (!p)
            continue;
        CHECK(strcmp(p->id, issue_profiles[i]) == 0);
        CHECK(p->sm_count > 0 && p->hbm_gb > 0 && p->hbm_gbps > 0 && p->board_power_w > 0);
        /* every GPU here has 16-bit tensor cores; the NVLink (or xGMI)
         * domain is faster than the network between domains */
        CHECK(p->peak_tflops[HW_FP16] > p->peak_tflops[HW_FP32]);
        CHECK(p->nvlink_gbps > p->network_gbps);
        CHECK(p->n_device_names >= 1);
        CHECK(p->arch != HW_ARCH_UNKNOWN);
        /* NVFP4 is Blackwell's: an fp4 peak exactly where the architecture is */
        CHECK((p->peak_tflops[HW_FP4] > 0) == (p->arch == HW_ARCH_BLACKWELL));
    }
    for (size_t i = 1; i < cost_hw_profile_count(); i++)
        CHECK(strcmp(cost_hw_profile_at(i - 1)->id, cost_hw_profile_at(i)->id) < 0);
    CHECK(cost_hw_profile_find("h100") == NULL);
    CHECK(cost_hw_profile_at(cost_hw_profile_count()) == NULL);
}

TEST(hardware_figures_follow_the_spec_sheets)
{
    const struct hw_profile *a = cost_hw_profile_find("a100-sxm4-80gb"), *h = cost_hw_profile_find("h100-sxm"),
                            *gb = cost_hw_profile_find("gb200"), *v = cost_hw_profile_find("v100-sxm2-16gb");
    CHECK(a && h && gb && v);
    if (!(a && h && gb && v))
        return;
    CHECK_NEAR(a->peak_tflops[HW_BF16], 312, 0.01);
    CHECK(a->peak_tflops[HW_FP8] == 0); /* Ampere has no fp8 */
    CHECK_NEAR(h->peak_tflops[HW_BF16], 989.4, 0.1);
    CHECK_NEAR(h->peak_tflops[HW_FP8], 2 * h->peak_tflops[HW_BF16], 1);
    CHECK(h->peak_tflops[HW_FP4] == 0 && gb->peak_tflops[HW_FP4] > 0);
    CHECK_EQ_INT(gb->gpus_per_node, 72);
    CHECK_NEAR(gb->board_power_w, 1200, 1);
    CHECK(v->peak_tflops[HW_BF16] == 0 && v->peak_tflops[HW_TF32] == 0);
    /* per direction: half the datasheet's bidirectional NVLink figure */
    CHECK_NEAR(h->nvlink_gbps, 450, 0.01);
    CHECK_NEAR(a->nvlink_gbps, 300, 0.01);
    /* the measured ceiling sits below the dense peak */
    CHECK(h->mamf_tflops[HW_BF16] > 0.7 * h->peak_tflops[HW_BF16]);
    CHECK(h->mamf_tflops[HW_BF16] < h->peak_tflops[HW_BF16]);
}

TEST(hardware_b300_follows_its_datasheet_and_mamf)
{
    const struct hw_profile *b3 = cost_hw_profile_find("b300"), *b2 = cost_hw_profile_find("b200");
    CHECK(b3 && b2);
    if (!(b3 && b2))
        return;
    CHECK(b3->arch == HW_ARCH_BLACKWELL);
    CHECK_NEAR(b3->hbm_gb, 288, 0.01);
    CHECK(b3->hbm_gb > b2->hbm_gb);
    /* Blackwell Ultra: the B200's bf16 and fp8 dense peaks, more fp4 */
    CHECK_NEAR(b3->peak_tflops[HW_BF16], b2->peak_tflops[HW_BF16], 0.01);
    CHECK_NEAR(b3->peak_tflops[HW_FP8], 2 * b3->peak_tflops[HW_BF16], 0.01);
    CHECK(b3->peak_tflops[HW_FP4] > b2->peak_tflops[HW_FP4]);
    CHECK_NEAR(b3->mamf_tflops[HW_BF16], 1769.0, 0.01);
    CHECK_NEAR(b3->mamf_tflops[HW_FP8], 3353.3, 0.01);
    CHECK_NEAR(b3->nvlink_gbps, 900, 0.01);
    CHECK(b3->network_gbps > b2->network_gbps); /* ConnectX-8 at 800 Gb/s */
    CHECK_EQ_INT(b3->gpus_per_node, 8);
    const struct hw_profile *p = cost_hw_profile_for_device("NVIDIA B300 SXM6 AC");
    CHECK(p == b3);
}

TEST(hardware_architecture_is_parsed_and_checked)
{
    struct hw_profile p;
    struct sc_error err;
    const char *ok = "{\"id\":\"x\",\"name\":\"X\",\"architecture\":\"hopper\",\"sm_count\":10,\"hbm_gb\":1,"
                     "\"hbm_gbps\":100,\"nvlink_gbps\":10,\"network_gbps\":1,\"gpus_per_node\":8,"
                     "\"board_power_w\":100,\"peak_tflops\":{\"bf16\":100}}";
    CHECK(cost_hw_profile_parse(ok, strlen(ok), &p, &err) == SC_OK);
    CHECK(p.arch == HW_ARCH_HOPPER);
    CHECK(strcmp(cost_hw_arch_name(p.arch), "hopper") == 0);
    const char *bad = "{\"id\":\"x\",\"name\":\"X\",\"architecture\":\"pascal\",\"sm_count\":10,\"hbm_gb\":1,"
                      "\"hbm_gbps\":100,\"nvlink_gbps\":10,\"network_gbps\":1,\"gpus_per_node\":8,"
                      "\"board_power_w\":100,\"peak_tflops\":{\"bf16\":100}}";
    CHECK(cost_hw_profile_parse(bad, strlen(bad), &p, &err) == SC_EPARSE);
    CHECK(strstr(err.msg, "architecture") != NULL);
}

TEST(hardware_device_names_map_explicitly)
{
    const struct hw_profile *p = cost_hw_profile_for_device("NVIDIA A100-PG509-200");
    CHECK(p && strcmp(p->id, "a100-sxm4-40gb") == 0);
    p = cost_hw_profile_for_device("Tesla V100-SXM2-16GB");
    CHECK(p && strcmp(p->id, "v100-sxm2-16gb") == 0);
    p = cost_hw_profile_for_device("NVIDIA A100-SXM4-80GB");
    CHECK(p && strcmp(p->id, "a100-sxm4-80gb") == 0);
    /* never guessed from a near match */
    CHECK(cost_hw_profile_for_device("NVIDIA A100-PCIE-40GB") == NULL);
    CHECK(cost_hw_profile_for_device("NVIDIA GeForce RTX 2080 Ti") == NULL);
    CHECK(cost_hw_profile_for_device("") == NULL);
    CHECK(cost_hw_profile_for_device(NULL) == NULL);
}

TEST(hardware_dtypes)
{
    enum hw_dtype d;
    struct sc_error err;
    CHECK(cost_hw_dtype_parse("bf16", &d, &err) == SC_OK && d == HW_BF16);
    CHECK(cost_hw_dtype_parse("fp4", &d, &err) == SC_OK && d == HW_FP4);
    CHECK(cost_hw_dtype_parse("float16", &d, &err) == SC_EINVAL);
    CHECK(strstr(err.msg, "float16") != NULL);
    CHECK(cost_hw_dtype_parse(NULL, &d, &err) == SC_EINVAL);
    CHECK_NEAR(cost_hw_dtype_bytes(HW_FP8), 1, 0);
    CHECK_NEAR(cost_hw_dtype_bytes(HW_FP4), 0.5, 0);
    CHECK(strcmp(cost_hw_dtype_name(HW_TF32), "tf32") == 0);
}

static int parse(const char *json, struct sc_error *err)
{
    struct hw_profile p;
    return cost_hw_profile_parse(json, strlen(json), &p, err);
}

#define MINIMAL                                                                                 \
    "\"id\":\"x\",\"name\":\"X\",\"sm_count\":10,\"hbm_gb\":1,\"hbm_gbps\":100,"                \
    "\"nvlink_gbps\":10,\"network_gbps\":1,\"gpus_per_node\":8,\"board_power_w\":100"

TEST(hardware_parser_rejects_bad_profiles)
{
    struct sc_error err;
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100}}", &err) == SC_OK);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"colour\":1}", &err) == SC_EPARSE);
    CHECK(strstr(err.msg, "colour") != NULL);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf17\":100}}", &err) == SC_EPARSE);
    CHECK(strstr(err.msg, "bf17") != NULL);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":-1}}", &err) == SC_EPARSE);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"mamf_tflops\":{\"bf16\":200}}",
                &err) == SC_EPARSE);
    CHECK(strstr(err.msg, "mamf") != NULL);
    /* ceilings measured on the GPU: under its peak, every dtype it has */
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100,\"fp8\":200},"
                "\"gemm_tflops\":{\"bf16\":90,\"fp8\":150}}", &err) == SC_OK);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"gemm_tflops\":{\"bf16\":101}}", &err) ==
          SC_EPARSE);
    CHECK(strstr(err.msg, "gemm_tflops.bf16 exceeds") != NULL);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100,\"fp8\":200},\"gemm_tflops\":{\"bf16\":90}}",
                &err) == SC_EPARSE);
    CHECK(strstr(err.msg, "gemm_tflops.fp8 is missing") != NULL);
    /* attention measured on the GPU: all four figures, in range */
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"attention\":{\"efficiency\":0.9,"
                "\"backward_fraction\":0.8,\"block_us\":5,\"backward_block_us\":20}}", &err) == SC_OK);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"attention\":{\"efficiency\":0.9}}", &err) ==
          SC_EPARSE);
    CHECK(strstr(err.msg, "attention") != NULL);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"attention\":{\"efficiency\":9,"
                "\"backward_fraction\":0.8,\"block_us\":5,\"backward_block_us\":20}}", &err) == SC_EPARSE);
    CHECK(strstr(err.msg, "attention.efficiency") != NULL);
    CHECK(parse("{" MINIMAL "}", &err) == SC_EPARSE); /* no peak table */
    CHECK(parse("{\"id\":\"x\"}", &err) == SC_EPARSE);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"sm_count\":1.5}", &err) ==
          SC_EPARSE); /* duplicate key */
    CHECK(parse("[1]", &err) == SC_EPARSE);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"device_names\":[\"a\",\"b\",\"c\","
                "\"d\",\"e\"]}", &err) == SC_EPARSE);
    /* measured collective lines: read as a cluster profile's, the key named */
    struct hw_profile p;
    const char *lines = "{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"collective_lines\":{\"all_gather\":["
                        "{\"from_bytes\":32,\"to_bytes\":32768,\"hop_us\":4.4,\"busbw_gbps\":88}]}}";
    CHECK(cost_hw_profile_parse(lines, strlen(lines), &p, &err) == SC_OK);
    CHECK(p.coll_lines[MODEL_COLL_ALLGATHER].n == 1 && p.coll_lines[MODEL_COLL_ALLREDUCE].n == 0);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"collective_lines\":{\"all_gather\":["
                "{\"from_bytes\":32,\"to_bytes\":32768,\"hop_us\":4.4,\"busbw_gbps\":0}]}}", &err) == SC_EPARSE);
    CHECK(strstr(err.msg, "collective_lines") != NULL && strstr(err.msg, "busbw_gbps: 0 is out of range (1e-06 to 100000)") != NULL);
    CHECK(parse("{" MINIMAL ",\"peak_tflops\":{\"bf16\":100},\"collective_lines\":{\"gather\":[]}}", &err) ==
          SC_EPARSE);
    CHECK(strstr(err.msg, "collective_lines.gather") != NULL);
}

/* Every NVIDIA device name in the shared traces is a known profile, except
 * the consumer card that no estimate targets: that one is reported unknown. */
TEST(hardware_shared_trace_devices)
{
    static const struct {
        const char *rel, *profile;
    } cases[] = {
        {"HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz", "a100-sxm4-40gb"},
        {"HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz", "v100-sxm2-16gb"},
        {"HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz", "a100-sxm4-40gb"},
        {"HolisticTraceAnalysis/tests/data/negative_queue_length_values_check/rank0.json.gz",
         "a100-sxm4-80gb"},
        {"HolisticTraceAnalysis/tests/data/ns_resolution_trace/"
         "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "v100-sxm2-32gb"},
        {"param/et_replay/tests/inputs/linear_kineto.json.gz", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct model_trace *t = NULL;
        struct sc_error err;
        const char *path = th_shared_path(cases[i].rel);
        CHECK(model_trace_load_file(path, NULL, &t, &err) == SC_OK);
        CHECK(t && t->n_devices >= 1);
        if (!t || t->n_devices < 1) {
            model_trace_free(t);
            continue;
        }
        const struct hw_profile *p = cost_hw_profile_for_device(model_str(t, t->devices[0].name));
        if (cases[i].profile)
            CHECK(p && strcmp(p->id, cases[i].profile) == 0);
        else
            CHECK(p == NULL);
        model_trace_free(t);
    }
}

TEST(hardware_command_line)
{
    char *out = NULL, *err = NULL;
    char *list[] = {(char *)th_build_path("stepcast"), "hardware", "h100-sxm", "--json", NULL};
    CHECK_EQ_INT(th_run(list, &out, &err), 0);
    CHECK(out && strstr(out, "\"id\": \"h100-sxm\"") && strstr(out, "\"bf16\": 989.4"));
    free(out);
    free(err);
    char *unknown[] = {(char *)th_build_path("stepcast"), "hardware", "h100", NULL};
    CHECK_EQ_INT(th_run(unknown, &out, &err), 2);
    CHECK(err && strstr(err, "no hardware profile 'h100'"));
    free(out);
    free(err);
}
