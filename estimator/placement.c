/* estimator/placement.c: Megatron's layer placement over virtual pipeline
 * stages (the rules are in placement.h). */
#include "estimator/placement.h"

#include "common/banned.h"

int est_place_layers(int layers, int pp, int vpp, struct est_stage_layers *out,
                     struct sc_error *err)
{
    if (layers < 1 || pp < 1 || vpp < 1)
        return sc_error_set(err, SC_EINVAL, "placement needs layers, pp and vpp of at least 1");
    if ((long long)pp * vpp > (long long)layers + 2)
        return sc_error_set(err, SC_EINVAL,
                            "%d virtual pipeline stages (pp %d x vpp %d) are more than layers + 2 (%d)",
                            pp * vpp, pp, vpp, layers + 2);
    int v = pp * vpp;
    for (int i = 0; i < v; i++) {
        out[i].embedding = i == 0;
        out[i].loss = i == v - 1;
    }
    if (layers % v == 0) {
        for (int i = 0; i < v; i++)
            out[i].layers = layers / v;
    } else if ((layers + 2) % v == 0) {
        /* the embedding and the loss take one layer's slot each */
        for (int i = 0; i < v; i++)
            out[i].layers = (layers + 2) / v - out[i].embedding - out[i].loss;
    } else {
        int base = layers / v, rest = layers % v, middle = v - 2;
        for (int i = 0; i < v; i++)
            out[i].layers = base;
        if (middle <= 0) {
            out[0].layers += rest;
        } else {
            for (int i = 0; i < middle; i++)
                out[1 + i].layers += rest / middle + (i < rest % middle);
        }
    }
    int next = 0;
    for (int i = 0; i < v; i++) {
        out[i].first_layer = next;
        next += out[i].layers;
    }
    if (next != layers)
        return sc_error_set(err, SC_EINTERNAL, "placement lost layers: %d of %d", next, layers);
    return SC_OK;
}
