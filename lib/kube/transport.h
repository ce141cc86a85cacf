#ifndef NESTCP_KUBE_TRANSPORT_H
#define NESTCP_KUBE_TRANSPORT_H

/*
 * One libcurl multi handle driven by a libev loop through CURLMOPT_SOCKETFUNCTION and
 * CURLMOPT_TIMERFUNCTION (the shape of curl's evhiperfifo.c example, with its timeout
 * conversion and CURL_CSELECT_* flags done right). HTTP/2 streams are multiplexed over one
 * connection where the server offers h2. Nothing here blocks the loop.
 *
 * A transfer is a `struct kube_xfer` embedded in its owner (container_of gets back to it). The
 * owner configures x->easy, sets x->done, and adds it; done runs on the loop once the transfer
 * finished, after the easy handle has been taken off the multi handle, so done may clean up or
 * re-add it. A transfer removed before it finished gets no done call.
 *
 * libcurl forbids taking a transfer off its multi handle from inside its own callbacks (write,
 * header), which is where a watch event or a response may make its owner give up on it. So
 * there is one way to end a transfer from anywhere: kube_transport_close, which takes it off
 * at once when libcurl allows, and otherwise as soon as libcurl returns to the transport, before
 * any other event of the loop; either way the close callback then runs, and its owner may free
 * it there (the shape of uv_close).
 */

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include "lib/util/list.h"

struct ev_loop;
struct kube_transport;
struct kube_xfer;

typedef void (*kube_xfer_done_fn)(struct kube_xfer *x, CURLcode rc);
typedef void (*kube_xfer_close_fn)(struct kube_xfer *x);

struct kube_xfer {
    CURL *easy;
    kube_xfer_done_fn done;
    struct kube_transport *t;  /* set while the transfer is on the multi handle */
    kube_xfer_close_fn closed; /* set by kube_transport_close */
    struct list_node closing;  /* in the transport's queue until it is taken off */
};

#define kube_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Returns 0 or -ENOMEM. */
int kube_transport_new(struct ev_loop *loop, struct kube_transport **ret_t);

/* Frees the transport. Every transfer must have completed or been removed. Accepts NULL. */
void kube_transport_free(struct kube_transport *t);

struct ev_loop *kube_transport_loop(const struct kube_transport *t);

/* Connections a transport keeps: when a transfer ends with more open, the one idle longest is
 * closed. The API server's one connection carries every request and watch; the others are
 * etcd members', one call's at a time. */
#define KUBE_TRANSPORT_MAX_CONNECTS 4L

/* The upload buffer of every transfer, libcurl's smallest (its default is 64 KiB). */
#define KUBE_TRANSPORT_UPLOAD_BUFFER 16384L

/* Starts x (x->easy and x->done set), with KUBE_TRANSPORT_UPLOAD_BUFFER. Returns 0, -ENOMEM or
 * -EIO. */
int kube_transport_add(struct kube_transport *t, struct kube_xfer *x);

/* Takes x off the multi handle without calling done; no-op if it is not on it. Must not be
 * called from inside a libcurl callback (write, header, progress) of any transfer. */
void kube_transport_remove(struct kube_xfer *x);

/* Ends x: takes it off the multi handle (done is not called) and then calls closed(x), where
 * the owner may free x. Both happen before this returns, unless libcurl is running (a write or
 * header callback of any transfer is on the stack): then they happen as soon as libcurl returns
 * to the transport, before the loop handles any other event, and until then x's own libcurl
 * callbacks may still run (they should check kube_xfer_closing and stop). A transfer not on the
 * multi handle is closed at once. Calling it again on a closing transfer does nothing. */
void kube_transport_close(struct kube_xfer *x, kube_xfer_close_fn closed);

/* True from kube_transport_close until the close callback ran. */
static inline bool kube_xfer_closing(const struct kube_xfer *x)
{
    return x->closed != NULL;
}

/* True while the transport is running libcurl (inside a write/header callback), when
 * kube_transport_remove is not allowed. */
bool kube_transport_in_curl(const struct kube_transport *t);

/* Number of transfers on the multi handle. */
size_t kube_transport_active(const struct kube_transport *t);

/* ev_now() when a socket last became readable (bytes or end-of-file from the server), or 0. */
double kube_transport_last_rx(const struct kube_transport *t);

/* Shuts down (shutdown(2), both directions) every socket that has not been readable since
 * `since` (an ev_now() value), so libcurl fails every transfer on those connections at once
 * and never reuses them: the end of a connection that went silent without closing. Returns how
 * many sockets it shut down. */
size_t kube_transport_shutdown_silent(struct kube_transport *t, double since);

#endif
