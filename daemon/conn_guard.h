/* daemon/conn_guard.h: slow and greedy clients, per connection.
 *
 * libmicrohttpd's connection timeout is an idle timeout: a client that
 * sends one byte every few seconds is never idle and holds its connection,
 * and with enough such connections every client is locked out. The guard
 * follows every connection from accept to close and enforces what the
 * idle timeout cannot:
 *
 *   - a deadline for the request head (line and headers), counted from
 *     accept or from the end of the previous request on the connection;
 *   - a minimum rate for a request body, measured over windows of
 *     `rate_window_s`, so a stalled upload gives its slot back;
 *   - a global and a per-client-address connection limit: a connection
 *     over one closes the oldest connection still sending its head (or
 *     waiting for its next request), so slow clients cannot lock a fast one
 *     out even when they share its address; only when there is none is the
 *     new connection itself closed.
 *
 * A connection is closed by shutting its socket down, which libmicrohttpd
 * sees as the client gone. All state is under one mutex; a watchdog thread
 * checks deadlines and rates a few times a second. */
#ifndef DAEMON_CONN_GUARD_H
#define DAEMON_CONN_GUARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/error.h"

struct conn_guard_limits {
    double head_timeout_s;   /* the request head must be in within this */
    double min_body_rate;    /* bytes per second a body must keep up */
    double rate_window_s;    /* measured over windows this long */
    size_t max_connections;  /* open connections */
    size_t max_per_client;   /* open connections from one address */
};

struct conn_guard;
struct conn_guard_entry;

int conn_guard_new(const struct conn_guard_limits *lim, struct conn_guard **out, struct sc_error *err);
/* Stops the watchdog; every connection must be closed (the server stopped). */
void conn_guard_free(struct conn_guard *g);

/* A connection was accepted: its entry, or NULL when out of memory (the
 * connection is then not followed). May close other connections, or this
 * one, to keep the limits. */
struct conn_guard_entry *conn_guard_opened(struct conn_guard *g, int fd, const struct sockaddr *addr);
void conn_guard_closed(struct conn_guard *g, struct conn_guard_entry *e);

/* The request head is in; its body (if any) comes next. */
void conn_guard_head_done(struct conn_guard *g, struct conn_guard_entry *e);
/* n bytes of body arrived. */
void conn_guard_body(struct conn_guard *g, struct conn_guard_entry *e, size_t n);
/* The body is in: the answer is being made. */
void conn_guard_body_done(struct conn_guard *g, struct conn_guard_entry *e);
/* The request ended: the connection waits for the next head. */
void conn_guard_request_done(struct conn_guard *g, struct conn_guard_entry *e);

#endif
