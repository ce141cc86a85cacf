#ifndef NESTCP_CTRL_HTTPSERVER_H
#define NESTCP_CTRL_HTTPSERVER_H

/*
 * The manager's HTTP endpoints, on its loop (lib/util/httpd.h):
 *   - the metrics address serves GET /metrics in the Prometheus text format. Secure (the
 *     default), as controller-runtime's secure metrics: HTTPS, and each scrape's bearer token
 *     authenticated with a TokenReview and authorised with a SubjectAccessReview (verb get on
 *     the non-resource URL /metrics): no token or one the API server does not accept is 401,
 *     a user without the right 403, a review that fails 500. Not secure: plain HTTP with no
 *     authentication, allowed only on a loopback address;
 *   - the health address serves GET /healthz (live: the loop answers) and GET /readyz (ready:
 *     every cache has synced; a standby replica under leader election is ready too), plain
 *     HTTP, for the kubelet's probes.
 * With plain metrics and the same address for both, one listener serves all three paths;
 * secure metrics always have a listener of their own (the same address twice is then taken
 * twice: port 0 gives two ports, another port fails as in use).
 */

#include <stdbool.h>

#include "lib/util/err.h"

struct ev_loop;
struct httpserver;
struct kube_client;
struct manager;

struct httpserver_opts {
    const char *metrics_address; /* ":8443", "127.0.0.1:0"; NULL, "" or "0": off */
    const char *health_address;  /* ":8081"; NULL, "" or "0": off */
    bool metrics_insecure;       /* plain HTTP, unauthenticated: a loopback address only */
    /* The serving certificate: tls.crt (leaf then chain) and tls.key in this directory,
     * read once at start; NULL or "": a self-signed pair made at start. */
    const char *metrics_cert_dir;
    struct kube_client *client; /* for the reviews (borrowed); required when secure */
};

/* The names of the files a --metrics-cert-dir holds, as controller-runtime's defaults. */
#define HTTPSERVER_CERT_FILE "tls.crt"
#define HTTPSERVER_KEY_FILE "tls.key"

/* Listens on the addresses; m and opts->client are borrowed and must outlive the server.
 * Returns 0, -EINVAL (a bad address, plain metrics not on a loopback address, secure metrics
 * without a client, a bad certificate directory), or the socket error (-EADDRINUSE: e.g. the
 * same port for secure metrics and health), with detail in e. */
int httpserver_start(struct ev_loop *loop, struct manager *m, const struct httpserver_opts *opts,
                     struct httpserver **ret_server, struct err *e);

/* The ports listened on; 0 when that endpoint is off. */
int httpserver_metrics_port(const struct httpserver *s);
int httpserver_health_port(const struct httpserver *s);

/* Accepts NULL. */
void httpserver_free(struct httpserver *s);

#endif
