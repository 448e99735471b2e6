/* tests/fuzz/fuzz_request.c: libFuzzer target for request decoding.
 *
 * The first byte picks what the rest is fed to: a JSON body for each
 * decoder (job description, build request, token request, ledger entry,
 * diff, A/B and experiment requests), or
 * "METHOD PATH?QUERY" for the router, the query decoder and the parser of
 * each `scale` value (what a replay handler reads). Small limits so
 * the depth and size checks are reached. Anything but a clean success or
 * a clean error reply (valid JSON with an error code) is a bug. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/query.h"
#include "api/reply.h"
#include "api/request.h"
#include "api/routes.h"
#include "model/replay.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An error reply must be the documented JSON error. */
static void check_reply(const struct api_reply *r)
{
    if (!r->status || r->status < 400)
        return;
    json_t *doc = json_loadb(r->body, r->len, 0, NULL);
    const char *code = NULL;
    if (!doc || json_unpack(doc, "{s:{s:s}}", "error", "code", &code) || !code)
        abort();
    json_decref(doc);
}

static void route(const char *text, size_t n)
{
    char buf[2048], *sp, *q;
    enum api_op op;
    struct api_params p;
    struct api_reply r = {0};
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, text, n);
    buf[n] = '\0';
    if (!(sp = strchr(buf, ' ')))
        return;
    *sp = '\0';
    if ((q = strchr(sp + 1, '?')))
        *q++ = '\0';
    if (api_route(buf, sp + 1, 4096, &op, &p, &r) == SC_OK) {
        const char *keys[API_QUERY_MAX + 1], *values[API_QUERY_MAX + 1]; /* one past what api_query_decode takes */
        struct api_query dq;
        size_t k = 0;
        for (char *a = q; a && *a && k < sizeof keys / sizeof keys[0];) {
            char *amp = strchr(a, '&');
            if (amp)
                *amp = '\0';
            char *eq = strchr(a, '=');
            if (eq)
                *eq = '\0';
            values[k] = eq ? eq + 1 : "";
            keys[k++] = a;
            a = amp ? amp + 1 : NULL;
        }
        if (api_query_decode(op, keys, values, k, &dq, &r) == SC_OK) {
            /* every decoded value is within its parameter's bounds */
            const struct api_query_param *qp;
            for (size_t i = 0; (qp = api_query_param(op, i)); i++)
                if ((qp->type == API_Q_INT && dq.v[i].text && (dq.v[i].i < qp->min || dq.v[i].i > qp->max)) ||
                    ((qp->flags & API_QF_REQUIRED) && !dq.v[i].given))
                    abort();
            for (size_t i = 0; i < k; i++) {
                struct model_replay_opts o;
                struct sc_error err;
                model_replay_opts_default(&o);
                int rc = strcmp(keys[i], "scale") ? SC_OK : model_replay_parse_scale(values[i], &o, &err);
                if (rc != SC_OK && rc != SC_EINVAL && rc != SC_ELIMIT)
                    abort();
                if (rc == SC_OK && o.n_factors != (strcmp(keys[i], "scale") ? 0u : 1u))
                    abort();
            }
        }
        /* what reaches a handler is valid: identifiers, and ranks in range */
        if ((p.job[0] && !api_id_valid(p.job)) || (p.id[0] && !api_id_valid(p.id)) ||
            p.rank >= 4096 || (strstr(api_op_info(op)->path, "{rank}") && p.rank < 0))
            abort();
    }
    check_reply(&r);
    api_reply_release(&r);
    char methods[64];
    api_route_methods(sp + 1, methods, sizeof methods);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct api_body_limits l = {4096, 16};
    struct api_reply r = {0};
    const char *body = (const char *)data + 1;
    size_t n = size ? size - 1 : 0;
    if (size == 0)
        return 0;
    switch (data[0] % 8) {
    case 0: {
        char *canon = NULL;
        if (api_decode_job(body, n, &l, &canon, &r) == SC_OK && !canon)
            abort();
        free(canon);
        break;
    }
    case 1: {
        struct api_build_req b;
        api_decode_build(body, n, &l, &b, &r);
        break;
    }
    case 2: {
        struct api_token_req t;
        api_decode_token(body, n, &l, &t, &r);
        break;
    }
    case 5: {
        char other[API_ID_MAX];
        if (api_decode_diff(body, n, &l, other, &r) == SC_OK && !api_id_valid(other))
            abort();
        break;
    }
    case 4: {
        struct api_validation_req v;
        if (api_decode_validation(body, n, &l, &v, &r) == SC_OK && !(v.measured_ms > 0))
            abort();
        api_validation_req_release(&v);
        break;
    }
    case 6: {
        struct api_ab_req a;
        if (api_decode_ab(body, n, &l, &a, &r) == SC_OK &&
            (!api_id_valid(a.a) || !api_id_valid(a.b) || a.refutations < -1 || a.refutations > 5 ||
             !(a.min_effect_pct > 0 && a.min_effect_pct <= 100)))
            abort();
        break;
    }
    case 7: {
        struct api_experiment_req e;
        if (api_decode_experiment(body, n, &l, &e, &r) == SC_OK &&
            (!api_id_valid(e.baseline) || !api_id_valid(e.variant)))
            abort();
        break;
    }
    default:
        route(body, n);
        break;
    }
    check_reply(&r);
    api_reply_release(&r);
    return 0;
}
