/* daemon/auth.c: tokens (auth.h). */
#include "daemon/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "daemon/blobs.h"
#include "daemon/config.h"
#include "daemon/digest.h"
#include "daemon/log.h"
#include "daemon/store.h"
#include "common/banned.h"

/* A secret is 16..256 printable ASCII characters without spaces. */
static int secret_valid(const char *s, size_t n)
{
    if (n < 16 || n > 256)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= 0x20 || s[i] >= 0x7f)
            return 0;
    return 1;
}

static int create_with_secret(struct store *s, enum api_scope scope, const char *name,
                              const char *secret, struct api_token *out, struct sc_error *err)
{
    char hash[DIGEST_HEX_LEN + 1], rnd[16];
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = digest_random_hex(6, rnd, sizeof rnd, err)) ||
        (rc = digest_hex(secret, strlen(secret), hash, err)))
        return rc;
    snprintf(out->id, sizeof out->id, "t-%s", rnd);
    snprintf(out->name, sizeof out->name, "%s", name);
    out->scope = scope;
    out->created_ns = store_now_ns();
    return store_token_create(s, out, hash, err);
}

/* A fresh secret: "sct_" and 40 hex digits. */
static int new_secret(char secret[AUTH_SECRET_MAX], struct sc_error *err)
{
    char rnd[48];
    int rc = digest_random_hex(20, rnd, sizeof rnd, err);
    if (rc == SC_OK)
        snprintf(secret, AUTH_SECRET_MAX, "sct_%s", rnd);
    return rc;
}

int auth_token_create(struct store *s, enum api_scope scope, const char *name,
                      struct api_token *out, char secret[AUTH_SECRET_MAX], struct sc_error *err)
{
    int rc = new_secret(secret, err);
    return rc ? rc : create_with_secret(s, scope, name, secret, out, err);
}

int auth_check(struct store *s, const char *authorization, enum api_scope need,
               struct api_token *tok, struct api_reply *r)
{
    char hash[DIGEST_HEX_LEN + 1];
    struct sc_error err;
    const char *secret;
    int rc;

    if (!authorization || !*authorization)
        return api_fail(r, API_E_UNAUTHORIZED, "this route needs a token: Authorization: Bearer <token>");
    if (strncasecmp(authorization, "Bearer ", 7) != 0)
        return api_fail(r, API_E_UNAUTHORIZED, "the Authorization header is not 'Bearer <token>'");
    secret = authorization + 7;
    while (*secret == ' ')
        secret++;
    if (!secret_valid(secret, strlen(secret)))
        return api_fail(r, API_E_UNAUTHORIZED, "unknown token");
    if (digest_hex(secret, strlen(secret), hash, &err))
        return api_fail_status(r, &err, API_E_INTERNAL);
    if ((rc = store_token_lookup(s, hash, tok, &err))) {
        if (rc == SC_ENOTFOUND)
            return api_fail(r, API_E_UNAUTHORIZED, "unknown token");
        return api_fail_status(r, &err, API_E_INTERNAL);
    }
    if (tok->revoked_ns)
        return api_fail(r, API_E_UNAUTHORIZED, "token '%s' was revoked", tok->id);
    if (tok->scope < need)
        return api_fail(r, API_E_FORBIDDEN, "token '%s' has scope %s; this needs %s", tok->id,
                        api_scope_name(tok->scope), api_scope_name(need));
    return SC_OK;
}

/* Read the first line of path into buf; SC_ENOTFOUND when it does not exist. */
static int read_secret(const char *path, char *buf, size_t n, struct sc_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return sc_error_set(err, errno == ENOENT ? SC_ENOTFOUND : SC_EIO, "cannot read '%s': %s",
                            path, strerror(errno));
    if (!fgets(buf, (int)n, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return SC_OK;
}

/* Write a new secret to path (0600), atomically and durably: the catalog
 * row made next must not outlive the file after a crash. */
static int write_secret(const char *path, const char *secret, struct sc_error *err)
{
    char tmp[4200], dir[4200], *slash;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(dir, sizeof dir, "%s", path);
    if (!(slash = strrchr(dir, '/')))
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0'; /* "/x": the root */
    else
        *slash = '\0';
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return sc_error_set(err, SC_EIO, "cannot create '%s': %s", tmp, strerror(errno));
    size_t n = strlen(secret);
    int ok = write(fd, secret, n) == (ssize_t)n && write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path)) {
        unlink(tmp);
        return sc_error_set(err, SC_EIO, "cannot write '%s': %s", path, strerror(errno));
    }
    return blob_fsync_dir(dir, err);
}

int auth_bootstrap(struct store *s, const struct daemon_config *cfg, struct sc_error *err)
{
    char secret[AUTH_SECRET_MAX] = "";
    struct api_token tok;
    int64_t admins = 0;
    int rc, fresh = 0;

    if ((rc = store_token_active_admins(s, &admins, err)))
        return rc;
    if (admins > 0) {
        if (*cfg->admin_token || *cfg->admin_token_file)
            log_info("auth", "event=bootstrap_skipped msg=\"the catalog has admin tokens already\"");
        return SC_OK;
    }
    if (*cfg->admin_token) {
        snprintf(secret, sizeof secret, "%s", cfg->admin_token);
    } else if (*cfg->admin_token_file) {
        rc = read_secret(cfg->admin_token_file, secret, sizeof secret, err);
        if (rc == SC_ENOTFOUND) {
            if ((rc = new_secret(secret, err)))
                return rc;
            fresh = 1;
        } else if (rc) {
            return rc;
        }
    } else {
        log_warn("auth", "event=no_admin_token msg=\"no token can be created: set "
                         "STEPCAST_ADMIN_TOKEN or --admin-token-file\"");
        return SC_OK;
    }
    if (!secret_valid(secret, strlen(secret)))
        return sc_error_set(err, SC_EINVAL,
                            "the admin token must be 16 to 256 printable characters without spaces");
    /* the file first: a token in the catalog that nobody holds is useless */
    if (fresh && (rc = write_secret(cfg->admin_token_file, secret, err)))
        return rc;
    rc = create_with_secret(s, API_SCOPE_ADMIN, "bootstrap admin", secret, &tok, err);
    if (rc == SC_EEXIST) {
        /* its hash is stored already: another daemon on the same catalog
         * (PostgreSQL) bootstrapped this token at the same moment */
        log_info("auth", "event=bootstrap_skipped msg=\"another daemon stored this admin token\"");
        return SC_OK;
    }
    if (rc)
        return rc;
    log_info("auth", "event=admin_token_created id=%s source=%s", tok.id,
             *cfg->admin_token ? "STEPCAST_ADMIN_TOKEN" : fresh ? "new file" : "file");
    return SC_OK;
}
