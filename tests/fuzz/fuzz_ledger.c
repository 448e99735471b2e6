/* tests/fuzz/fuzz_ledger.c: libFuzzer target for what `stepcast ledger`
 * reads: the CSV of measured step times of `ledger import` (and `make
 * validate`; estimator/plan/validation.h), and the local ledger file
 * (api/ledger.h).
 *
 * The first byte picks the reader. Each CSV row parsed becomes its spec,
 * as the import does; a ledger file parsed is written again and must parse
 * to the same entries. Anything but a clean success or a clean error is a
 * bug. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/ledger.h"
#include "estimator/plan/validation.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void csv(const char *text, size_t size)
{
    struct est_measured *rows = NULL;
    struct sc_error err;
    size_t n = 0;
    if (plan_measured_parse(text, size, &rows, &n, &err) != SC_OK)
        return;
    for (size_t i = 0; i < n && i < 64; i++) {
        struct est_spec spec;
        const struct hw_profile *hw;
        if (!(rows[i].step_ms > 0) ||
            (double)rows[i].gpus != (double)rows[i].tp * (double)rows[i].dp * (double)rows[i].pp)
            abort();
        (void)plan_measured_spec(&rows[i], "a100-sxm4-80gb", "fp16", "unfused", &spec, &hw, &err);
    }
    free(rows);
}

static void ledger_file(const char *text, size_t size)
{
    struct api_validation *v = NULL, *w = NULL;
    struct sc_error err;
    size_t n = 0, m = 0;
    if (api_ledger_file_parse(text, size, &v, &n, &err) != SC_OK)
        return;
    char *again = api_ledger_file_text(v, n);
    if (!again || api_ledger_file_parse(again, strlen(again), &w, &m, &err) != SC_OK || m != n)
        abort();
    for (size_t i = 0; i < n; i++)
        if (w[i].id != v[i].id || w[i].kind != v[i].kind || w[i].measured_ms != v[i].measured_ms ||
            w[i].in_sample != v[i].in_sample || strcmp(w[i].model, v[i].model))
            abort();
    json_decref(api_ledger_json(v, n, 1));
    free(again);
    api_validations_free(v, n);
    api_validations_free(w, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        ledger_file((const char *)data + 1, size - 1);
    else
        csv((const char *)data + 1, size - 1);
    return 0;
}
