/* api/fleet_json.c: the fleet by wasted GPU-hours a day (fleet_json.h). */
#include "api/fleet_json.h"

#include <stdlib.h>
#include <string.h>

#include "api/job_cadence.h"
#include "api/page.h"
#include "model/opportunity.h"
#include "common/banned.h"

struct row {
    size_t i;
    int tier;     /* 0: GPU-hours a day known; 1: GPU-ms a step summed; 2: ms a step on a rank */
    double waste; /* in the tier's unit */
    double unexplained;
    json_t *doc;
};

static int by_waste(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->tier != y->tier)
        return x->tier - y->tier;
    if (x->waste != y->waste)
        return x->waste < y->waste ? 1 : -1;
    return (x->i > y->i) - (x->i < y->i);
}

static json_t *num_or_null(double v, int known)
{
    return known ? json_real(v) : json_null();
}

/* The saving of the opportunity with change `change`, ms (0 when none). */
static double saving_of(const json_t *doc, const char *change)
{
    const json_t *o;
    size_t i;
    json_array_foreach(json_object_get(doc, "opportunities"), i, o) {
        const char *c = json_string_value(json_object_get(o, "change"));
        if (c && !strcmp(c, change))
            return json_number_value(json_object_get(o, "saving_ms"));
    }
    return 0;
}

/* The waste split by kind of opportunity (its resource: communication,
 * host, launch, gpu): each actionable change's saving alone (those that
 * save), summed by kind, and each kind's share of their sum. Applied
 * together the changes save less than the sum of their savings alone, so
 * the waste is apportioned by these shares. */
static json_t *waste_by_kind(const json_t *doc)
{
    enum { KINDS = 8 };
    const char *kind[KINDS];
    double alone[KINDS], total = 0;
    size_t n = 0, i;
    const json_t *o;
    json_array_foreach(json_object_get(doc, "opportunities"), i, o) {
        const char *change = json_string_value(json_object_get(o, "change")),
                   *resource = json_string_value(json_object_get(o, "resource"));
        double saving = json_number_value(json_object_get(o, "saving_ms"));
        if (!change || !resource || !model_opportunity_actionable(change) || !(saving > 0))
            continue;
        size_t k = 0;
        while (k < n && strcmp(kind[k], resource))
            k++;
        if (k == KINDS)
            continue;
        if (k == n) {
            kind[n] = resource;
            alone[n++] = 0;
        }
        alone[k] += saving;
        total += saving;
    }
    json_t *out = json_array();
    for (size_t k = 0; out && k < n; k++)
        json_array_append_new(out, json_pack("{s:s, s:f, s:f}", "kind", kind[k], "alone_ms_per_step_per_rank",
                                             alone[k], "share", alone[k] / total));
    return out;
}

static const char *const tier_names[] = {"wasted_gpu_hours_per_day_summed", "wasted_gpu_ms_per_step_summed",
                                         "waste_ms_per_step_per_rank"};

json_t *api_fleet_waste_json(const struct api_fleet_job *v, size_t n, const struct api_page *pg, size_t skipped)
{
    size_t first = api_page_first(pg), limit = pg->limit;
    struct row *rows = calloc(n ? n : 1, sizeof *rows);
    json_t *jobs = json_array(), *apart = json_array();
    if (!rows || !jobs || !apart) {
        free(rows);
        json_decref(jobs);
        json_decref(apart);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *d = v[i].opportunities;
        double step = json_number_value(json_object_get(d, "step_ms")),
               waste = json_number_value(json_object_get(d, "actionable_saving_ms")),
               unexplained = saving_of(d, "unexplained=0");
        struct api_job_cadence c;
        api_job_cadence_of(v[i].description, v[i].summary, step, &c);
        double hours = api_job_gpu_hours_per_day(&c, waste), summed = waste * (double)c.world_size;
        struct row *r = &rows[i];
        r->i = i;
        r->tier = hours >= 0 ? 0 : c.world_size > 0 ? 1 : 2;
        r->waste = r->tier == 0 ? hours : r->tier == 1 ? summed : waste;
        r->doc = json_pack("{s:s, s:s, s:o, s:o, s:s, s:f, s:f, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "job", v[i].job,
                           "model", v[i].model, "team", c.team[0] ? json_string(c.team) : json_null(), "cluster",
                           c.cluster[0] ? json_string(c.cluster) : json_null(), "ranked_by", tier_names[r->tier],
                           "step_ms_per_rank", step, "waste_ms_per_step_per_rank", waste, "world_size",
                           c.world_size > 0 ? json_integer(c.world_size) : json_null(), "world_size_from",
                           c.world_from ? json_string(c.world_from) : json_null(), "steps_per_day",
                           num_or_null(c.steps_per_day, c.steps_per_day >= 0), "steps_per_day_from",
                           c.steps_from ? json_string(c.steps_from) : json_null(), "wasted_gpu_ms_per_step_summed",
                           num_or_null(summed, c.world_size > 0), "wasted_gpu_hours_per_day_summed",
                           num_or_null(hours, hours >= 0), "wasted_usd_per_day",
                           num_or_null(hours * c.gpu_hour_usd, hours >= 0 && c.gpu_hour_usd >= 0));
        if (r->doc)
            json_object_set_new(r->doc, "waste_by_kind", waste_by_kind(d));
        if (r->doc && r->tier)
            json_object_set_new(r->doc, "note",
                                json_string(c.world_size > 0 ? "no steps a day (PUT /v1/jobs/{job}: steps_per_day or "
                                                               "runtime_hours): ranked per step"
                                                             : "no world size (distributedInfo or the job's config) "
                                                               "and no steps a day: ranked per step on a rank"));
        r->unexplained = unexplained;
    }
    qsort(rows, n, sizeof *rows, by_waste);
    for (size_t i = 0; i < n; i++) {
        if (i >= first && i < first + limit && !rows[i].doc)
            skipped++; /* a row that cannot be rendered (text that is not UTF-8) */
        if (i >= first && i < first + limit && rows[i].doc) {
            json_object_set_new(rows[i].doc, "rank", json_integer((json_int_t)i + 1));
            json_array_append_new(jobs, rows[i].doc);
            if (rows[i].unexplained > 0) /* of the jobs on this page */
                json_array_append_new(apart, json_pack("{s:s, s:s, s:f}", "job", v[rows[i].i].job, "model",
                                                       v[rows[i].i].model, "unexplained_ms_per_step_per_rank",
                                                       rows[i].unexplained));
        } else {
            json_decref(rows[i].doc);
        }
    }
    char cursor[API_PAGE_CURSOR_MAX];
    int more = n > first + limit;
    if (more) /* the rank and job of the page's last row */
        api_page_cursor((int64_t)(first + limit), v[rows[first + limit - 1].i].job, cursor);
    free(rows);
    return json_pack("{s:o, s:o, s:o, s:I, s:s}", "jobs", jobs, "needs_tracing_of_more_ranks", apart, "next_cursor",
                     more ? json_string(cursor) : json_null(), "skipped", (json_int_t)skipped, "method",
                     "waste: the measured step less the step with every actionable opportunity applied together "
                     "and replayed (network 2x faster, host overhead halved, launch overhead gone, the top kernel "
                     "families 2x faster, stragglers removed), per step on each rank; x world size x steps a day "
                     "/ 3.6e6 ms = GPU-hours a day summed over ranks; dollars at gpu_hour_usd. Jobs without steps "
                     "a day rank after, per step; unexplained waits are listed apart: they need more ranks traced");
}
