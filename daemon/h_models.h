/* daemon/h_models.h: what h_models.c (models and the queries on them)
 * gives the other handlers: a ready model from the cache, a what-if's
 * step time, and an A/B answer. */
#ifndef DAEMON_H_MODELS_H
#define DAEMON_H_MODELS_H

#include "api/reply.h"
#include "daemon/service.h"

struct cache_entry;
struct job_config;
struct model_ab_opts;
struct model_graph;

/* What a helper returns when it deferred the request (svc_defer): r is
 * untouched, and the handler returns at once. */
#define H_DEFERRED (-1)

/* Model id, ready, from the cache into *e (released by the caller with
 * cache_release); on failure the reply in r (409 while it builds) and its
 * status. A model not in memory is loaded again from its traces, which is
 * heavy work: on an HTTP thread, H_DEFERRED. */
int h_ready_model(struct svc *s, const char *id, struct cache_entry **e, struct api_reply *r);
/* The step time of a what-if (set) of model id, for the ledger; on
 * failure the reply in r and its status. */
int h_whatif_step_ms(struct svc *s, const char *id, const struct job_config *set, double *ms, struct api_reply *r);
/* Model id's job description and its built model from the cache (released
 * by the caller with cache_release); on failure the reply (404, 409 while
 * building, 422 without a config). */
int h_model_whatif_ready(struct svc *s, const char *id, struct job_config *cfg, struct cache_entry **e,
                         struct api_reply *r);
/* Model b against model a (model/ab.h, with diff's attribution) into r: 200
 * and the document of `stepcast ab --json`, memoised with a; else r holds
 * the error (404, 409 while either builds, 422) and its status is returned. */
int h_ab_answer(struct svc *s, const char *a, const char *b, const struct model_ab_opts *o, struct api_reply *r);

#endif
