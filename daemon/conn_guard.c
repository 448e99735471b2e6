/* daemon/conn_guard.c: head deadlines, body rates and connection limits
 * (conn_guard.h). */
#include "daemon/conn_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/log.h"
#include "common/banned.h"

enum phase {
    WAITING, /* for the request head (after accept, or between requests) */
    BODY,    /* receiving a request body */
    ANSWER   /* the request is being answered */
};

struct conn_guard_entry {
    struct conn_guard_entry *prev, *next; /* in accept order */
    int fd;
    int closing; /* shut down, waiting for libmicrohttpd to close it */
    enum phase phase;
    double since;        /* when the phase began */
    double window_start; /* the body rate's window */
    uint64_t body_bytes, window_bytes;
    struct sockaddr_storage addr;
};

struct conn_guard {
    struct conn_guard_limits lim;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t watchdog;
    int stop;
    struct conn_guard_entry *head, *tail;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int same_client(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return 0;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                       sizeof(struct in6_addr));
    return 1; /* other families (none today) count as one client */
}

static const char *client_text(const struct sockaddr_storage *a, char *buf, size_t n)
{
    const void *p = a->ss_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr
                                             : (const void *)&((const struct sockaddr_in *)a)->sin_addr;
    if (!inet_ntop(a->ss_family, p, buf, (socklen_t)n))
        snprintf(buf, n, "-");
    return buf;
}

/* Close a connection: libmicrohttpd sees its client gone. Under the mutex, so
 * the socket is still open (conn_guard_closed takes the entry out first). */
static void shut(struct conn_guard_entry *e, const char *reason)
{
    char who[INET6_ADDRSTRLEN];
    if (e->closing)
        return;
    e->closing = 1;
    shutdown(e->fd, SHUT_RDWR);
    log_info("http", "event=connection_closed reason=%s client=%s", reason,
             client_text(&e->addr, who, sizeof who));
}

/* The connection longest waiting for its head, among those `like` names
 * the client of (NULL: any), other than `except`. */
static struct conn_guard_entry *oldest_waiting(struct conn_guard *g, const struct conn_guard_entry *like,
                                               const struct conn_guard_entry *except)
{
    struct conn_guard_entry *best = NULL;
    for (struct conn_guard_entry *e = g->head; e; e = e->next)
        if (e != except && !e->closing && e->phase == WAITING && (!like || same_client(&e->addr, &like->addr)) &&
            (!best || e->since < best->since))
            best = e;
    return best;
}

/* Keep the limits after `e` was accepted. */
static void keep_limits(struct conn_guard *g, struct conn_guard_entry *e)
{
    size_t open = 0, mine = 0;
    for (struct conn_guard_entry *x = g->head; x; x = x->next) {
        if (x->closing)
            continue;
        open++;
        mine += same_client(&x->addr, &e->addr);
    }
    if (mine > g->lim.max_per_client || open > g->lim.max_connections) {
        struct conn_guard_entry *victim =
            oldest_waiting(g, mine > g->lim.max_per_client ? e : NULL, e);
        if (victim)
            shut(victim, mine > g->lim.max_per_client ? "client_limit" : "connection_limit");
        else
            shut(e, mine > g->lim.max_per_client ? "client_limit_busy" : "connection_limit_busy");
    }
}

static void check_deadlines(struct conn_guard *g, double now)
{
    for (struct conn_guard_entry *e = g->head; e; e = e->next) {
        if (e->closing)
            continue;
        if (e->phase == WAITING && now - e->since > g->lim.head_timeout_s) {
            shut(e, "head_timeout");
        } else if (e->phase == BODY && now - e->window_start >= g->lim.rate_window_s) {
            double rate = (double)(e->body_bytes - e->window_bytes) / (now - e->window_start);
            if (rate < g->lim.min_body_rate) {
                shut(e, "slow_body");
            } else {
                e->window_start = now;
                e->window_bytes = e->body_bytes;
            }
        }
    }
}

static void *watchdog(void *arg)
{
    struct conn_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g->wake, &g->mu, &ts);
        check_deadlines(g, now_s());
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int conn_guard_new(const struct conn_guard_limits *lim, struct conn_guard **out, struct sc_error *err)
{
    struct conn_guard *g = calloc(1, sizeof *g);
    *out = NULL;
    if (!g)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    g->lim = *lim;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->wake, NULL);
    if (pthread_create(&g->watchdog, NULL, watchdog, g)) {
        pthread_cond_destroy(&g->wake);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return sc_error_set(err, SC_ENOMEM, "cannot start the connection watchdog");
    }
    *out = g;
    return SC_OK;
}

void conn_guard_free(struct conn_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->watchdog, NULL);
    while (g->head) { /* none when the server stopped first */
        struct conn_guard_entry *e = g->head;
        g->head = e->next;
        free(e);
    }
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

struct conn_guard_entry *conn_guard_opened(struct conn_guard *g, int fd, const struct sockaddr *addr)
{
    struct conn_guard_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->fd = fd;
    e->phase = WAITING;
    e->since = now_s();
    if (addr && addr->sa_family == AF_INET6)
        memcpy(&e->addr, addr, sizeof(struct sockaddr_in6));
    else if (addr && addr->sa_family == AF_INET)
        memcpy(&e->addr, addr, sizeof(struct sockaddr_in));
    pthread_mutex_lock(&g->mu);
    e->prev = g->tail;
    if (g->tail)
        g->tail->next = e;
    else
        g->head = e;
    g->tail = e;
    keep_limits(g, e);
    pthread_mutex_unlock(&g->mu);
    return e;
}

void conn_guard_closed(struct conn_guard *g, struct conn_guard_entry *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&g->mu);
    if (e->prev)
        e->prev->next = e->next;
    else
        g->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        g->tail = e->prev;
    pthread_mutex_unlock(&g->mu);
    free(e);
}

static void set_phase(struct conn_guard *g, struct conn_guard_entry *e, enum phase p)
{
    if (!e)
        return;
    pthread_mutex_lock(&g->mu);
    e->phase = p;
    e->since = e->window_start = now_s();
    e->body_bytes = e->window_bytes = 0;
    pthread_mutex_unlock(&g->mu);
}

void conn_guard_head_done(struct conn_guard *g, struct conn_guard_entry *e)
{
    set_phase(g, e, BODY);
}

void conn_guard_body(struct conn_guard *g, struct conn_guard_entry *e, size_t n)
{
    if (!e)
        return;
    pthread_mutex_lock(&g->mu);
    e->body_bytes += n;
    pthread_mutex_unlock(&g->mu);
}

void conn_guard_body_done(struct conn_guard *g, struct conn_guard_entry *e)
{
    set_phase(g, e, ANSWER);
}

void conn_guard_request_done(struct conn_guard *g, struct conn_guard_entry *e)
{
    set_phase(g, e, WAITING);
}
