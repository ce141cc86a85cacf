#include "lib/kube/transport.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <ev.h>

#include "lib/util/list.h"

struct kube_transport {
    struct ev_loop *loop;
    CURLM *multi;
    ev_timer timer;
    size_t active;
    int in_curl;              /* depth of curl_multi_socket_action calls */
    double last_rx;           /* ev_now() of the last readable event on any socket */
    struct list_node socks;   /* every socket libcurl told us about */
    struct list_node closing; /* transfers closed while libcurl ran, to take off after it */
};

/* One per socket libcurl tells us about; the ev_io is embedded, freed after it is stopped. */
struct sock {
    ev_io io;
    curl_socket_t fd;
    struct kube_transport *t;
    double last_rx; /* ev_now() of its last readable event, or of its creation */
    struct list_node node;
};

struct ev_loop *kube_transport_loop(const struct kube_transport *t)
{
    return t->loop;
}

bool kube_transport_in_curl(const struct kube_transport *t)
{
    return t->in_curl > 0;
}

size_t kube_transport_active(const struct kube_transport *t)
{
    return t->active;
}

double kube_transport_last_rx(const struct kube_transport *t)
{
    return t->last_rx;
}

size_t kube_transport_shutdown_silent(struct kube_transport *t, double since)
{
    struct list_node *pos;
    size_t n = 0;

    list_foreach(pos, &t->socks) {
        struct sock *s = list_entry(pos, struct sock, node);

        if (s->last_rx >= since)
            continue;
        /* libcurl keeps the descriptor; from now on it reads end-of-file and writes fail, so
         * every transfer on the connection fails at once and the connection is not reused. */
        if (shutdown(s->fd, SHUT_RDWR) == 0)
            n++;
    }
    return n;
}

/* Hands every finished transfer to its owner. A done callback may add or remove transfers;
 * curl_multi_remove_handle drops a removed transfer's pending message, so reading the queue
 * one message at a time stays valid. */
static void check_multi_info(struct kube_transport *t)
{
    CURLMsg *msg;
    int left;

    while ((msg = curl_multi_info_read(t->multi, &left))) {
        struct kube_xfer *x = NULL;
        CURLcode rc;

        if (msg->msg != CURLMSG_DONE)
            continue;
        rc = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        curl_multi_remove_handle(t->multi, msg->easy_handle);
        /* msg is invalid from here on. */
        if (!x)
            continue;
        x->t = NULL;
        t->active--;
        x->done(x, rc);
    }
}

/* Takes off and hands back every transfer closed while libcurl ran. Their pending messages, if
 * any, go with them, so check_multi_info never sees a closed transfer. */
static void close_pending(struct kube_transport *t)
{
    while (!list_empty(&t->closing)) {
        struct kube_xfer *x = list_entry(list_first(&t->closing), struct kube_xfer, closing);

        list_remove(&x->closing);
        kube_transport_remove(x);
        x->closed(x);
    }
}

static void socket_action(struct kube_transport *t, curl_socket_t fd, int flags)
{
    int running = 0;

    t->in_curl++;
    curl_multi_socket_action(t->multi, fd, flags, &running);
    t->in_curl--;
    if (!t->in_curl)
        close_pending(t);
    check_multi_info(t);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct kube_transport *t = w->data;

    socket_action(t, CURL_SOCKET_TIMEOUT, 0);
}

/* CURLMOPT_TIMERFUNCTION: arm or disarm the one timer; never call libcurl from here. */
static int multi_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct kube_transport *t = userp;

    ev_timer_stop(t->loop, &t->timer);
    if (timeout_ms >= 0) {
        ev_timer_set(&t->timer, (double)timeout_ms / 1000.0, 0.);
        ev_timer_start(t->loop, &t->timer);
    }
    return 0;
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct sock *s = w->data;
    int flags = 0;

    if (revents & EV_READ) {
        flags |= CURL_CSELECT_IN;
        s->last_rx = s->t->last_rx = ev_now(loop);
    }
    if (revents & EV_WRITE)
        flags |= CURL_CSELECT_OUT;
    if (revents & EV_ERROR)
        flags |= CURL_CSELECT_ERR;
    socket_action(s->t, s->fd, flags);
}

/* CURLMOPT_SOCKETFUNCTION. `easy` may be an internal handle; do not look at its private. */
static int multi_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *sockp)
{
    struct kube_transport *t = userp;
    struct sock *s = sockp;
    int events = 0;

    if (what == CURL_POLL_REMOVE) {
        if (s) {
            ev_io_stop(t->loop, &s->io);
            list_remove(&s->node);
            free(s);
            curl_multi_assign(t->multi, fd, NULL);
        }
        return 0;
    }
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (!s)
            return -1;
        s->fd = fd;
        s->t = t;
        s->last_rx = ev_now(t->loop);
        list_add_head(&t->socks, &s->node);
        curl_multi_assign(t->multi, fd, s);
    } else {
        ev_io_stop(t->loop, &s->io);
    }
    if (what & CURL_POLL_IN)
        events |= EV_READ;
    if (what & CURL_POLL_OUT)
        events |= EV_WRITE;
    ev_io_init(&s->io, io_cb, fd, events);
    s->io.data = s;
    ev_io_start(t->loop, &s->io);
    return 0;
}

int kube_transport_new(struct ev_loop *loop, struct kube_transport **ret_t)
{
    struct kube_transport *t;

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return -EIO;
    t = calloc(1, sizeof(*t));
    if (!t)
        goto oom;
    t->loop = loop;
    list_init(&t->socks);
    list_init(&t->closing);
    t->multi = curl_multi_init();
    if (!t->multi)
        goto oom;
    ev_timer_init(&t->timer, timer_cb, 0., 0.);
    t->timer.data = t;
    curl_multi_setopt(t->multi, CURLMOPT_SOCKETFUNCTION, multi_socket_cb);
    curl_multi_setopt(t->multi, CURLMOPT_SOCKETDATA, t);
    curl_multi_setopt(t->multi, CURLMOPT_TIMERFUNCTION, multi_timer_cb);
    curl_multi_setopt(t->multi, CURLMOPT_TIMERDATA, t);
    curl_multi_setopt(t->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    /* libcurl keeps up to four connections for each transfer it holds, and an idle one is a TLS
     * session, its context and its buffers, some 30 KiB: the etcd calls reach one tenant's
     * member at a time and leave its connection idle, and heaptrack at N = 100 found about
     * forty alive at the creations' peak. */
    curl_multi_setopt(t->multi, CURLMOPT_MAXCONNECTS, KUBE_TRANSPORT_MAX_CONNECTS);
    *ret_t = t;
    return 0;
oom:
    free(t);
    curl_global_cleanup();
    return -ENOMEM;
}

void kube_transport_free(struct kube_transport *t)
{
    if (!t)
        return;
    close_pending(t);
    /* The socket callback may run during cleanup, so the loop and timer must still exist. */
    curl_multi_cleanup(t->multi);
    ev_timer_stop(t->loop, &t->timer);
    free(t);
    curl_global_cleanup();
}

int kube_transport_add(struct kube_transport *t, struct kube_xfer *x)
{
    CURLMcode mc;

    curl_easy_setopt(x->easy, CURLOPT_PRIVATE, (char *)x);
    /* libcurl allocates a transfer's upload buffer (64 KiB by default) when it first sends a
     * body and keeps it until the handle is freed: with dozens of creates and patches in flight
     * that was the largest heap outside the caches. Bodies are sent in pieces of this size. */
    curl_easy_setopt(x->easy, CURLOPT_UPLOAD_BUFFERSIZE, KUBE_TRANSPORT_UPLOAD_BUFFER);
    mc = curl_multi_add_handle(t->multi, x->easy);
    if (mc != CURLM_OK)
        return mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : -EIO;
    x->t = t;
    t->active++;
    return 0;
}

void kube_transport_remove(struct kube_xfer *x)
{
    struct kube_transport *t = x->t;

    if (!t)
        return;
    curl_multi_remove_handle(t->multi, x->easy);
    x->t = NULL;
    t->active--;
}

void kube_transport_close(struct kube_xfer *x, kube_xfer_close_fn closed)
{
    struct kube_transport *t = x->t;

    if (x->closed)
        return;
    x->closed = closed;
    if (t && t->in_curl) {
        list_add_tail(&t->closing, &x->closing);
        return;
    }
    kube_transport_remove(x);
    closed(x);
}
