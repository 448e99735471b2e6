/* api/fleet_json.h: the fleet ranked by wasted GPU-hours a day (GET
 * /v1/fleet, `stepcast fleet`).
 *
 * A job's waste is its measured step less the step with every actionable
 * opportunity applied together and replayed (model/opportunity.h
 * actionable_ns), per step on each rank, times its world size and steps a
 * day (api/job_cadence.h): GPU-hours a day summed over ranks, and dollars
 * at gpu_hour_usd. Jobs whose description gives no steps a day are ranked
 * after those that do, by GPU-ms per step summed over ranks (or per rank,
 * without a world size), and say so. The unexplained waits are not
 * savings anyone can act on: they are listed apart, as needing more ranks
 * traced. Every figure says whether it is per rank or summed over ranks.
 * waste_by_kind splits the waste by kind of opportunity: each kind's
 * actionable savings alone and its share of all of them, by which a
 * picture apportions the waste (applied together they save less than
 * their sum). */
#ifndef API_FLEET_JSON_H
#define API_FLEET_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct api_fleet_job {
    const char *job, *model;
    const json_t *opportunities; /* its model's document (api_opportunities_json), borrowed */
    const char *description;     /* the job's stored description, or NULL */
    const char *summary;         /* the model's summary, or NULL */
};

struct api_page;

/* The fleet document of v[0..n), the page pg of its ranking (api/page.h:
 * ranks after the cursor's, at most pg->limit of them; skipped: rows
 * already left out, to which those that cannot be rendered are added):
 * {"jobs":[{"rank","job","model","team","cluster","ranked_by",
 *   "step_ms_per_rank","waste_ms_per_step_per_rank","world_size",
 *   "world_size_from","steps_per_day","steps_per_day_from",
 *   "wasted_gpu_ms_per_step_summed","wasted_gpu_hours_per_day_summed",
 *   "wasted_usd_per_day","note",
 *   "waste_by_kind":[{"kind","alone_ms_per_step_per_rank","share"}]}],
 *  "needs_tracing_of_more_ranks":[{"job","model","unexplained_ms_per_step_per_rank"}] (of the page's jobs),
 *  "next_cursor":C or null,"skipped":N,
 *  "method":".."} */
json_t *api_fleet_waste_json(const struct api_fleet_job *v, size_t n, const struct api_page *pg, size_t skipped);

#endif
