/* daemon/dashboard.h: the web dashboard's files, built into stepcastd.
 *
 * The table is generated at build time from clients/dashboard/ and the
 * chart library (scripts/embed.sh); h_dashboard.c serves it at `/`
 * and `/ui/{file}`, looking request names up in it, never opening files. */
#ifndef DAEMON_DASHBOARD_H
#define DAEMON_DASHBOARD_H

#include "common/embedded.h"

/* Base names ("index.html", "app.js"), ended by a NULL name. */
extern const struct sc_embedded dashboard_files[];

#endif
