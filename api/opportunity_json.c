/* api/opportunity_json.c: opportunity documents (opportunity_json.h). */
#include "api/opportunity_json.h"

#include <math.h>
#include <stdlib.h>

#include "api/inspect_json.h"
#include "api/page.h"
#include "common/vec.h"
#include "model/opportunity.h"
#include "common/banned.h"

json_t *api_opportunities_json(const struct model_opportunities *o)
{
    json_t *list = json_array();
    if (!list)
        return NULL;
    for (size_t i = 0; i < o->n; i++) {
        const struct model_opportunity *p = &o->v[i];
        double pct = o->step_ns > 0 ? (double)p->saving_ns / (double)o->step_ns * 100.0 : 0.0;
        json_t *e = json_pack("{s:s, s:s, s:s, s:o, s:f, s:o}", "name", p->name, "resource", p->resource,
                              "change", p->change, "saving_ms", api_json_ms(p->saving_ns), "saving_pct",
                              round(pct * 1000) / 1000, "amdahl_bound_ms", api_json_ms(p->bound_ns));
        if (e && p->saving_at_zero_ns != -1)
            json_object_set_new(e, "saving_at_zero_ms", api_json_ms(p->saving_at_zero_ns));
        json_array_append_new(list, e);
    }
    return json_pack("{s:o, s:o, s:I, s:o, s:o}", "step_ms", api_json_ms(o->step_ns), "gpu_idle_ms",
                     api_json_ms(o->gpu_idle_ns), "ranks", (json_int_t)o->n_ranks, "actionable_saving_ms",
                     api_json_ms(o->actionable_ns), "opportunities", list);
}

struct fleet_row {
    size_t i;
    double gpu_ms;
};

static int by_gpu_ms(const void *a, const void *b)
{
    const struct fleet_row *x = a, *y = b;
    if (x->gpu_ms != y->gpu_ms)
        return x->gpu_ms < y->gpu_ms ? 1 : -1;
    return (x->i > y->i) - (x->i < y->i);
}

json_t *api_fleet_json(const char *const *models, const char *const *jobs, json_t *const *docs, size_t n,
                       const struct api_page *pg, size_t skipped)
{
    size_t first = api_page_first(pg), limit = pg->limit;
    char cursor[API_PAGE_CURSOR_MAX];
    struct fleet_row *rows = malloc((n ? n : 1) * sizeof *rows);
    json_t *list = json_array();
    size_t m = 0;
    if (!rows || !list) {
        free(rows);
        json_decref(list);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *best = json_array_get(json_object_get(docs[i], "opportunities"), 0);
        if (!best)
            continue;
        double ranks = (double)json_integer_value(json_object_get(docs[i], "ranks"));
        rows[m++] = (struct fleet_row){i, json_number_value(json_object_get(best, "saving_ms")) * ranks};
    }
    sc_sort(rows, m, sizeof *rows, by_gpu_ms);
    int more = m > first + limit;
    if (more) /* the rank and model of the page's last row */
        api_page_cursor((int64_t)(first + limit), models[rows[first + limit - 1].i], cursor);
    for (size_t k = first; k < m && k < first + limit; k++) {
        json_t *row = json_pack("{s:I, s:s, s:s, s:O, s:O, s:O, s:f, s:O}", "rank", (json_int_t)k + 1, "model",
                                models[rows[k].i], "job", jobs[rows[k].i], "ranks", json_object_get(docs[rows[k].i], "ranks"),
                                "step_ms", json_object_get(docs[rows[k].i], "step_ms"), "gpu_idle_ms",
                                json_object_get(docs[rows[k].i], "gpu_idle_ms"), "gpu_ms_per_step",
                                round(rows[k].gpu_ms * 1000) / 1000, "opportunity",
                                json_array_get(json_object_get(docs[rows[k].i], "opportunities"), 0));
        if (row)
            json_array_append_new(list, row);
        else
            skipped++; /* text that is not UTF-8 */
    }
    free(rows);
    return json_pack("{s:o, s:o, s:I}", "jobs", list, "next_cursor", more ? json_string(cursor) : json_null(),
                     "skipped", (json_int_t)skipped);
}
