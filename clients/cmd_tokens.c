/* clients/cmd_tokens.c: `stepcast tokens`: API tokens (admin token needed).
 *
 *   stepcast tokens [--json]                         every token (no secrets)
 *   stepcast tokens create --scope S [--name NAME]   prints the new secret once
 *   stepcast tokens revoke ID */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "clients/table.h"
#include "common/banned.h"

static int create(int argc, char **argv)
{
    const char *scope = NULL, *name = NULL;
    void *doc;
    int rc;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--scope") && i + 1 < argc)
            scope = argv[++i];
        else if (!strcmp(argv[i], "--name") && i + 1 < argc)
            name = argv[++i];
        else
            return cli_usage_error("tokens",
                                   "usage: tokens create --scope read|write|admin [--name NAME]");
    }
    if (!scope)
        return cli_usage_error("tokens", "create needs --scope read|write|admin");
    json_t *body = json_pack("{s:s}", "scope", scope);
    if (name)
        json_object_set_new(body, "name", json_string(name));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    rc = remote_json("POST", "/v1/tokens", text, 201, &doc);
    free(text);
    if (rc)
        return rc;
    fprintf(stderr, "token %s (%s): the secret is shown once\n", cli_json_str(doc, "id", "-"),
            cli_json_str(doc, "scope", "-"));
    printf("%s\n", cli_json_str(doc, "token", "-"));
    json_decref(doc);
    return 0;
}

int cmd_tokens(int argc, char **argv)
{
    char path[256], esc[200];
    void *doc;
    int rc, json = argc == 2 && !strcmp(argv[1], "--json");

    if (argc >= 2 && !strcmp(argv[1], "create"))
        return create(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "revoke")) {
        if (argc != 3)
            return cli_usage_error("tokens", "usage: tokens revoke ID");
        remote_escape(argv[2], esc, sizeof esc);
        snprintf(path, sizeof path, "/v1/tokens/%s", esc);
        if ((rc = remote_json("DELETE", path, NULL, 200, &doc)))
            return rc;
        printf("revoked %s\n", cli_json_str(doc, "id", "-"));
        json_decref(doc);
        return 0;
    }
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: stepcast tokens [--json] | tokens create --scope S [--name N] | tokens "
               "revoke ID\n");
        return 0;
    }
    if (argc > 2 || (argc == 2 && !json))
        return cli_usage_error("tokens",
                               "usage: tokens [--json] | create --scope S [--name N] | revoke ID");
    if ((rc = remote_list("/v1/tokens", "tokens", &doc)))
        return rc;
    if (json) {
        rc = cli_print_json(doc);
    } else {
        struct cli_table tb;
        size_t i;
        json_t *t;
        cli_table_init(&tb, "id", "name", "scope", "created", "revoked", NULL);
        json_array_foreach(json_object_get(doc, "tokens"), i, t)
            cli_table_rowf(&tb, "%s|%s|%s|%s|%s", cli_json_str(t, "id", "-"),
                           cli_json_str(t, "name", "-"), cli_json_str(t, "scope", "-"),
                           cli_json_str(t, "created", "-"), cli_json_str(t, "revoked", "-"));
        cli_table_print(&tb, stdout, "");
        cli_table_release(&tb);
    }
    json_decref(doc);
    return rc;
}
