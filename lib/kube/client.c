#include "lib/kube/client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <ev.h>

#include "lib/kube/client_internal.h"
#include "lib/kube/config.h"
#include "lib/kube/pace.h"
#include "lib/kube/server.h"
#include "lib/kube/status.h"
#include "lib/kube/transport.h"
#include "lib/kube/wire.h"

#define DEFAULT_TIMEOUT_MS 60000L
#define DEFAULT_MAX_RETRIES 3
#define DEFAULT_MAX_WAIT 30.0
#define DEFAULT_HEALTH_IDLE 15.0
#define DEFAULT_HEALTH_TIMEOUT 10.0
/* The cheapest request every identity may make (system:public-info-viewer). */
#define HEALTH_PATH "/version"
/* The receive buffer of a request that is not a list (see call_attempt). */
#define KUBE_CLIENT_RECV_BUFFER 4096L

struct kube_client {
    struct ev_loop *loop;
    struct kube_transport *t;
    struct kube_server server;
    struct list_node calls;   /* the requests in flight */
    struct list_node handles; /* the running watches (struct kube_handle) */
    int max_retries;
    double max_wait;
    long timeout_ms;
    struct kube_client_stats stats;
    bool closing;
    /* The connection health check: after health_idle seconds without a byte from the server
     * while something is in flight, one cheap GET with a health_timeout; if it gets no answer,
     * every connection silent since it was sent is shut down (see health_cb). */
    double health_idle, health_timeout;
    ev_timer health;
    double health_since; /* when the timer was armed from idle */
    struct kube_call *probe;
    double probe_sent;
    size_t ncalls, nhandles; /* in flight, the probe not counted */
    struct kube_pacer pacer; /* the client-wide rate limit */
    unsigned long epoch;     /* connections shut down so far; a call remembers it per attempt */
    /* Requests on the wire (holding a slot) and the most there may be; the others wait in
     * slot_queue, oldest first, and slot_timer hands the slots freed to them from the loop. */
    size_t sending, max_sending;
    struct list_node slot_queue;
    ev_timer slot_timer;
    unsigned long slot_waits;
};

struct kube_call {
    struct kube_xfer x;
    struct list_node link; /* in c->calls */
    struct kube_client *c;
    kube_done_fn done;
    void *userdata;
    struct kube_wire wire; /* method, URL, body */
    long timeout_ms;
    bool is_list;
    bool is_probe;   /* the health check's own request */
    bool idempotent; /* safe to send again after its connection was found dead */
    int attempts;
    unsigned long epoch; /* the client's epoch when the current attempt started */
    bool reconnected;    /* already sent again once after a dead connection */
    struct kube_pace pace;
    struct list_node slot_link; /* in c->slot_queue while it waits for a slot */
    bool has_slot;
    bool urgent; /* needs no slot */
    struct curl_slist *headers;
    struct buf resp;
    ev_timer timer; /* retry delay */
    char retry_after[32];
    char errbuf[CURL_ERROR_SIZE];
    char msgbuf[CURL_ERROR_SIZE + 64];
};

struct ev_loop *kube_client_loop(const struct kube_client *c)
{
    return c->loop;
}

const char *kube_client_namespace(const struct kube_client *c)
{
    return c->server.cfg->namespace_ ? c->server.cfg->namespace_ : "default";
}

struct kube_transport *kube_client_transport(struct kube_client *c)
{
    return c->t;
}

struct kube_server *kube_client_server(struct kube_client *c)
{
    return &c->server;
}

struct kube_pacer *kube_client_pacer(struct kube_client *c)
{
    return &c->pacer;
}

void kube_client_set_retry(struct kube_client *c, int max_retries, double max_wait)
{
    c->max_retries = max_retries < 0 ? 0 : max_retries;
    c->max_wait = max_wait > 0 ? max_wait : DEFAULT_MAX_WAIT;
}

void kube_client_set_timeout(struct kube_client *c, long timeout_ms)
{
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
}

void kube_client_set_rate_limit(struct kube_client *c, double qps, int burst)
{
    kube_pacer_set(&c->pacer, qps, burst);
}

void kube_client_set_health_check(struct kube_client *c, double idle_seconds,
                                  double timeout_seconds)
{
    c->health_idle = idle_seconds > 0 ? idle_seconds : DEFAULT_HEALTH_IDLE;
    c->health_timeout = timeout_seconds > 0 ? timeout_seconds : DEFAULT_HEALTH_TIMEOUT;
}

void kube_client_get_stats(const struct kube_client *c, struct kube_client_stats *ret_stats)
{
    *ret_stats = c->stats;
    ret_stats->pending = c->ncalls + c->nhandles;
    ret_stats->ca_reloads = c->server.ca_reloads;
    ret_stats->ca_errors = c->server.ca_errors;
    ret_stats->throttled = c->pacer.throttled;
    ret_stats->sending = c->sending;
    ret_stats->slot_waits = c->slot_waits;
}

void kube_client_set_max_sending(struct kube_client *c, size_t n)
{
    c->max_sending = n;
    if (!list_empty(&c->slot_queue))
        ev_timer_start(c->loop, &c->slot_timer);
}

/* ---- the connection health check ---- */

static bool busy(const struct kube_client *c)
{
    return c->ncalls + c->nhandles > 0;
}

static void health_arm(struct kube_client *c, double delay)
{
    ev_timer_stop(c->loop, &c->health);
    ev_timer_set(&c->health, delay > 0.05 ? delay : 0.05, 0.);
    ev_timer_start(c->loop, &c->health);
}

/* Runs the timer while something is in flight, so an idle client leaves the loop alone. */
static void health_update(struct kube_client *c)
{
    if (busy(c) && !c->closing) {
        if (!ev_is_active(&c->health)) {
            c->health_since = ev_now(c->loop);
            health_arm(c, c->health_idle);
        }
    } else {
        ev_timer_stop(c->loop, &c->health);
    }
}

static int probe_start(struct kube_client *c);
static void slot_cb(struct ev_loop *loop, ev_timer *w, int revents);

static void health_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct kube_client *c = w->data;
    double last = kube_transport_last_rx(c->t), silent;

    if (!busy(c))
        return;
    if (last < c->health_since)
        last = c->health_since;
    silent = ev_now(loop) - last;
    if (!c->probe && silent >= c->health_idle && probe_start(c) == 0)
        silent = 0;
    health_arm(c, c->probe ? c->health_idle : c->health_idle - silent);
}

void kube_client_handle_init(struct kube_handle *h, void (*cancel)(struct kube_handle *h))
{
    list_init(&h->link);
    h->cancel = cancel;
}

void kube_client_handle_add(struct kube_client *c, struct kube_handle *h)
{
    list_add_tail(&c->handles, &h->link);
    c->nhandles++;
    health_update(c);
}

void kube_client_handle_remove(struct kube_client *c, struct kube_handle *h)
{
    if (!list_linked(&h->link))
        return;
    list_remove(&h->link);
    c->nhandles--;
    health_update(c);
}

void kube_client_count_watch(struct kube_client *c)
{
    c->stats.watches++;
    c->stats.requests++;
}

int kube_client_new(struct ev_loop *loop, const struct kube_config *cfg,
                    struct kube_client **ret_client, struct err *e)
{
    struct kube_client *c;
    int r;

    c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->loop = loop;
    list_init(&c->calls);
    list_init(&c->handles);
    c->max_retries = DEFAULT_MAX_RETRIES;
    c->max_wait = DEFAULT_MAX_WAIT;
    c->timeout_ms = DEFAULT_TIMEOUT_MS;
    c->health_idle = DEFAULT_HEALTH_IDLE;
    c->health_timeout = DEFAULT_HEALTH_TIMEOUT;
    ev_timer_init(&c->health, health_cb, 0., 0.);
    c->health.data = c;
    kube_pacer_init(&c->pacer, loop);
    c->max_sending = KUBE_CLIENT_MAX_SENDING;
    list_init(&c->slot_queue);
    ev_timer_init(&c->slot_timer, slot_cb, 0., 0.);
    c->slot_timer.data = c;
    r = kube_server_init(&c->server, cfg, e);
    if (r < 0)
        goto fail;
    r = kube_transport_new(loop, &c->t);
    if (r < 0) {
        err_set(e, r, "kube client: cannot set up libcurl");
        goto fail;
    }
    *ret_client = c;
    return 0;
fail:
    kube_server_done(&c->server);
    free(c);
    return r;
}

/* ---- requests ---- */

static void call_free(struct kube_call *k)
{
    if (k->x.easy)
        curl_easy_cleanup(k->x.easy);
    curl_slist_free_all(k->headers);
    buf_done(&k->resp);
    kube_wire_done(&k->wire);
    free(k);
}

static void call_link(struct kube_call *k)
{
    list_add_tail(&k->c->calls, &k->link);
    if (!k->is_probe) {
        k->c->ncalls++;
        health_update(k->c);
    }
}

/* Gives k's slot, if it holds one, to the request that has waited longest, from the loop. */
static void slot_release(struct kube_call *k)
{
    struct kube_client *c = k->c;

    if (list_linked(&k->slot_link))
        list_remove(&k->slot_link);
    if (!k->has_slot)
        return;
    k->has_slot = false;
    c->sending--;
    if (!list_empty(&c->slot_queue) && !c->closing)
        ev_timer_start(c->loop, &c->slot_timer);
}

static void call_unlink(struct kube_call *k)
{
    kube_pace_cancel(&k->pace);
    slot_release(k);
    if (!list_linked(&k->link))
        return;
    list_remove(&k->link);
    if (!k->is_probe) {
        k->c->ncalls--;
        health_update(k->c);
    }
}

/* Delivers the result once and frees the call. */
static void call_finish(struct kube_call *k, const struct kube_result *res)
{
    call_unlink(k);
    ev_timer_stop(k->c->loop, &k->timer);
    k->done(k->userdata, res);
    call_free(k);
}

static void call_fail(struct kube_call *k, int code, const char *message)
{
    struct kube_result res = {.code = code, .message = message};

    call_finish(k, &res);
}

static size_t call_write(char *p, size_t size, size_t n, void *userdata)
{
    struct kube_call *k = userdata;

    if (buf_append(&k->resp, p, size * n) < 0)
        return 0;
    return size * n;
}

static size_t call_header(char *p, size_t size, size_t n, void *userdata)
{
    struct kube_call *k = userdata;
    size_t len = size * n, vlen;
    static const char name[] = "retry-after:";

    if (len > sizeof(name) - 1 && strncasecmp(p, name, sizeof(name) - 1) == 0) {
        const char *v = p + sizeof(name) - 1;

        vlen = len - (sizeof(name) - 1);
        while (vlen && (*v == ' ' || *v == '\t')) {
            v++;
            vlen--;
        }
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
            vlen--;
        if (vlen < sizeof(k->retry_after)) {
            memcpy(k->retry_after, v, vlen);
            k->retry_after[vlen] = '\0';
        }
    }
    return len;
}

static void call_done(struct kube_xfer *x, CURLcode rc);
static int call_send(struct kube_call *k);
static int call_go(struct kube_call *k);
static void call_fail(struct kube_call *k, int code, const char *message);

/* Starts (or restarts) the HTTP exchange, when the rate limit lets it. Returns 0 or a
 * negative code. */
static int call_attempt(struct kube_call *k)
{
    struct kube_client *c = k->c;
    CURL *easy = k->x.easy;
    int r;

    curl_easy_reset(easy);
    curl_slist_free_all(k->headers);
    k->headers = NULL;
    buf_reset(&k->resp);
    k->retry_after[0] = '\0';
    k->errbuf[0] = '\0';
    r = kube_server_setup_easy(&c->server, easy, k->wire.content_type, &k->headers);
    if (r < 0)
        return r;
    curl_easy_setopt(easy, CURLOPT_URL, k->wire.url);
    if (strcmp(k->wire.method, "GET") == 0)
        curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    else if (strcmp(k->wire.method, "POST") != 0)
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, k->wire.method);
    if (k->wire.body) {
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)k->wire.body_len);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, k->wire.body);
    }
    /* libcurl's receive buffer, one per transfer while it is in flight, is 16 KiB by default:
     * with sixty requests in flight at the peak of N = 100 creations, a megabyte. An answer
     * to anything but a list is one object or a Status, a few KiB, read in pieces this size. */
    curl_easy_setopt(easy, CURLOPT_BUFFERSIZE,
                     k->is_list ? (long)CURL_MAX_WRITE_SIZE : KUBE_CLIENT_RECV_BUFFER);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, call_write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, k);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, call_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, k);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, k->errbuf);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, k->timeout_ms);
    k->x.done = call_done;
    return call_go(k);
}

/* Sends k once it holds a slot and then a token of the rate limit (the probe needs neither):
 * at once, or from slot_cb or call_paced when its turn comes. */
static int call_go(struct kube_call *k)
{
    struct kube_client *c = k->c;

    if (k->is_probe)
        return call_send(k);
    if (!k->has_slot && !k->urgent) {
        if (c->max_sending && c->sending >= c->max_sending) {
            if (!list_linked(&k->slot_link)) {
                list_add_tail(&c->slot_queue, &k->slot_link);
                c->slot_waits++;
            }
            return 0;
        }
        k->has_slot = true;
        c->sending++;
    }
    if (!kube_pacer_take(&c->pacer, &k->pace))
        return 0;
    return call_send(k);
}

static void call_paced(struct kube_pace *p)
{
    struct kube_call *k = kube_container_of(p, struct kube_call, pace);
    int r = call_send(k);

    if (r < 0)
        call_fail(k, r, "cannot send the request");
}

/* Hands the prepared transfer to libcurl. */
static int call_send(struct kube_call *k)
{
    struct kube_client *c = k->c;
    int r;

    r = kube_transport_add(c->t, &k->x);
    if (r < 0)
        return r;
    k->attempts++;
    k->epoch = c->epoch;
    if (k->is_probe) {
        c->stats.health_checks++;
        return 0;
    }
    c->stats.requests++;
    if (k->is_list)
        c->stats.lists++;
    return 0;
}

static void slot_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct kube_client *c = w->data;

    while (!list_empty(&c->slot_queue) && (!c->max_sending || c->sending < c->max_sending)) {
        struct kube_call *k = list_entry(list_first(&c->slot_queue), struct kube_call, slot_link);
        int r;

        list_remove(&k->slot_link);
        r = call_go(k);
        if (r < 0)
            call_fail(k, r, "cannot send the request");
    }
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct kube_call *k = w->data;
    int r;

    k->c->stats.retries++;
    r = call_attempt(k);
    if (r < 0)
        call_fail(k, r, "cannot restart the request");
}

static void call_done(struct kube_xfer *x, CURLcode rc)
{
    struct kube_call *k = kube_container_of(x, struct kube_call, x);
    struct kube_client *c = k->c;
    struct kube_result res = {.message = ""};
    cJSON *body = NULL;
    const char *m;

    if (rc != CURLE_OK && k->epoch != c->epoch && k->idempotent && !k->reconnected && !c->closing) {
        /* The health check shut this request's connection down as dead: send it once more,
         * on a new connection. */
        k->reconnected = true;
        c->stats.reconnect_retries++;
        if (call_attempt(k) == 0)
            return;
    }
    if (rc != CURLE_OK) {
        if (rc == CURLE_WRITE_ERROR && k->resp.len + CURL_MAX_WRITE_SIZE > KUBE_BODY_MAX)
            res.code = -EFBIG;
        else
            res.code = kube_curl_code(rc);
        snprintf(k->msgbuf, sizeof(k->msgbuf), "%s",
                 res.code == -EFBIG ? "response body larger than its cap"
                 : k->errbuf[0]     ? k->errbuf
                                    : curl_easy_strerror(rc));
        res.message = k->msgbuf;
        call_finish(k, &res);
        return;
    }
    curl_easy_getinfo(k->x.easy, CURLINFO_RESPONSE_CODE, &res.http_status);
    if (k->resp.len)
        body = cJSON_ParseWithLength(k->resp.data, k->resp.len);
    res.code = kube_status_code(res.http_status, body);
    if (k->resp.len && !body && res.code == 0)
        res.code = -EIO;
    m = kube_status_message(body);
    if (m) {
        res.message = m;
    } else if (res.code) {
        snprintf(k->msgbuf, sizeof(k->msgbuf), "HTTP %ld%s", res.http_status,
                 k->resp.len && !body ? ": response is not JSON" : "");
        res.message = k->msgbuf;
    }
    if (res.http_status == 429 || res.http_status == 503)
        res.retry_after = kube_status_retry_after(res.http_status, k->retry_after, body);
    res.body = body;
    if (res.code == -EAGAIN && res.retry_after > 0 && k->attempts <= c->max_retries &&
        !c->closing && !k->is_probe) {
        double wait = res.retry_after < c->max_wait ? res.retry_after : c->max_wait;

        cJSON_Delete(body);
        ev_timer_init(&k->timer, retry_cb, wait, 0.);
        k->timer.data = k;
        ev_timer_start(c->loop, &k->timer);
        return;
    }
    call_finish(k, &res);
    cJSON_Delete(body);
}

int kube_request_start(struct kube_client *c, const struct kube_request *req, kube_done_fn done,
                       void *userdata, struct kube_call **ret_call)
{
    struct kube_call *k;
    int r;

    if (c->closing)
        return -ECANCELED;
    k = calloc(1, sizeof(*k));
    if (!k)
        return -ENOMEM;
    k->c = c;
    k->done = done;
    k->userdata = userdata;
    k->timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : c->timeout_ms;
    k->is_list = req->verb == KUBE_LIST;
    k->urgent = req->urgent;
    list_init(&k->link);
    list_init(&k->slot_link);
    kube_pace_init(&k->pace, call_paced);
    buf_init(&k->resp, KUBE_BODY_MAX);
    ev_timer_init(&k->timer, retry_cb, 0., 0.);
    k->timer.data = k;
    r = kube_wire_build(&k->wire, &c->server, req);
    if (r < 0)
        goto fail;
    k->x.easy = curl_easy_init();
    if (!k->x.easy) {
        r = -ENOMEM;
        goto fail;
    }
    k->idempotent = req->verb != KUBE_CREATE;
    r = call_attempt(k);
    if (r < 0)
        goto fail;
    call_link(k);
    if (ret_call)
        *ret_call = k;
    return 0;
fail:
    call_free(k);
    return r;
}

static void probe_done(void *userdata, const struct kube_result *res)
{
    struct kube_client *c = userdata;
    size_t n;

    c->probe = NULL;
    if (res->http_status != 0 || res->code == -ECANCELED)
        return; /* the server answered: the connection lives */
    /* No answer within the timeout (or no connection at all): every connection that stayed
     * silent since the probe was sent is dead. Their transfers fail now; requests are sent
     * again on a new connection, watches end and their owners resume them. */
    n = kube_transport_shutdown_silent(c->t, c->probe_sent);
    if (n) {
        c->epoch++;
        c->stats.dead_connections += n;
    }
}

/* Sends the health check's GET; it is not retried and does not count as work in flight. */
static int probe_start(struct kube_client *c)
{
    struct kube_call *k = calloc(1, sizeof(*k));
    struct buf url;
    int r = -ENOMEM;

    if (!k)
        return -ENOMEM;
    buf_init(&url, 0);
    k->c = c;
    k->done = probe_done;
    k->userdata = c;
    k->is_probe = true;
    k->wire.method = "GET";
    k->timeout_ms = (long)(c->health_timeout * 1000);
    list_init(&k->link);
    list_init(&k->slot_link);
    kube_pace_init(&k->pace, call_paced);
    buf_init(&k->resp, 1u << 20);
    ev_timer_init(&k->timer, retry_cb, 0., 0.);
    k->timer.data = k;
    if (buf_printf(&url, "%s%s", c->server.cfg->server, HEALTH_PATH) < 0 ||
        !(k->wire.url = buf_steal(&url)) || !(k->x.easy = curl_easy_init()))
        goto fail;
    r = call_attempt(k);
    if (r < 0)
        goto fail;
    call_link(k);
    c->probe = k;
    c->probe_sent = ev_now(c->loop);
    return 0;
fail:
    buf_done(&url);
    call_free(k);
    return r;
}

int kube_request_send(struct kube_client *c, const struct kube_request *req, kube_done_fn done,
                      void *userdata)
{
    return kube_request_start(c, req, done, userdata, NULL);
}

static void call_closed(struct kube_xfer *x)
{
    call_free(kube_container_of(x, struct kube_call, x));
}

void kube_call_cancel(struct kube_call *k)
{
    struct kube_result res = {.code = -ECANCELED, .message = "cancelled"};

    if (kube_xfer_closing(&k->x))
        return; /* cancelled already, and its transfer not yet taken off */
    ev_timer_stop(k->c->loop, &k->timer);
    call_unlink(k);
    k->done(k->userdata, &res);
    kube_transport_close(&k->x, call_closed);
}

void kube_client_free(struct kube_client *c)
{
    if (!c)
        return;
    c->closing = true;
    ev_timer_stop(c->loop, &c->health);
    ev_timer_stop(c->loop, &c->slot_timer);
    kube_pacer_done(&c->pacer);
    while (!list_empty(&c->calls))
        kube_call_cancel(list_entry(list_first(&c->calls), struct kube_call, link));
    while (!list_empty(&c->handles)) {
        struct kube_handle *h = list_entry(list_first(&c->handles), struct kube_handle, link);

        list_remove(&h->link);
        h->cancel(h);
    }
    kube_transport_free(c->t);
    kube_server_done(&c->server);
    free(c);
}

/* ---- the synchronous helper ---- */

struct sync_state {
    bool done;
    int code;
    cJSON *body;
    char message[ERR_MSG_MAX];
};

static void sync_done(void *userdata, const struct kube_result *res)
{
    struct sync_state *s = userdata;

    s->done = true;
    s->code = res->code;
    snprintf(s->message, sizeof(s->message), "%s", res->message);
    if (res->body)
        s->body = cJSON_Duplicate(res->body, 1);
}

int kube_request_sync(struct kube_client *c, const struct kube_request *req, cJSON **ret_body,
                      struct err *e)
{
    struct sync_state s = {0};
    int r;

    r = kube_request_send(c, req, sync_done, &s);
    if (r < 0)
        return err_set(e, r, "cannot send the request");
    while (!s.done)
        ev_run(c->loop, EVRUN_ONCE);
    if (s.code < 0)
        err_set(e, s.code, "%s", s.message);
    if (s.code == 0 && ret_body) {
        *ret_body = s.body;
        s.body = NULL;
    }
    cJSON_Delete(s.body);
    return s.code;
}
