/* daemon/ledger_band.h: the ledger's error band for a kind of prediction,
 * read from the catalog, for the handlers whose answers carry one
 * (estimates, what-ifs, plans). Apart from the ledger's handlers
 * (h_validations.c), which price predictions through those same handlers. */
#ifndef DAEMON_LEDGER_BAND_H
#define DAEMON_LEDGER_BAND_H

#include "daemon/service.h"

struct ledger_band;

/* The ledger's error band for predictions of kind k (none when the ledger
 * cannot be read: the prediction still answers). Answers that carry it
 * are memoised under s->ledger_changes too. */
void h_ledger_band(struct svc *s, int kind, struct ledger_band *b);

#endif
