/* api/job_cadence.c: a job's cost a day from its description and traces
 * (job_cadence.h). */
#include "api/job_cadence.h"

#include <stdio.h>
#include <string.h>

#include "api/whatif_json.h"
#include "estimator/spec/job_config.h"
#include "common/banned.h"

int api_job_number_range(const char *key, double *min, double *max)
{
    static const struct {
        const char *key;
        double min, max;
    } ranges[] = {{"steps_per_day", 1e-3, 1e9}, {"runtime_hours", 1e-3, 24}, {"gpu_hour_usd", 1e-4, 1e6}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (strcmp(key, ranges[i].key) == 0) {
            *min = ranges[i].min;
            *max = ranges[i].max;
            return 1;
        }
    return 0;
}

/* A number of the description in its range, else -1 (not given). */
static double positive(const json_t *doc, const char *key)
{
    const json_t *v = json_object_get(doc, key);
    double min = 0, max = 0, x = json_number_value(v);
    return json_is_number(v) && api_job_number_range(key, &min, &max) && x >= min && x <= max ? x : -1;
}

static void tag(const json_t *doc, const char *key, char *out, size_t n)
{
    const char *v = json_string_value(json_object_get(json_object_get(doc, "tags"), key));
    snprintf(out, n, "%s", v ? v : "");
}

void api_job_cadence_of(const char *description, const char *summary, double step_ms,
                        struct api_job_cadence *out)
{
    json_t *doc = description ? json_loads(description, 0, NULL) : NULL,
           *sum = summary ? json_loads(summary, 0, NULL) : NULL;
    struct job_config cfg;
    struct sc_error err;
    memset(out, 0, sizeof *out);
    out->steps_per_day = out->gpu_hour_usd = -1;
    if (json_integer_value(json_object_get(sum, "world_size")) > 0) {
        out->world_size = json_integer_value(json_object_get(sum, "world_size"));
        out->world_from = "distributedInfo";
    }
    json_decref(sum);
    if (!out->world_size && description && api_job_config_from_job(description, &cfg, &err) == SC_OK &&
        spec_job_config_world_size(&cfg) > 0) {
        out->world_size = spec_job_config_world_size(&cfg);
        out->world_from = "config";
    }
    double hours = positive(doc, "runtime_hours");
    if ((out->steps_per_day = positive(doc, "steps_per_day")) > 0)
        out->steps_from = "steps_per_day";
    else if (hours > 0 && step_ms > 0)
        out->steps_per_day = hours * 3.6e6 / step_ms, out->steps_from = "runtime_hours";
    out->gpu_hour_usd = positive(doc, "gpu_hour_usd");
    tag(doc, "team", out->team, sizeof out->team);
    tag(doc, "cluster", out->cluster, sizeof out->cluster);
    json_decref(doc);
}

double api_job_gpu_hours_per_day(const struct api_job_cadence *c, double ms_per_step)
{
    if (c->world_size <= 0 || c->steps_per_day < 0)
        return -1;
    return ms_per_step / 3.6e6 * (double)c->world_size * c->steps_per_day;
}

static json_t *num_or_null(double v)
{
    return v >= 0 ? json_real(v) : json_null();
}

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

json_t *api_job_cadence_json(const struct api_job_cadence *c)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "world_size",
                     c->world_size > 0 ? json_integer(c->world_size) : json_null(), "world_size_from",
                     str_or_null(c->world_from), "steps_per_day", num_or_null(c->steps_per_day), "steps_per_day_from",
                     str_or_null(c->steps_from), "gpu_hour_usd", num_or_null(c->gpu_hour_usd), "team",
                     str_or_null(c->team), "cluster", str_or_null(c->cluster));
}
