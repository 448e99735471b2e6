/* daemon/check_rows.c: svc_check_rows() (service.h), stepcastd --check's
 * pass over the catalog's rows. Each row is rendered by the encoder its
 * list uses, so what the check names is exactly what the lists leave out.
 * Apart from service.c, as dispatch.c is: experiments render in their
 * handler, and the handlers include the service. */
#include "daemon/service.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/encode.h"
#include "api/ledger.h"
#include "api/request.h"
#include "daemon/h_experiments.h"
#include "daemon/log.h"
#include "daemon/store.h"
#include "common/banned.h"

/* Report one row of `what` that a list leaves out, or whose numbers the
 * checks on the way in refuse today (why). */
static void bad_row(FILE *report, const char *what, const char *id, const char *why, size_t *bad)
{
    char q[200];
    fprintf(report, "%s '%s': %s\n", what, log_quote(id, q, sizeof q), why);
    ++*bad;
}

/* Whether a list's encoder leaves out the one row it was given. */
static int left_out(const struct api_list_meta *m, struct api_reply *r)
{
    api_reply_release(r);
    return m->skipped != 0;
}

int svc_check_rows(struct store *st, FILE *report, size_t *bad, struct sc_error *err)
{
    struct api_body_limits lim = {SIZE_MAX, 1000};
    struct api_job *jobs = NULL;
    struct api_model *models = NULL;
    struct api_token *tokens = NULL;
    struct api_calibration *calibs = NULL;
    struct api_validation *entries = NULL;
    struct store_experiment *exps = NULL;
    size_t nj = 0, nm = 0, nt = 0, nc = 0, nv = 0, ne = 0, before = *bad;
    int rc;
    if ((rc = store_job_list(st, NULL, &jobs, &nj, NULL, err)) ||
        (rc = store_model_list(st, NULL, NULL, &models, &nm, NULL, err)) ||
        (rc = store_token_list(st, NULL, &tokens, &nt, NULL, err)) ||
        (rc = store_calibration_list(st, NULL, &calibs, &nc, NULL, err)) ||
        (rc = store_validation_list(st, NULL, NULL, NULL, &entries, &nv, NULL, err)) ||
        (rc = store_experiment_list(st, NULL, NULL, &exps, &ne, NULL, err)))
        goto out;
    for (size_t i = 0; i < nj; i++) {
        struct api_list_meta m = {0};
        struct api_reply r = {0};
        char *canon = NULL;
        api_reply_jobs(&r, &jobs[i], 1, &m);
        if (left_out(&m, &r))
            bad_row(report, "job", jobs[i].id, "cannot be rendered: lists leave it out", bad);
        else if (jobs[i].description &&
                 api_decode_job(jobs[i].description, strlen(jobs[i].description), &lim, &canon, &r))
            bad_row(report, "job", jobs[i].id, r.body ? r.body : "its description is refused", bad);
        api_reply_release(&r);
        free(canon);
    }
    for (size_t i = 0; i < nm; i++) {
        struct api_list_meta m = {0};
        struct api_reply r = {0};
        api_reply_models(&r, &models[i], 1, &m);
        if (left_out(&m, &r))
            bad_row(report, "model", models[i].id, "cannot be rendered: lists leave it out", bad);
    }
    for (size_t i = 0; i < nt; i++) {
        struct api_list_meta m = {0};
        struct api_reply r = {0};
        api_reply_tokens(&r, &tokens[i], 1, &m);
        if (left_out(&m, &r))
            bad_row(report, "token", tokens[i].id, "cannot be rendered: lists leave it out", bad);
    }
    for (size_t i = 0; i < nc; i++) {
        struct api_list_meta m = {0};
        struct api_reply r = {0};
        api_reply_calibrations(&r, &calibs[i], 1, &m);
        if (left_out(&m, &r))
            bad_row(report, "calibration", calibs[i].name, "cannot be rendered: lists leave it out", bad);
    }
    for (size_t i = 0; i < nv; i++) {
        struct api_list_meta m = {0};
        char id[24];
        json_decref(api_ledger_page_json(&entries[i], 1, &entries[i], 1, 0, &m));
        snprintf(id, sizeof id, "%lld", (long long)entries[i].id);
        if (m.skipped)
            bad_row(report, "ledger entry", id, "its step times are outside the ledger's range: lists leave it out",
                    bad);
    }
    for (size_t i = 0; i < ne; i++) {
        json_t *doc = h_experiment_doc(&exps[i]);
        if (!doc)
            bad_row(report, "experiment", exps[i].id, "cannot be rendered: lists leave it out", bad);
        json_decref(doc);
    }
    fprintf(report,
            "rows: %zu jobs, %zu models, %zu tokens, %zu calibrations, %zu ledger entries, %zu experiments; %zu "
            "refused\n",
            nj, nm, nt, nc, nv, ne, *bad - before);
out:
    api_jobs_free(jobs, nj);
    api_models_free(models, nm);
    free(tokens);
    api_calibrations_free(calibs, nc);
    api_validations_free(entries, nv);
    store_experiments_free(exps, ne);
    return rc;
}
