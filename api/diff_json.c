/* api/diff_json.c: the diff document (diff_json.h). */
#include "api/diff_json.h"

#include "api/inspect_json.h"
#include "model/diff.h"
#include "common/banned.h"

static json_t *kernel_list(const struct model_diff_kernel *k, size_t n)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        json_array_append_new(list, json_pack("{s:s, s:I, s:o, s:o}", "name", k[i].name, "count",
                                              (json_int_t)k[i].count, "a_ms", api_json_ms(k[i].a_ns), "b_ms",
                                              api_json_ms(k[i].b_ns)));
    return list;
}

json_t *api_diff_json(const struct model_diff *d)
{
    json_t *parts = json_object();
    for (size_t i = 0; parts && i < d->n_parts; i++)
        json_object_set_new(parts, d->parts[i].category, api_json_ms(d->parts[i].ns));
    return json_pack("{s:o, s:o, s:o, s:I, s:s, s:o, s:{s:o, s:o, s:o}}", "a_ms", api_json_ms(d->a_ns), "b_ms",
                     api_json_ms(d->b_ns), "difference_ms", api_json_ms(d->b_ns - d->a_ns), "steps",
                     (json_int_t)d->steps, "method", MODEL_DIFF_METHOD, "attribution", parts, "kernels", "added",
                     kernel_list(d->added, d->n_added), "removed", kernel_list(d->removed, d->n_removed),
                     "retimed", kernel_list(d->retimed, d->n_retimed));
}
