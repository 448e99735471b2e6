/* api/ab_json.c: the A/B document (ab_json.h). */
#include "api/ab_json.h"

#include "model/ab.h"
#include "common/banned.h"

json_t *api_ab_json(const struct model_ab *r)
{
    const struct model_ab_stats *s = &r->stats;
    json_t *dropped = json_array(), *refutations = json_array();
    for (size_t i = 0; dropped && i < r->n_dropped; i++)
        json_array_append_new(dropped, json_pack("{s:s#, s:I, s:s}", "run", &r->dropped[i].run, 1, "step",
                                                 (json_int_t)r->dropped[i].step, "why", r->dropped[i].why));
    for (size_t i = 0; refutations && i < r->n_refutations; i++) {
        const struct model_ab_refutation *f = &r->refutations[i];
        json_array_append_new(refutations,
                              json_pack("{s:s, s:s, s:o, s:s}", "name", f->name, "verdict",
                                        f->agrees == MODEL_AB_NOT_APPLICABLE ? "not_applicable"
                                                                             : model_ab_verdict_name(f->verdict),
                                        "agrees",
                                        f->agrees == MODEL_AB_NOT_APPLICABLE ? json_null() : json_boolean(f->agrees),
                                        "detail", f->detail));
    }
    json_t *samples_a = json_array(), *samples_b = json_array();
    for (size_t i = 0; samples_a && r->samples_a && i < r->steps_a; i++)
        json_array_append_new(samples_a, json_real(r->samples_a[i]));
    for (size_t i = 0; samples_b && r->samples_b && i < r->steps_b; i++)
        json_array_append_new(samples_b, json_real(r->samples_b[i]));
    json_t *attribution = r->attribution ? json_array() : json_null();
    for (size_t i = 0; r->attribution && attribution && i < r->n_attribution; i++) {
        const struct model_ab_part *p = &r->attribution[i];
        json_array_append_new(attribution, json_pack("{s:s, s:f, s:[f,f]}", "category", p->category, "ms", p->ms,
                                                     "ci95_ms", p->ci_lo, p->ci_hi));
    }
    return json_pack("{s:s, s:f, s:f, s:[f,f], s:f, s:f, s:f, s:{s:f, s:f}, s:{s:I, s:I}, s:{s:o, s:o}, s:o, s:o, "
                     "s:b, s:o}",
                     "verdict",
                     model_ab_verdict_name(s->verdict), "difference_ms", s->difference_ms, "difference_pct",
                     s->difference_pct, "ci95_ms", s->ci_lo, s->ci_hi, "p_value", s->p_value, "effect_size",
                     s->effect_size, "min_effect_ms", s->min_effect_ms, "center_ms", "a", s->a_center, "b",
                     s->b_center, "steps", "a", (json_int_t)r->steps_a, "b", (json_int_t)r->steps_b,
                     "samples_ms", "a", samples_a ? samples_a : json_null(), "b", samples_b ? samples_b : json_null(),
                     "dropped_steps", dropped ? dropped : json_null(), "refutations",
                     refutations ? refutations : json_null(), "survives", r->survives, "attribution",
                     attribution ? attribution : json_null());
}
