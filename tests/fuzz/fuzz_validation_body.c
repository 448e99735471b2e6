/* tests/fuzz/fuzz_validation_body.c: libFuzzer target for ledger entries:
 * the body of POST /v1/validations, and the entry as the ledger renders
 * and writes it.
 *
 * A body that decodes becomes an entry with the input's last 8 bytes as
 * its prediction (any double: a subnormal, an infinity, a NaN, as an
 * older daemon could have stored one). The list renders it, or leaves it
 * out and counts it ("skipped"), never failing the whole list; an entry
 * the list renders is written to a ledger file and read back. A decoded
 * measured time is always in the ledger's range. Anything but a clean
 * success or a clean error is a bug. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/ledger.h"
#include "api/page.h"
#include "api/reply.h"
#include "api/request.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct api_body_limits lim = {64 << 10, 16};
    struct api_validation_req req;
    struct api_reply r = {0};
    if (api_decode_validation((const char *)data, size, &lim, &req, &r) != SC_OK) {
        if (r.status < 400 || r.status >= 500)
            abort();
        api_reply_release(&r);
        return 0;
    }
    if (!ledger_step_ms_valid(req.measured_ms))
        abort();
    struct api_validation v[2];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 2; i++) {
        v[i].id = i + 1;
        v[i].kind = req.set ? API_LEDGER_WHATIF : req.model[0] ? API_LEDGER_REPLAY : API_LEDGER_ESTIMATE;
        memcpy(v[i].model, req.model, sizeof v[i].model);
        memcpy(v[i].source, req.source, sizeof v[i].source);
        memcpy(v[i].run_at, req.run_at, sizeof v[i].run_at);
        v[i].measured_ms = req.measured_ms;
        v[i].in_sample = req.in_sample;
        v[i].created_ns = 1;
    }
    v[0].predicted_ms = req.measured_ms * 1.1;
    if (size >= 8)
        memcpy(&v[1].predicted_ms, data + size - 8, sizeof v[1].predicted_ms);
    struct api_list_meta m = {0};
    json_t *doc = api_ledger_page_json(v, 2, v, 2, 1, &m);
    if (!doc || json_array_size(json_object_get(doc, "entries")) + m.skipped != 2 ||
        json_integer_value(json_object_get(doc, "skipped")) != (json_int_t)m.skipped)
        abort();
    char *text = json_dumps(doc, JSON_COMPACT);
    if (!text)
        abort();
    free(text);
    json_decref(doc);
    struct api_validation ok[2];
    size_t kept = 0;
    for (int i = 0; i < 2; i++) { /* the entries the list renders, one by one */
        struct api_list_meta one = {0};
        json_decref(api_ledger_page_json(&v[i], 1, &v[i], 1, 1, &one));
        if (!one.skipped)
            ok[kept++] = v[i];
    }
    if (kept + m.skipped != 2)
        abort();
    char *file = api_ledger_file_text(ok, kept);
    struct api_validation *back = NULL;
    size_t n = 0;
    struct sc_error err;
    if (!file || api_ledger_file_parse(file, strlen(file), &back, &n, &err) != SC_OK || n != kept)
        abort();
    api_validations_free(back, n);
    free(file);
    api_validation_req_release(&req);
    return 0;
}
