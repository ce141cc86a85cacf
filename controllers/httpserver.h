#ifndef NESTCP_CONTROLLERS_HTTPSERVER_H
#define NESTCP_CONTROLLERS_HTTPSERVER_H

/*
 * The manager's HTTP endpoints, on its loop (lib/util/httpd.h):
 *   - the metrics address serves GET /metrics in the Prometheus text format;
 *   - the health address serves GET /healthz (live: the loop answers) and GET /readyz (ready:
 *     every cache has synced; a standby replica under leader election is ready too).
 * When both addresses are the same, one listener serves all three paths.
 */

#include "lib/util/err.h"

struct ev_loop;
struct httpserver;
struct manager;

struct httpserver_opts {
    const char *metrics_address; /* ":8080", "127.0.0.1:0"; NULL, "" or "0": off */
    const char *health_address;  /* ":8081"; NULL, "" or "0": off */
};

/* Listens on the addresses; m is borrowed and must outlive the server. Returns 0, -EINVAL
 * (bad address), or the socket error, with detail in e. */
int httpserver_start(struct ev_loop *loop, struct manager *m, const struct httpserver_opts *opts,
                     struct httpserver **ret_server, struct err *e);

/* The ports listened on; 0 when that endpoint is off. */
int httpserver_metrics_port(const struct httpserver *s);
int httpserver_health_port(const struct httpserver *s);

/* Accepts NULL. */
void httpserver_free(struct httpserver *s);

#endif
