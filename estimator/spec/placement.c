/* estimator/spec/placement.c: Megatron's layer placement over virtual pipeline
 * stages (the rules are in placement.h). */
#include "estimator/spec/placement.h"

#include <assert.h>

#include "common/banned.h"

/* Virtual stage i's transformer layers (its first layer and count) under
 * the rules of placement.h, v = pp x vpp stages of at most layers + 2. */
static void place_stage(int layers, int v, int i, struct est_stage_layers *out)
{
    assert(v >= 1 && i >= 0 && i < v && layers >= 1);
    out->embedding = i == 0;
    out->loss = i == v - 1;
    if (layers % v == 0) {
        out->layers = layers / v;
        out->first_layer = i * out->layers;
    } else if ((layers + 2) % v == 0) {
        /* the embedding and the loss take one layer's slot each */
        int slot = (layers + 2) / v;
        out->layers = slot - out->embedding - out->loss;
        out->first_layer = i ? i * slot - 1 : 0;
    } else {
        /* the remainder spread over the middle stages 1 .. v - 2, earliest
         * first; with two stages, on the first */
        int base = layers / v, rest = layers % v, middle = v - 2;
        if (middle <= 0) {
            out->layers = base + (i == 0 ? rest : 0);
            out->first_layer = i ? base + rest : 0;
        } else {
            int before = i < 1 ? 0 : i - 1 < middle ? i - 1 : middle; /* middle stages before i */
            int extra = rest % middle;
            out->layers = base + (i >= 1 && i <= middle ? rest / middle + (i - 1 < extra) : 0);
            out->first_layer = i * base + before * (rest / middle) + (before < extra ? before : extra);
        }
    }
}

static int place_check(int layers, int pp, int vpp, struct sc_error *err)
{
    if (layers < 1 || pp < 1 || vpp < 1)
        return sc_error_set(err, SC_EINVAL, "placement needs layers, pp and vpp of at least 1");
    if ((long long)pp * vpp > (long long)layers + 2)
        return sc_error_set(err, SC_EINVAL,
                            "%d virtual pipeline stages (pp %d x vpp %d) are more than layers + 2 (%d)",
                            pp * vpp, pp, vpp, layers + 2);
    return SC_OK;
}

int spec_place_layers(int layers, int pp, int vpp, struct est_stage_layers *out,
                     struct sc_error *err)
{
    int rc = place_check(layers, pp, vpp, err), v = pp * vpp;
    if (rc)
        return rc;
    for (int i = 0; i < v; i++) {
        place_stage(layers, v, i, &out[i]);
        /* stages in order, each from where the one before it ends */
        assert(out[i].layers >= 0 && (i == 0 || out[i].first_layer == out[i - 1].first_layer + out[i - 1].layers));
    }
    if (out[v - 1].first_layer + out[v - 1].layers != layers)
        return sc_error_set(err, SC_EINTERNAL, "placement lost layers: %d of %d",
                            out[v - 1].first_layer + out[v - 1].layers, layers);
    return SC_OK;
}

int spec_place_stage(int layers, int pp, int vpp, int stage, struct est_stage_layers *out,
                    struct sc_error *err)
{
    int rc = place_check(layers, pp, vpp, err);
    if (rc)
        return rc;
    if (stage < 0 || stage >= pp * vpp)
        return sc_error_set(err, SC_EINVAL, "virtual stage %d is not one of the %d", stage, pp * vpp);
    place_stage(layers, pp * vpp, stage, out);
    return SC_OK;
}
