#ifndef NESTCP_ETCD_CLIENT_H
#define NESTCP_ETCD_CLIENT_H

/*
 * An asynchronous client of etcd's membership and status API, for adding, promoting and
 * removing members one at a time. It speaks to one member per call through etcd's v3 JSON
 * gateway on the client port (POST /v3/cluster/member/{list,add,promote,remove},
 * POST /v3/maintenance/status, GET /health), over TLS with a client certificate, HTTP/2 where
 * the member offers it. Every call is a transfer on the caller's kube_transport (one libcurl
 * multi handle on the libev loop) and completes through a callback on that loop; nothing here
 * blocks the loop or logs.
 *
 * TLS is always verified: the member's certificate must chain to the given CA and name
 * endpoint.host. The host (a StatefulSet pod's DNS name, say c-etcd-0.c-etcd.ns.svc) need not
 * resolve where the client runs: endpoint.ip pins it to an address (CURLOPT_RESOLVE) and
 * verification still checks the name. Only the given CA is trusted, not the system's.
 *
 * Codes (struct etcd_result.code): 0, the table of lib/etcd/json.h for errors etcd answers
 * (-EAGAIN learner not in sync yet, -EALREADY not a learner, -EUSERS too many learners,
 * -ENOENT no such member, -EEXIST peer URL taken, -EHOSTDOWN not enough started members,
 * -ENETDOWN unhealthy cluster, -EBUSY transient, ...), and for failures on the way:
 *   -ETIMEDOUT     the call's timeout passed (connecting included)
 *   -ECONNREFUSED  no connection (nothing listens, or the name does not resolve)
 *   -ECONNRESET    the connection broke, or the TLS handshake failed (e.g. the member refused
 *                  the client certificate)
 *   -EKEYREJECTED  the member's certificate did not verify: not from the CA, or not for host
 *   -EBADMSG       a 2xx response that is not the document expected
 *   -EFBIG         a response larger than ETCD_JSON_MAX
 *   -ECANCELED     etcd_call_cancel or etcd_client_free ended the call
 *   -ENOMEM, -EIO
 * A call answered -EBUSY, -ETIMEDOUT or -ECONNRESET may still have changed the membership:
 * list the members before repeating a change.
 *
 * Ownership: arguments are copied before a call returns. The result handed to a callback, and
 * everything it points to, is borrowed for the duration of the callback.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/etcd/json.h"
#include "lib/util/err.h"

struct etcd_call;
struct etcd_client;
struct kube_transport;

/* The timeout of a call unless the client or the endpoint says otherwise. */
#define ETCD_TIMEOUT_DEFAULT_MS 5000L

/* The client's TLS material, as NUL-terminated PEM text. */
struct etcd_tls {
    const char *ca_pem;   /* the CA that signs the members' serving certificates */
    const char *cert_pem; /* the client certificate (extendedKeyUsage clientAuth) */
    const char *key_pem;  /* its key; kept in memory only, wiped when the client is freed */
};

/* The member a call talks to. Strings are copied. */
struct etcd_endpoint {
    const char *host; /* DNS name (or IPv4 literal) its serving certificate holds */
    const char *ip;   /* IPv4 or IPv6 address to connect to; NULL: resolve host */
    int port;         /* its client port (2379) */
    long timeout_ms;  /* the whole call; 0: the client's default */
};

struct etcd_result {
    int code;         /* 0 or a negative code (see above) */
    long http_status; /* 0 when no response came */
    /* code and message; msg is "" on success. For an error etcd answered, its own text
     * verbatim ("etcdserver: ..."), for conditions and for comparing; for a failure on the way,
     * libcurl's or the parser's description after "host:port: ". Never NULL. */
    const struct err *err;
    /* member list, add, promote, remove: the members as the answering member sees them after
     * the call (for add, members->added is the new member); NULL on failure and for others. */
    const struct etcd_member_list *members;
    /* status: what the member reports; NULL on failure and for others. */
    const struct etcd_status *status;
};

/* Called once per call, on the loop, also on failure and cancellation. A callback may start
 * calls, cancel others, and free the client. */
typedef void (*etcd_done_fn)(void *userdata, const struct etcd_result *result);

/* Creates a client that sends its calls on t (borrowed: t must outlive the client and every
 * call). The TLS material is copied. Returns 0, -EINVAL (missing PEM; message in e), -ENOMEM. */
int etcd_client_new(struct kube_transport *t, const struct etcd_tls *tls,
                    struct etcd_client **ret_client, struct err *e);

/* Ends every call still in flight (its callback runs with -ECANCELED before this returns) and
 * frees the client, wiping the key. Accepts NULL. When called from inside a libcurl callback
 * of another transfer on the same transport, the transfers are taken off the transport as soon
 * as libcurl returns to it (kube_transport_close). */
void etcd_client_free(struct etcd_client *c);

/* Default timeout of a call in milliseconds (ETCD_TIMEOUT_DEFAULT_MS; <= 0 restores it). */
void etcd_client_set_timeout(struct etcd_client *c, long timeout_ms);

/* Number of calls in flight. */
size_t etcd_client_pending(const struct etcd_client *c);

/*
 * The calls. Each queues one request to ep and returns 0, after which done runs exactly once,
 * later, on the loop; or returns a negative code and done never runs: -EINVAL (a bad endpoint
 * or argument; message in e), -ENOMEM, -EIO (the transport refused the transfer, e.g. when
 * started from inside a libcurl callback). When ret_call is not NULL it receives a handle for
 * etcd_call_cancel, valid until done starts to run.
 */

/* POST /v3/cluster/member/list, linearizable (the answering member confirms with the leader
 * that its list is current). */
int etcd_member_list(struct etcd_client *c, const struct etcd_endpoint *ep, etcd_done_fn done,
                     void *userdata, struct etcd_call **ret_call, struct err *e);

/* POST /v3/cluster/member/add with peer_urls (1 to ETCD_URLS_MAX), as a learner or a voting
 * member. The result's members->added holds the new member's ID. */
int etcd_member_add(struct etcd_client *c, const struct etcd_endpoint *ep,
                    const char *const *peer_urls, size_t n_peer_urls, bool is_learner,
                    etcd_done_fn done, void *userdata, struct etcd_call **ret_call, struct err *e);

/* POST /v3/cluster/member/promote: makes learner id a voting member. -EAGAIN while it is not in
 * sync with the leader (try again later), -EALREADY when it votes already. */
int etcd_member_promote(struct etcd_client *c, const struct etcd_endpoint *ep, uint64_t id,
                        etcd_done_fn done, void *userdata, struct etcd_call **ret_call,
                        struct err *e);

/* POST /v3/cluster/member/remove. -ENOENT when no member has id. */
int etcd_member_remove(struct etcd_client *c, const struct etcd_endpoint *ep, uint64_t id,
                       etcd_done_fn done, void *userdata, struct etcd_call **ret_call,
                       struct err *e);

/* POST /v3/maintenance/status of the member ep names. */
int etcd_status_get(struct etcd_client *c, const struct etcd_endpoint *ep, etcd_done_fn done,
                    void *userdata, struct etcd_call **ret_call, struct err *e);

/* GET /health: code 0 when the member reports itself healthy (it has a leader and serves
 * requests), -ENETDOWN with etcd's reason when not, or a transport error. */
int etcd_health_get(struct etcd_client *c, const struct etcd_endpoint *ep, etcd_done_fn done,
                    void *userdata, struct etcd_call **ret_call, struct err *e);

/* Ends a call still in flight: its callback runs now, with -ECANCELED. Must not be called once
 * that callback has started. Safe from anywhere else, libcurl callbacks of other transfers on
 * the transport included (the transfer is then taken off as soon as libcurl returns). */
void etcd_call_cancel(struct etcd_call *call);

#endif
