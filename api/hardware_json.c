/* api/hardware_json.c: a hardware profile as JSON (hardware_json.h). */
#include "api/hardware_json.h"

#include <stdlib.h>

#include "api/json_reply.h"
#include "api/reply.h"
#include "estimator/costs/hardware.h"
#include "common/banned.h"

static json_t *dtype_table(const double *v)
{
    json_t *o = json_object();
    for (int d = 0; o && d < HW_DTYPE_COUNT; d++)
        if (v[d] > 0 && json_object_set_new(o, cost_hw_dtype_name((enum hw_dtype)d), json_real(v[d]))) {
            json_decref(o);
            return NULL;
        }
    return o;
}

/* The "sources" of p's compiled-in file (where each figure comes from), or
 * NULL when it has none. */
static json_t *sources_json(const struct hw_profile *p)
{
    size_t len = 0;
    const char *text = cost_hw_profile_document(p, &len);
    json_t *doc = text ? json_loadb(text, len, 0, NULL) : NULL;
    json_t *sources = json_incref(json_object_get(doc, "sources"));
    json_decref(doc);
    return sources;
}

json_t *api_hardware_json(const struct hw_profile *p)
{
    json_t *names = json_array();
    for (int i = 0; names && i < p->n_device_names; i++)
        if (json_array_append_new(names, json_string(p->device_names[i]))) {
            json_decref(names);
            names = NULL;
        }
    json_t *o = json_pack("{s:s, s:s, s:i, s:f, s:f, s:o*, s:o*, s:o*, s:f, s:f, s:i, s:f, s:b, s:b, s:o*}",
                          "id", p->id, "name", p->name, "sm_count", p->sm_count, "hbm_gb", p->hbm_gb,
                          "hbm_gbps", p->hbm_gbps, "peak_tflops", dtype_table(p->peak_tflops),
                          "mamf_tflops", dtype_table(p->mamf_tflops), "gemm_tflops",
                          dtype_table(p->gemm_tflops), "nvlink_gbps", p->nvlink_gbps,
                          "network_gbps", p->network_gbps, "gpus_per_node", p->gpus_per_node,
                          "board_power_w", p->board_power_w, "nvls", p->nvls, "ib_sharp", p->ib_sharp,
                          "device_names", names);
    if (o && p->arch != HW_ARCH_UNKNOWN &&
        json_object_set_new(o, "architecture", json_string(cost_hw_arch_name(p->arch)))) {
        json_decref(o);
        o = NULL;
    }
    if (o && p->attn_efficiency > 0 &&
        json_object_set_new(o, "attention",
                            json_pack("{s:f, s:f, s:f, s:f}", "efficiency", p->attn_efficiency, "backward_fraction",
                                      p->attn_backward_fraction, "block_us", p->attn_block_us, "backward_block_us",
                                      p->attn_backward_block_us))) {
        json_decref(o);
        o = NULL;
    }
    json_t *sources = sources_json(p);
    if (o && sources && json_object_set_new(o, "sources", sources)) {
        json_decref(o);
        return NULL;
    }
    if (!o)
        json_decref(sources);
    char *lines_text = cost_coll_lines_json(p->coll_lines);
    json_t *lines = lines_text ? json_loads(lines_text, 0, NULL) : NULL;
    free(lines_text);
    if (o && lines && json_object_set_new(o, "collective_lines", lines)) {
        json_decref(o);
        return NULL;
    }
    if (!o)
        json_decref(lines);
    return o;
}

int api_reply_hardware_list(struct api_reply *r)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < cost_hw_profile_count(); i++)
        if (json_array_append_new(a, api_hardware_json(cost_hw_profile_at(i)))) {
            json_decref(a);
            a = NULL;
        }
    return api_reply_json(r, 200, a ? json_pack("{s:o}", "hardware", a) : NULL);
}

int api_reply_hardware(struct api_reply *r, const char *id)
{
    const struct hw_profile *p = cost_hw_profile_find(id);
    if (!p)
        return api_fail(r, API_E_NOT_FOUND, "no hardware profile '%s' (GET /v1/hardware lists them)", id);
    return api_reply_json(r, 200, api_hardware_json(p));
}
