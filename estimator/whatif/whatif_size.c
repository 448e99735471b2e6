/* estimator/whatif/whatif_size.c: a what-if's predicted size (whatif_size.h). */
#include "estimator/whatif/whatif_size.h"

#include "common/banned.h"

/* to / from when both are given and to is larger, else 1 */
static double grows(int64_t from, int64_t to)
{
    return from > 0 && to > from ? (double)to / (double)from : 1.0;
}

/* micro-batches a step of c: global_batch / (micro_batch x dp), or 0
 * when c does not say */
static double micro_batches(const struct job_config *c)
{
    int64_t mb = c->micro_batch ? c->micro_batch : 1;
    return c->global_batch && c->dp ? (double)c->global_batch / (double)(mb * c->dp) : 0;
}

void whatif_size_predict(size_t n_tasks, const struct job_config *base, const struct job_config *set, struct whatif_size *out)
{
    struct job_config t = *base; /* the target: base with set's keys */
    double g = 1.0;
#define TAKE(k) \
    if (set->k) \
        t.k = set->k
    TAKE(tp);
    TAKE(pp);
    TAKE(dp);
    TAKE(micro_batch);
    TAKE(global_batch);
    TAKE(layers);
    TAKE(cp);
    TAKE(vpp);
#undef TAKE
    /* without global_batch in the set, each rank's batch is kept */
    if (set->dp && !set->global_batch && base->global_batch && base->dp)
        t.global_batch = base->global_batch / base->dp * t.dp;
    if (set->has_schedule)
        t.schedule = set->schedule, t.has_schedule = 1;
    /* the copy keeps the traced tasks (layers and micro-batches re-time
     * them); the schedule rebuilt (whatif.c's condition) has the
     * target's layers, micro-batches and stages */
    int rebuilt = t.pp != base->pp || spec_job_config_schedule(&t) != spec_job_config_schedule(base) ||
                  spec_job_config_vpp(&t) != spec_job_config_vpp(base) || (t.cp ? t.cp : 1) != (base->cp ? base->cp : 1) ||
                  (base->pp > 1 && (t.tp != base->tp || t.dp != base->dp));
    if (rebuilt) {
        g *= grows(base->layers, t.layers);
        double m0 = micro_batches(base), m1 = micro_batches(&t);
        if (m0 > 0 && m1 > m0)
            g *= m1 / m0;
        g *= grows(t.pp, base->pp); /* fewer stages: more layers a rank */
        g *= grows(spec_job_config_vpp(base), spec_job_config_vpp(&t));
        g *= grows(base->cp ? base->cp : 1, t.cp ? t.cp : 1);
    }
    if (base->tp <= 1 && t.tp > 1)
        g *= 2; /* a collective inserted beside each layer's GEMMs at most */
    if (base->dp <= 1 && t.dp > 1)
        g *= 1.25; /* the gradient buckets */
    out->growth = g;
    out->tasks = (double)n_tasks * g;
    out->bytes = out->tasks * WHATIF_BYTES_PER_TASK + WHATIF_BYTES_FIXED;
}
