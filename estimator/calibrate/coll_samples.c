/* estimator/calibrate/coll_samples.c: sized collectives of a trace grouped into runs
 * (coll_samples.h). */
#include "estimator/calibrate/coll_samples.h"

#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "estimator/costs/collective_model.h"
#include "model/collective.h"
#include "common/banned.h"

int calib_coll_runs_from_trace(const struct model_trace *t, struct coll_runs *runs, struct sc_error *err)
{
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        const struct model_collective *c = e->kind == MODEL_EV_KERNEL ? model_event_coll(t, e) : NULL;
        if (!c)
            continue;
        enum model_coll_op kind = model_coll_op_parse(model_str(t, c->name) ? model_str(t, c->name) : "");
        int el = model_dtype_bytes(model_str(t, c->dtype));
        int64_t nel = kind == MODEL_COLL_ALLGATHER ? c->out_nelems : c->in_nelems;
        if (!cost_coll_kind_modelled(kind) || el <= 0 || nel <= 0 || c->group_size < 2 || e->dur <= 0)
            continue;
        size_t r = 0;
        while (r < runs->n && (runs->v[r].kind != kind || runs->v[r].ranks != c->group_size))
            r++;
        if (r == runs->n) {
            if (sc_vec_reserve((void **)&runs->v, &runs->cap, runs->n + 1, sizeof *runs->v))
                goto oom;
            memset(&runs->v[r], 0, sizeof runs->v[r]);
            runs->v[r].kind = kind;
            runs->v[r].ranks = c->group_size;
            runs->n++;
        }
        struct nct_run *run = &runs->v[r];
        if (run->n_rows == 0 || (run->n_rows & (run->n_rows - 1)) == 0) { /* doubling */
            size_t ncap = run->n_rows ? run->n_rows * 2 : 1;
            struct nct_row *v = realloc(run->rows, ncap * sizeof *v);
            if (!v)
                goto oom;
            run->rows = v;
        }
        struct nct_row *row = &run->rows[run->n_rows++];
        memset(row, 0, sizeof *row);
        row->bytes = (double)nel * el;
        row->count = (double)nel;
        row->time_us[0] = (double)e->dur / 1000;
        row->time_us[1] = -1;
        row->algbw_gbps[0] = row->bytes / row->time_us[0] * 1e-3;
        row->busbw_gbps[0] = row->algbw_gbps[0] * cost_coll_bus_factor(kind, c->group_size);
    }
    return SC_OK;
oom:
    return sc_error_set(err, SC_ENOMEM, "out of memory");
}

void calib_coll_runs_release(struct coll_runs *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        calib_nct_run_release(&r->v[i]);
    free(r->v);
    memset(r, 0, sizeof *r);
}

int calib_coll_run_check(const struct coll_params *p, const struct nct_run *run, int ranks_per_domain,
                   double min_bytes, struct estimate_check *out, struct sc_error *err)
{
    struct coll_group g = {run->ranks, ranks_per_domain < run->ranks ? ranks_per_domain : run->ranks};
    double *ratio = malloc((2 * run->n_rows + 1) * sizeof *ratio);
    size_t n = 0;
    int status = SC_OK;
    memset(out, 0, sizeof *out);
    if (!ratio)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    for (size_t i = 0; i < run->n_rows && !status; i++)
        for (int k = 0; k < 2 && !status; k++) {
            struct coll_estimate e;
            if (!(run->rows[i].time_us[k] > 0) || !(run->rows[i].bytes > 0) || run->rows[i].bytes < min_bytes)
                continue;
            if (!(status = cost_coll_estimate(p, run->kind, &g, run->rows[i].bytes, &e, err)))
                ratio[n++] = e.time_us / run->rows[i].time_us[k];
        }
    if (!status && cost_estimate_check_ratios(ratio, n, out))
        status = sc_error_set(err, SC_ENOMEM, "out of memory");
    free(ratio);
    return status;
}
