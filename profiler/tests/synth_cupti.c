/* profiler/tests/synth_cupti.c: the real CUPTI for tests, and the fake one
 * (synth.h). */
#include "profiler/tests/synth.h"

#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "common/banned.h"

const struct prof_cupti *synth_real_cupti(void)
{
    static struct prof_cupti c;
    static int tried, ok;
    char why[256];
    if (!tried) {
        tried = 1;
        ok = prof_cupti_load(&c, NULL, why, sizeof why) == 0;
    }
    if (!ok)
        SKIP("no libcupti to test against");
    return &c;
}

/* ---- the fake CUPTI ------------------------------------------------------------------ */

static struct synth_cupti_script script;
static struct synth_cupti_log cupti_log;

struct synth_cupti_log *synth_cupti_log(void)
{
    return &cupti_log;
}

static CUptiResult f_version(uint32_t *v)
{
    *v = script.version;
    return CUPTI_SUCCESS;
}

static CUptiResult f_timestamp(uint64_t *ts)
{
    *ts = 1700000000000000000ull;
    return CUPTI_SUCCESS;
}

static CUptiResult f_result_string(CUptiResult r, const char **s)
{
    *s = r == CUPTI_ERROR_UNKNOWN ? "CUPTI_ERROR_UNKNOWN" : "CUPTI_ERROR_SOMETHING";
    return CUPTI_SUCCESS;
}

static CUptiResult f_callback_name(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
    if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211)
        *name = "cudaLaunchKernel_v7000";
    else if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 135)
        *name = "cudaEventRecord_v3020";
    else if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 147)
        *name = "cudaStreamWaitEvent_v3020";
    else if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 41)
        *name = "cudaMemcpyAsync_v3020";
    else if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 131)
        *name = "cudaStreamSynchronize_v3020";
    else if (d == CUPTI_CB_DOMAIN_DRIVER_API && cbid == 652)
        *name = "cuLaunchKernelEx";
    else
        return CUPTI_ERROR_INVALID_PARAMETER;
    return CUPTI_SUCCESS;
}

static CUptiResult f_subscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *user)
{
    (void)cb;
    (void)user;
    *h = NULL;
    cupti_log.subscribed += script.subscribe == CUPTI_SUCCESS;
    return script.subscribe;
}

static CUptiResult f_subscribe_v2(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *user,
                                  CUpti_SubscriberParams *p)
{
    if (script.subscribe == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && script.holder && p &&
        p->oldSubscriberName)
        snprintf(p->oldSubscriberName, p->oldSubscriberSize, "%s", script.holder);
    return f_subscribe(h, cb, user);
}

static CUptiResult f_unsubscribe(CUpti_SubscriberHandle h)
{
    (void)h;
    cupti_log.unsubscribed++;
    return CUPTI_SUCCESS;
}

static CUptiResult f_register(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done)
{
    cupti_log.request = req;
    cupti_log.complete = done;
    return CUPTI_SUCCESS;
}

static CUptiResult f_enable(CUpti_ActivityKind k)
{
    if (script.enable_error && k == script.failing_kind)
        return script.enable_error;
    if ((unsigned)k < 64)
        cupti_log.enabled[k]++;
    return CUPTI_SUCCESS;
}

static CUptiResult f_disable(CUpti_ActivityKind k)
{
    if ((unsigned)k < 64)
        cupti_log.disabled[k]++;
    return CUPTI_SUCCESS;
}

static CUptiResult f_runtime_api(CUpti_CallbackId cbid, uint8_t on)
{
    (void)cbid;
    cupti_log.runtime_filtered += !on;
    return CUPTI_SUCCESS;
}

static CUptiResult f_driver_api(CUpti_CallbackId cbid, uint8_t on)
{
    (void)cbid;
    cupti_log.driver_filtered += !on;
    return CUPTI_SUCCESS;
}

static CUptiResult f_dropped(CUcontext c, uint32_t s, size_t *n)
{
    (void)c;
    (void)s;
    *n = 0;
    return CUPTI_SUCCESS;
}

static CUptiResult f_flush(uint32_t flag)
{
    cupti_log.flushes++;
    if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) {
        cupti_log.forced_flushes++;
        return CUPTI_SUCCESS;
    }
    return script.flush_error;
}

static CUptiResult f_push(CUpti_ExternalCorrelationKind k, uint64_t id)
{
    (void)k;
    cupti_log.pushes++;
    cupti_log.last_pushed = id;
    return CUPTI_SUCCESS;
}

static CUptiResult f_pop(CUpti_ExternalCorrelationKind k, uint64_t *id)
{
    (void)k;
    cupti_log.pops++;
    if (id)
        *id = cupti_log.last_pushed;
    return CUPTI_SUCCESS;
}

void synth_cupti_make(struct prof_cupti *c, const struct synth_cupti_script *s)
{
    static struct prof_layout layout;
    memset(c, 0, sizeof *c);
    memset(&cupti_log, 0, sizeof cupti_log);
    script = *s;
    snprintf(c->path, sizeof c->path, "fake-cupti");
    c->get_version = f_version;
    c->get_timestamp = f_timestamp;
    c->get_result_string = f_result_string;
    c->get_callback_name = f_callback_name;
    c->subscribe = f_subscribe;
    c->subscribe_v2 = f_subscribe_v2;
    c->unsubscribe = f_unsubscribe;
    c->register_callbacks = f_register;
    c->enable = f_enable;
    c->disable = f_disable;
    c->enable_runtime_api = f_runtime_api;
    c->enable_driver_api = f_driver_api;
    c->get_next_record = synth_next_record;
    c->get_num_dropped = f_dropped;
    c->flush_all = f_flush;
    c->push_external_id = f_push;
    c->pop_external_id = f_pop;
    if (prof_layout_for_version(s->version, &layout) == 0)
        synth_set_layout(&layout);
}

void synth_cupti_deliver(const struct synth_buf *b)
{
    uint8_t *buf = NULL;
    size_t size = 0, max = 0;
    CHECK(cupti_log.request != NULL);
    if (!cupti_log.request)
        return;
    cupti_log.request(&buf, &size, &max);
    CHECK(buf != NULL);
    CHECK(size >= b->len);
    if (!buf || size < b->len)
        return;
    memcpy(buf, b->p, b->len);
    cupti_log.complete(NULL, 0, buf, size, b->len);
}
