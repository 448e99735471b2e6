/* api/job_cadence.h: what a job costs a day, from its description (PUT
 * /v1/jobs/{job}) and its traces: its world size, its steps a day, the
 * price of a GPU-hour and its tags. The saving an experiment banks and the
 * fleet's waste are both "ms a step x world size x steps a day" at this
 * cadence.
 *
 *   world size   the traces' distributedInfo world_size (a built model's
 *                summary, api_model_summary), else the job
 *                config's tp x cp x pp x dp; never the traced rank count
 *   steps a day  the description's steps_per_day, else runtime_hours (the
 *                hours a day it runs) at the measured step; else unknown
 *   price        the description's gpu_hour_usd, else unknown */
#ifndef API_JOB_CADENCE_H
#define API_JOB_CADENCE_H

#include <stdint.h>

#include <jansson.h>

struct api_job_cadence {
    int64_t world_size;     /* 0: unknown */
    const char *world_from; /* "distributedInfo", "config" or NULL */
    double steps_per_day;   /* < 0: unknown */
    const char *steps_from; /* "steps_per_day", "runtime_hours" or NULL */
    double gpu_hour_usd;    /* < 0: unknown */
    char team[129], cluster[129]; /* tags, "" when none */
};

/* The ranges PUT /v1/jobs/{job} takes steps_per_day, runtime_hours and
 * gpu_hour_usd in (physical: a step a thousand days to a billion a day, a
 * few seconds to a day, a hundredth of a cent to a million dollars an
 * hour; zero, negatives and subnormal numbers lie below). 0 for any other
 * key. A stored value outside its range (an older daemon's) reads as not
 * given. */
int api_job_number_range(const char *key, double *min, double *max);

/* The cadence of a job whose stored description is `description` and
 * whose model's summary is `summary` (either NULL: none), its measured
 * step step_ms (for runtime_hours). */
void api_job_cadence_of(const char *description, const char *summary, double step_ms,
                        struct api_job_cadence *out);

/* GPU-hours a day that `ms_per_step` (on each rank) costs at the cadence:
 * ms / 3.6e6 x world size x steps a day; < 0 when either is unknown. */
double api_job_gpu_hours_per_day(const struct api_job_cadence *c, double ms_per_step);

/* {"world_size":N|null,"world_size_from":..,"steps_per_day":N|null,
 *  "steps_per_day_from":..,"gpu_hour_usd":P|null,"team":..,"cluster":..} */
json_t *api_job_cadence_json(const struct api_job_cadence *c);

#endif
