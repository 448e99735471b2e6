/* clients/remote.h: the command line's remote mode: talking to stepcastd.
 *
 *   stepcast --server URL [--token-file F] <command> ...
 *
 * The server comes from --server or STEPCAST_SERVER, the token from
 * STEPCAST_TOKEN or --token-file (never from the command line, where other
 * users could read it). Requests go through libcurl; the server's JSON
 * error bodies become "stepcast: <code>: <message>" and exit status 2 for
 * a 4xx, 1 for anything else. The remote subcommands are in
 * clients/commands.h. */
#ifndef CLIENTS_REMOTE_H
#define CLIENTS_REMOTE_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "common/error.h"

/* Global options given before the command (NULL: not given). */
void remote_set_options(const char *server, const char *token_file);
/* Whether a server was named (flag or environment) and the command's form
 * may ask it. */
int remote_configured(void);
/* The command's form is a local one (it names local files: --out,
 * --ledger, --calibrations, traces): a server named, by --server or
 * $STEPCAST_SERVER, is not asked for the rest of the command, so that
 * naming one never changes what a local command means. */
void remote_stay_local(void);

struct remote {
    char base[1024];    /* the server URL without a trailing slash */
    char auth[300];     /* "Authorization: Bearer ..." or "" */
    void *curl;         /* CURL * */
    int progress_tty;   /* stderr is a terminal */
};

struct remote_resp {
    long status;   /* HTTP status */
    char *body;    /* NUL-terminated, from malloc */
    size_t len;
    char location[512];
};

/* Connect settings; SC_EINVAL (and a message) when no server is named. */
int remote_open(struct remote *r, struct sc_error *err);
void remote_close(struct remote *r);
void remote_resp_release(struct remote_resp *resp);

/* method path [JSON body] -> response. Transport failures are SC_EIO. */
int remote_call(struct remote *r, const char *method, const char *path, const char *json,
                struct remote_resp *out, struct sc_error *err);
/* POST text (len bytes, Content-Type: text/plain) -> response. */
int remote_post_text(struct remote *r, const char *path, const char *text, size_t len,
                     struct remote_resp *out, struct sc_error *err);
/* PUT a file's bytes as they are (streamed, never read whole). */
int remote_put_file(struct remote *r, const char *path, const char *file, struct remote_resp *out,
                    struct sc_error *err);

/* One call that answers JSON: opens the connection, sends, checks that the
 * status is `expect`, parses the body into *doc (a json_t *, the caller
 * decrefs it). Prints any failure; returns the exit status (0 on success). */
int remote_json(const char *method, const char *path, const char *json, long expect, void **doc);

/* A list route's every row: GET path a page of 1,000 rows at a time,
 * following next_cursor, the rows of `key` of every page appended to the
 * first page's (*doc, as remote_json's), its "skipped" the sum of the
 * pages'. The exit status, as remote_json's. */
int remote_list(const char *path, const char *key, void **doc);
/* The same with the rows of each of keys (NULL-terminated) appended. */
int remote_list_keys(const char *path, const char *const *keys, void **doc);

/* For a response that is not 2xx: print the server's error and return the
 * exit status (2 for 4xx, 1 otherwise). */
int remote_fail(const struct remote_resp *resp);
/* A document route's answer printed: its JSON with `json`, else
 * as_text(doc); an error answer as remote_fail does.
 * Returns the exit status. */
int remote_print_document(const struct remote_resp *resp, int json, int (*as_text)(const json_t *doc));

/* Percent-encode s for a query value into out (size n). */
void remote_escape(const char *s, char *out, size_t n);

#endif
