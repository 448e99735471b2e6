/* daemon/h_experiments.h: what h_experiments.c (A/B experiments and their
 * bank) gives the ledger. */
#ifndef DAEMON_H_EXPERIMENTS_H
#define DAEMON_H_EXPERIMENTS_H

#include <jansson.h>

#include "daemon/service.h"

/* The ledger's bank: closed winning experiments' savings summed per team
 * and month ({"by_team_and_month":[{"team","month","experiments",
 * "gpu_hours_per_day","usd_per_day","per_step_only"}],"method"}). */
json_t *h_experiments_bank_json(struct svc *s);

#endif
