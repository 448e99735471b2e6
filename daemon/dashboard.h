/* daemon/dashboard.h: the web dashboard's files, built into stepcastd.
 *
 * The table is generated at build time from clients/dashboard/ and the
 * chart library (daemon/dashboard_embed.sh); h_dashboard.c serves it at `/`
 * and `/ui/{file}`, looking request names up in it, never opening files. */
#ifndef DAEMON_DASHBOARD_H
#define DAEMON_DASHBOARD_H

#include <stddef.h>

struct dashboard_file {
    const char *name; /* base name: "index.html", "app.js" */
    const unsigned char *bytes;
    size_t len;
};

extern const struct dashboard_file dashboard_files[];
extern const size_t dashboard_n_files;

#endif
