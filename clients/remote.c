/* clients/remote.c: libcurl requests to stepcastd (remote.h); libcurl is
 * loaded when a command first talks to a server (common/dynlib.h). */
#include "clients/remote.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "clients/cli.h"
#include "clients/replay_print.h"
#include "common/dynlib.h"
#include "common/banned.h"

/* The libcurl functions used, by their own prototypes. */
static struct {
    __typeof__(curl_global_init) *global_init;
    __typeof__(curl_global_cleanup) *global_cleanup;
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_reset) *easy_reset;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
} cu;

#define CU_FN(field, name) {name, &cu.field, sizeof cu.field}
static const struct sc_dynlib_fn cu_fns[] = {
    CU_FN(global_init, "curl_global_init"),     CU_FN(global_cleanup, "curl_global_cleanup"),
    CU_FN(easy_init, "curl_easy_init"),         CU_FN(easy_cleanup, "curl_easy_cleanup"),
    CU_FN(easy_reset, "curl_easy_reset"),       CU_FN(easy_setopt, "curl_easy_setopt"),
    CU_FN(easy_perform, "curl_easy_perform"),   CU_FN(easy_getinfo, "curl_easy_getinfo"),
    CU_FN(easy_strerror, "curl_easy_strerror"), CU_FN(slist_append, "curl_slist_append"),
    CU_FN(slist_free_all, "curl_slist_free_all"),
};
static const char *const cu_sonames[] = {"libcurl.so.4", "libcurl-gnutls.so.4", NULL};
static struct sc_dynlib cu_lib = SC_DYNLIB_INIT(cu_sonames, cu_fns);

static const char *opt_server, *opt_token_file;

void remote_set_options(const char *server, const char *token_file)
{
    if (server)
        opt_server = server;
    if (token_file)
        opt_token_file = token_file;
}

static const char *server_url(void)
{
    const char *env = getenv("STEPCAST_SERVER");
    return opt_server ? opt_server : env && *env ? env : NULL;
}

static int stay_local;

int remote_configured(void)
{
    return !stay_local && server_url() != NULL;
}

void remote_stay_local(void)
{
    stay_local = 1;
}

static int read_token(const char *path, char *out, size_t n, struct sc_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return sc_error_set(err, SC_ENOTFOUND, "cannot read token file '%s'", path);
    if (!fgets(out, (int)n, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return SC_OK;
}

int remote_open(struct remote *r, struct sc_error *err)
{
    const char *url = server_url(), *env_token = getenv("STEPCAST_TOKEN");
    char token[260] = "";
    int rc;
    memset(r, 0, sizeof *r);
    if (!url)
        return sc_error_set(err, SC_EINVAL,
                            "this command talks to a server: give --server URL or set STEPCAST_SERVER");
    snprintf(r->base, sizeof r->base, "%s", url);
    for (size_t n = strlen(r->base); n && r->base[n - 1] == '/'; n--)
        r->base[n - 1] = '\0';
    if (env_token && *env_token)
        snprintf(token, sizeof token, "%s", env_token);
    else if (opt_token_file && (rc = read_token(opt_token_file, token, sizeof token, err)))
        return rc;
    if (*token)
        snprintf(r->auth, sizeof r->auth, "Authorization: Bearer %s", token);
    if ((rc = sc_dynlib_load(&cu_lib, err)))
        return sc_error_prefix(err, "cannot talk to a server");
    if (cu.global_init(CURL_GLOBAL_DEFAULT) || !(r->curl = cu.easy_init()))
        return sc_error_set(err, SC_ENOMEM, "cannot start libcurl");
    r->progress_tty = isatty(STDERR_FILENO);
    return SC_OK;
}

void remote_close(struct remote *r)
{
    if (r->curl) {
        cu.easy_cleanup(r->curl);
        cu.global_cleanup();
    }
    memset(r, 0, sizeof *r);
}

void remote_resp_release(struct remote_resp *resp)
{
    free(resp->body);
    memset(resp, 0, sizeof *resp);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    struct remote_resp *resp = ctx;
    size_t k = size * n;
    char *b = realloc(resp->body, resp->len + k + 1);
    if (!b)
        return 0;
    memcpy(b + resp->len, p, k);
    resp->body = b;
    resp->len += k;
    b[resp->len] = '\0';
    return k;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    struct remote_resp *resp = ctx;
    size_t k = size * n;
    if (k > 9 && strncasecmp(p, "Location:", 9) == 0) {
        size_t off = 9;
        while (off < k && p[off] == ' ')
            off++;
        size_t len = k - off;
        while (len && (p[off + len - 1] == '\r' || p[off + len - 1] == '\n'))
            len--;
        snprintf(resp->location, sizeof resp->location, "%.*s", (int)len, p + off);
    }
    return k;
}

static int perform(struct remote *r, const char *method, const char *path,
                   struct curl_slist *headers, struct remote_resp *out, struct sc_error *err)
{
    CURL *c = r->curl;
    char url[2048];
    CURLcode cc;
    snprintf(url, sizeof url, "%s%s", r->base, path);
    cu.easy_setopt(c, CURLOPT_URL, url);
    /* as written: libcurl would otherwise resolve "/v1/jobs/../tokens/x" to
     * "/v1/tokens/x", another resource than the one the user named */
    cu.easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    cu.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    cu.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    cu.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    cu.easy_setopt(c, CURLOPT_WRITEDATA, out);
    cu.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    cu.easy_setopt(c, CURLOPT_HEADERDATA, out);
    cu.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    cu.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    cc = cu.easy_perform(c);
    cu.slist_free_all(headers);
    if (cc != CURLE_OK)
        return sc_error_set(err, SC_EIO, "%s %s: %s", method, url, cu.easy_strerror(cc));
    cu.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    if (!out->body && !(out->body = calloc(1, 1)))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    return SC_OK;
}

static struct curl_slist *base_headers(struct remote *r)
{
    struct curl_slist *h = NULL;
    if (r->auth[0])
        h = cu.slist_append(h, r->auth);
    return cu.slist_append(h, "Expect:");
}

int remote_call(struct remote *r, const char *method, const char *path, const char *json,
                struct remote_resp *out, struct sc_error *err)
{
    struct curl_slist *h = base_headers(r);
    memset(out, 0, sizeof *out);
    cu.easy_reset(r->curl);
    if (json) {
        h = cu.slist_append(h, "Content-Type: application/json");
        cu.easy_setopt(r->curl, CURLOPT_POSTFIELDS, json);
        cu.easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json));
    } else if (!strcmp(method, "POST") || !strcmp(method, "PUT")) {
        cu.easy_setopt(r->curl, CURLOPT_POSTFIELDS, "");
        cu.easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }
    return perform(r, method, path, h, out, err);
}

int remote_post_text(struct remote *r, const char *path, const char *text, size_t len,
                     struct remote_resp *out, struct sc_error *err)
{
    struct curl_slist *h = cu.slist_append(base_headers(r), "Content-Type: text/plain");
    memset(out, 0, sizeof *out);
    cu.easy_reset(r->curl);
    cu.easy_setopt(r->curl, CURLOPT_POSTFIELDS, text);
    cu.easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    return perform(r, "POST", path, h, out, err);
}

int remote_put_file(struct remote *r, const char *path, const char *file, struct remote_resp *out,
                    struct sc_error *err)
{
    FILE *f = fopen(file, "rb");
    struct curl_slist *h;
    int rc;
    memset(out, 0, sizeof *out);
    if (!f)
        return sc_error_set(err, SC_ENOTFOUND, "cannot open '%s'", file);
    fseeko(f, 0, SEEK_END);
    curl_off_t size = (curl_off_t)ftello(f);
    rewind(f);
    cu.easy_reset(r->curl);
    h = cu.slist_append(base_headers(r), "Content-Type: application/octet-stream");
    cu.easy_setopt(r->curl, CURLOPT_UPLOAD, 1L);
    cu.easy_setopt(r->curl, CURLOPT_READDATA, f);
    cu.easy_setopt(r->curl, CURLOPT_INFILESIZE_LARGE, size);
    rc = perform(r, "PUT", path, h, out, err);
    fclose(f);
    return rc;
}

int remote_json(const char *method, const char *path, const char *json, long expect, void **doc)
{
    struct remote r;
    struct remote_resp resp;
    struct sc_error err;
    int rc = 0;
    *doc = NULL;
    if (remote_open(&r, &err) || remote_call(&r, method, path, json, &resp, &err)) {
        fprintf(stderr, "stepcast: %s\n", err.msg);
        remote_close(&r);
        return sc_status_exit_code(err.code);
    }
    if (resp.status != expect)
        rc = remote_fail(&resp);
    else if (!(*doc = json_loads(resp.body, 0, NULL))) {
        fprintf(stderr, "stepcast: the server's answer is not JSON\n");
        rc = 1;
    }
    remote_resp_release(&resp);
    remote_close(&r);
    return rc;
}

int remote_list(const char *path, const char *key, void **doc)
{
    const char *keys[] = {key, NULL};
    return remote_list_keys(path, keys, doc);
}

int remote_list_keys(const char *path, const char *const *keys, void **doc)
{
    json_t *all = NULL;
    char page[4096], cursor[1024] = "";
    int rc;
    *doc = NULL;
    for (;;) {
        json_t *d = NULL;
        snprintf(page, sizeof page, "%s%slimit=1000%s%s", path, strchr(path, '?') ? "&" : "?",
                 cursor[0] ? "&cursor=" : "", cursor);
        if ((rc = remote_json("GET", page, NULL, 200, (void **)&d))) {
            json_decref(all);
            return rc;
        }
        const char *next = json_string_value(json_object_get(d, "next_cursor"));
        snprintf(cursor, sizeof cursor, "%s", next && strlen(next) < sizeof cursor ? next : "");
        if (!all) {
            all = d;
        } else {
            for (const char *const *k = keys; *k; k++)
                json_array_extend(json_object_get(all, *k), json_object_get(d, *k));
            json_object_set_new(all, "skipped", json_integer(json_integer_value(json_object_get(all, "skipped")) +
                                                             json_integer_value(json_object_get(d, "skipped"))));
            json_decref(d);
        }
        if (!cursor[0])
            break;
    }
    json_object_del(all, "next_cursor");
    *doc = all;
    return 0;
}

int remote_fail(const struct remote_resp *resp)
{
    json_t *doc = json_loads(resp->body ? resp->body : "", 0, NULL);
    const char *code = NULL, *msg = NULL;
    json_unpack(doc, "{s:{s:s, s:s}}", "error", "code", &code, "message", &msg);
    if (code && msg)
        fprintf(stderr, "stepcast: %s: %s (HTTP %ld)\n", code, msg, resp->status);
    else
        fprintf(stderr, "stepcast: the server answered HTTP %ld\n", resp->status);
    json_decref(doc);
    return resp->status >= 400 && resp->status < 500 ? 2 : 1;
}

void remote_escape(const char *s, char *out, size_t n)
{
    static const char hexd[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hexd[c >> 4];
            out[o++] = hexd[c & 15];
        }
    }
    out[o] = '\0';
}

int remote_print_document(const struct remote_resp *resp, int json, int (*as_text)(const json_t *doc))
{
    if (resp->status != 200)
        return remote_fail(resp);
    json_t *doc = json_loads(resp->body, 0, NULL);
    if (!doc)
        fprintf(stderr, "stepcast: the server's answer is not JSON\n");
    return cli_print_doc(doc, json, as_text);
}
