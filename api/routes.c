/* api/routes.c: the operation table (from ops.def) and the router (routes.h). */
#include "api/routes.h"

#include <stdio.h>
#include <string.h>

#include "common/banned.h"

static const struct api_op_info ops[API_OP_COUNT] = {
#define API_OP(NAME, METHOD, PATH, ID, SCOPE, BODY, SUCCESS, HANDLER, REQUEST, MEDIA, REPLY, ALSO_200, ERRORS, \
               SUMMARY)                                                                                     \
    [API_OP_##NAME] = {METHOD, PATH, ID, API_SCOPE_##SCOPE, API_BODY_##BODY, SUCCESS, REQUEST, MEDIA, REPLY,  \
                       ALSO_200, ERRORS, SUMMARY},
#define API_QUERY(...)
#include "api/ops.def"
};

const struct api_op_info *api_op_info(enum api_op op)
{
    return &ops[op];
}

int api_id_valid(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (n == 0 || (c != '.' && c != '_' && c != '-')))
            return 0;
    }
    return n >= 1 && n <= 64;
}

/* Split a path into at most 8 segments (none for "/"); -1 when it has
 * more, or empty segments (//, a trailing /), or does not start with /. */
static int split(const char *path, const char *seg[8], size_t len[8])
{
    int n = 0;
    if (*path != '/')
        return -1;
    if (path[1] == '\0')
        return 0;
    for (const char *p = path + 1;;) {
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 0 || n == 8)
            return -1;
        seg[n] = p;
        len[n++] = l;
        if (!e)
            return n;
        p = e + 1;
    }
}

enum match { NO_MATCH, MATCH, BAD_ID, BAD_RANK };

static enum match match(const char *tmpl, const char *const seg[8], const size_t len[8], int n,
                        int64_t max_ranks, struct api_params *p, char *bad, size_t bad_n)
{
    const char *tseg[8];
    size_t tlen[8];
    int tn = split(tmpl, tseg, tlen);
    enum match m = MATCH;
    if (tn != n)
        return NO_MATCH;
    for (int i = 0; i < n; i++) /* literal segments first: they decide the route */
        if (tseg[i][0] != '{' && (tlen[i] != len[i] || memcmp(tseg[i], seg[i], len[i])))
            return NO_MATCH;
    for (int i = 0; i < n && m == MATCH; i++) {
        char v[API_ID_MAX + 8];
        if (tseg[i][0] != '{')
            continue;
        snprintf(v, sizeof v, "%.*s", (int)(len[i] < sizeof v - 1 ? len[i] : sizeof v - 1), seg[i]);
        snprintf(bad, bad_n, "%.*s", (int)(len[i] < 80 ? len[i] : 80), seg[i]);
        if (!strncmp(tseg[i], "{rank}", 6)) {
            int64_t r = 0;
            int ok = len[i] >= 1 && len[i] <= 9 && !(len[i] > 1 && seg[i][0] == '0');
            for (size_t k = 0; ok && k < len[i]; k++) {
                ok = seg[i][k] >= '0' && seg[i][k] <= '9';
                r = r * 10 + (seg[i][k] - '0');
            }
            if (!ok || r >= max_ranks)
                m = BAD_RANK;
            p->rank = r;
        } else if (len[i] > 64 || !api_id_valid(v)) {
            m = BAD_ID;
        } else if (!strncmp(tseg[i], "{job}", 5)) {
            snprintf(p->job, sizeof p->job, "%s", v);
        } else {
            snprintf(p->id, sizeof p->id, "%s", v);
        }
    }
    return m;
}

int api_route(const char *method, const char *path, int64_t max_ranks, enum api_op *op,
              struct api_params *p, struct api_reply *err)
{
    const char *seg[8];
    size_t len[8];
    char allow[64] = "", bad[96] = "";
    int n = split(path, seg, len), path_known = 0;
    enum match worst = NO_MATCH;

    memset(p, 0, sizeof *p);
    p->rank = -1;
    if (strcmp(method, "HEAD") == 0)
        method = "GET";
    for (int i = 0; n >= 0 && i < API_OP_COUNT; i++) {
        struct api_params tmp;
        memset(&tmp, 0, sizeof tmp);
        enum match m = match(ops[i].path, seg, len, n, max_ranks, &tmp, bad, sizeof bad);
        if (m == NO_MATCH)
            continue;
        path_known = 1;
        if (m != MATCH) {
            worst = m;
            continue;
        }
        if (strcmp(ops[i].method, method) == 0) {
            *p = tmp;
            *op = (enum api_op)i;
            return SC_OK;
        }
        size_t k = strlen(allow);
        snprintf(allow + k, sizeof allow - k, "%s%s", k ? ", " : "", ops[i].method);
    }
    if (worst == BAD_RANK)
        return api_fail(err, API_E_INVALID_RANK, "rank '%s' is not an integer in [0, %lld)", bad,
                        (long long)max_ranks);
    if (worst == BAD_ID)
        return api_fail(err, API_E_INVALID_ID,
                        "'%s' is not a valid identifier ([A-Za-z0-9][A-Za-z0-9._-]{0,63})", bad);
    if (!path_known)
        return api_fail(err, API_E_NO_ROUTE, "no route for %s", n >= 0 ? "this path" : "a malformed path");
    api_fail(err, API_E_METHOD, "%s is not allowed here (allowed: %s)", method, allow);
    snprintf(err->allow, sizeof err->allow, "%s", allow);
    return SC_EINVAL;
}

int api_route_methods(const char *path, char *out, size_t n)
{
    const char *seg[8];
    size_t len[8];
    char bad[96];
    int ns = split(path, seg, len), found = 0;
    out[0] = '\0';
    for (int i = 0; ns >= 0 && i < API_OP_COUNT; i++) {
        struct api_params tmp;
        if (match(ops[i].path, seg, len, ns, INT64_MAX, &tmp, bad, sizeof bad) == NO_MATCH)
            continue;
        size_t k = strlen(out);
        snprintf(out + k, n - k, "%s%s", found++ ? ", " : "", ops[i].method);
    }
    return found;
}
