/* daemon/auth.h: bearer tokens: minting, checking, the first admin token.
 *
 * A token is a random secret ("sct_" and 40 hex digits) shown once, when it
 * is created; the catalog keeps only its SHA-256, so a stolen catalog holds
 * no usable token. Requests carry it as `Authorization: Bearer <secret>`.
 * Scopes nest: read < write < admin. */
#ifndef DAEMON_AUTH_H
#define DAEMON_AUTH_H

#include "api/reply.h"
#include "api/resources.h"
#include "common/error.h"

struct daemon_config;
struct store;

#define AUTH_SECRET_MAX 260

/* Create a token; secret gets the text to hand out. */
int auth_token_create(struct store *s, enum api_scope scope, const char *name,
                      struct api_token *out, char secret[AUTH_SECRET_MAX], struct sc_error *err);

/* Check an Authorization header value (NULL when absent) for `need`. On
 * success *tok is the caller's token; else r holds 401 (missing, unknown,
 * revoked) or 403 (scope), and the status is returned. */
int auth_check(struct store *s, const char *authorization, enum api_scope need,
               struct api_token *tok, struct api_reply *r);

/* When the catalog has no active admin token, create one from admin-token
 * (STEPCAST_ADMIN_TOKEN) or admin-token-file (a fresh one is written to
 * that file, mode 0600, when it does not exist). */
int auth_bootstrap(struct store *s, const struct daemon_config *cfg, struct sc_error *err);

#endif
