/* daemon/ledger_band.c: the ledger's error band of a prediction kind
 * (ledger_band.h), from the catalog's entries (api/ledger.h). */
#include "daemon/ledger_band.h"

#include <string.h>

#include "api/ledger.h"
#include "daemon/log.h"
#include "daemon/store.h"
#include "common/banned.h"

void h_ledger_band(struct svc *s, int kind, struct ledger_band *b)
{
    struct api_validation *v = NULL;
    struct sc_error err;
    size_t n = 0;
    memset(b, 0, sizeof *b);
    if (store_validation_list(s->store, NULL, api_ledger_kind_name((enum api_ledger_kind)kind), NULL, &v, &n, NULL,
                              &err))
        log_warn("ledger", "event=band_unavailable msg=\"%s\"", err.msg);
    else
        ledger_band_of(v, n, (enum api_ledger_kind)kind, b);
    api_validations_free(v, n);
}
