/* daemon/experiment_doc.c: a stored experiment as the API shows it
 * (experiment_doc.h), for its handlers and for stepcastd --check alike. */
#include "daemon/experiment_doc.h"

#include "common/banned.h"

json_t *h_doc_or_null(const char *text)
{
    json_t *d = text ? json_loads(text, 0, NULL) : NULL;
    return d ? d : json_null();
}

json_t *h_experiment_doc(const struct store_experiment *e)
{
    json_t *verdict = h_doc_or_null(e->verdict);
    const char *state = e->closed ? "closed" : json_is_object(verdict) ? "decided" : "pending";
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s, s:I, s:o, s:o, s:o}", "id", e->id, "baseline",
                            e->baseline, "variant", e->variant, "hypothesis", e->hypothesis, "external_id",
                            e->external_id[0] ? e->external_id : NULL, "state", state, "created_ns",
                            (json_int_t)e->created_ns, "verdict", verdict, "inputs",
                            e->inputs ? json_string(e->inputs) : json_null(), "bank", h_doc_or_null(e->bank));
    if (doc && e->decided_ns)
        json_object_set_new(doc, "decided_ns", json_integer(e->decided_ns));
    return doc;
}
