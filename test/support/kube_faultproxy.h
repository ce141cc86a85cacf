#ifndef NESTCP_TEST_SUPPORT_KUBE_FAULTPROXY_H
#define NESTCP_TEST_SUPPORT_KUBE_FAULTPROXY_H

/*
 * A fault-injecting proxy in front of the real API server, for tests only, on loopback.
 *
 * Towards the client under test it speaks what a real API server speaks: TLS with ALPN "h2",
 * HTTP/2 (libnghttp2's server side), a serving certificate for 127.0.0.1 and localhost from
 * a CA of its own (kfp_client_config hands out a kubeconfig that trusts it). Towards the API
 * server it forwards every stream over verified TLS with the upstream kubeconfig's credentials,
 * streaming responses (watches included), except where a rule or a control below says
 * otherwise. Each client connection is served by a thread of its own with its own upstream
 * multi handle, so one connection can be black-holed while a new one works.
 *
 * Faults:
 *   - rules (kfp_add_rule), matched in order against "METHOD /path?query" of each request:
 *     a canned answer (5xx, 429 with or without Retry-After, 410, 504 ResourceVersionTooLarge,
 *     a 200 that ends a watch at once), or a forwarded watch whose stream is changed on the
 *     way (a line injected, bookmarks dropped, the stream or the whole connection reset after
 *     n events);
 *   - kfp_stall: every connection open now stops being served, without closing (a black hole);
 *     kfp_blackhole: connections accepted from now on are never served either;
 *   - kfp_reset_connections: every open connection is dropped with a TCP RST;
 *   - kfp_set_cert: the certificate new connections get (re-issued from the same CA, from an
 *     unknown CA, for the wrong name, expired).
 * Every request is logged (kfp_request_line) so tests can check what the client sent.
 *
 * Thread safety: every function may be called from the test's thread while the proxy runs.
 */

#include <stdbool.h>
#include <stddef.h>

struct kfp;
struct kube_config;

enum kfp_action {
    /* Answer without forwarding: `status`, `body` (NULL: a Status object for the code, "":
     * nothing) and, when set, a Retry-After header. A 200 with body "" on a watch is a watch
     * that ends at once with no event. */
    KFP_REPLY,
    /* Forward a watch, inserting `line` (a newline is added) before event number `after`
     * (0: before the first). */
    KFP_INJECT_LINE,
    /* Forward a watch without its BOOKMARK events. */
    KFP_DROP_BOOKMARKS,
    /* Forward a watch and reset its HTTP/2 stream (RST_STREAM) after `after` events. */
    KFP_RESET_STREAM,
    /* Forward a watch and drop the whole connection with a TCP RST after `after` events. */
    KFP_RESET_CONNECTION,
    /* Forward a list, with its metadata.resourceVersion moved `after` versions ahead: what a
     * client holds that listed before the server's etcd was restored from an older backup. */
    KFP_FUTURE_RV,
};

#define KFP_MATCH_MAX 3

struct kfp_rule {
    /* Every non-NULL entry must be a substring of "METHOD /path?query". */
    const char *match[KFP_MATCH_MAX];
    int count; /* how many requests get it; < 0: every matching request until cleared */
    enum kfp_action action;
    int status;              /* KFP_REPLY */
    const char *retry_after; /* KFP_REPLY: the header's value, or NULL for none */
    const char *body;        /* KFP_REPLY */
    const char *line;        /* KFP_INJECT_LINE */
    unsigned long after;     /* events before the fault */
};

enum kfp_cert {
    KFP_CERT_GOOD,       /* the one issued at start */
    KFP_CERT_REISSUED,   /* a new key and certificate from the same CA, same names */
    KFP_CERT_UNKNOWN_CA, /* the right names, signed by a CA the client does not trust */
    KFP_CERT_WRONG_NAME, /* the right CA, for a name that is not the server's */
    KFP_CERT_EXPIRED,    /* the right CA and names, expired a day ago */
};

/* Starts the proxy in front of upstream (copied). Returns 0 or a negative code. */
int kfp_start(const struct kube_config *upstream, struct kfp **ret_proxy);

/* Stops every thread and frees the proxy. Accepts NULL. */
void kfp_stop(struct kfp *p);

/* A copy of upstream that points at the proxy and trusts its CA (free with
 * kube_config_free). NULL when out of memory. */
struct kube_config *kfp_client_config(const struct kfp *p);

int kfp_port(const struct kfp *p);

/* The PEM of the CA that signs certificates of kind `cert` (borrowed until kfp_stop). */
const char *kfp_ca(const struct kfp *p, enum kfp_cert cert);

/* Adds a rule (strings copied) after the existing ones. Returns 0 or -ENOMEM. */
int kfp_add_rule(struct kfp *p, const struct kfp_rule *rule);
/* Removes every rule. */
void kfp_clear_rules(struct kfp *p);
/* Rules still armed (count not yet used up; rules with count < 0 always count). */
int kfp_rules_armed(struct kfp *p);

void kfp_stall(struct kfp *p);
void kfp_blackhole(struct kfp *p, bool on);
void kfp_reset_connections(struct kfp *p);
void kfp_set_cert(struct kfp *p, enum kfp_cert cert);

struct kfp_stats {
    int connections;  /* TCP connections accepted */
    int handshakes;   /* TLS handshakes completed with h2 */
    int tls_failures; /* handshakes that failed (e.g. the client refused the certificate) */
    int requests;     /* HTTP/2 requests received, faulted or forwarded */
    int injected;     /* faults handed out by rules */
    int open;         /* connections being served now (stalled ones not counted) */
};
void kfp_get_stats(struct kfp *p, struct kfp_stats *ret_stats);

/* The TLS error of the last failed handshake ("" if none), copied into buf. */
void kfp_last_tls_error(struct kfp *p, char *buf, size_t len);

/* Request number i (0-based, in arrival order) as "METHOD /path?query", copied into buf.
 * Returns false when there is no such request. */
bool kfp_request_line(struct kfp *p, int i, char *buf, size_t len);

/* When request number i arrived (time_mono()), or 0 when there is no such request. */
double kfp_request_time(struct kfp *p, int i);

/* Requests from number `from` on whose line contains every non-NULL substring. */
int kfp_count(struct kfp *p, int from, const char *s1, const char *s2);

/* The resourceVersion of the last BOOKMARK forwarded to the client ("" if none). */
void kfp_last_bookmark_rv(struct kfp *p, char *buf, size_t len);

#endif
