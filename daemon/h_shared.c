/* daemon/h_shared.c: what several handlers share (h_shared.h), apart from
 * any handler's file so that handlers call it without calling each other. */
#include "daemon/h_shared.h"

#include <string.h>

#include "api/ledger.h"
#include "daemon/admission.h"
#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/store.h"
#include "common/banned.h"

struct api_body_limits h_body_limits(const struct svc *s)
{
    struct api_body_limits l = {(size_t)s->cfg->max_json_body, (unsigned)s->cfg->max_json_depth};
    return l;
}

int h_page(const struct svc_request *q, struct api_page *pg, struct api_reply *r)
{
    return api_page_parse((size_t)api_query_int(&q->query, "limit"), api_query_str(&q->query, "cursor"), pg, r);
}

void h_page_skipped(const char *list, const struct api_list_meta *m)
{
    if (m->skipped)
        log_warn("store", "event=rows_skipped list=%s rows=%zu msg=\"stored rows that cannot be rendered were left "
                          "out; stepcastd --check lists them\"",
                 list, m->skipped);
}

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

int h_admit(struct svc *s, uint64_t need, const char *what, struct api_reply *r)
{
    struct sc_error err;
    switch (admission_try(s->admission, need, what, &err)) {
    case ADMISSION_OK: return SC_OK;
    case ADMISSION_BUSY: return api_fail(r, API_E_BUSY, "%s", err.msg);
    case ADMISSION_NEVER: break;
    }
    return api_fail(r, API_E_TOO_LARGE, "%s", err.msg);
}
