#include "lib/kube/watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kube/client.h"
#include "lib/kube/client_internal.h"
#include "lib/kube/pace.h"
#include "lib/kube/server.h"
#include "lib/kube/status.h"
#include "lib/kube/transport.h"

#define WATCH_ERROR_BODY_MAX (1u << 20)
#define DEFAULT_SERVER_TIMEOUT 1800L
#define IDLE_GRACE_SECONDS 60L
/* The API server sends a bookmark about once a minute (and 2 s before timeoutSeconds) when
 * the resource's resourceVersion moved; 90 s without one is a stream to give up on. */
#define BOOKMARK_IDLE_SECONDS 90L

/* ---- decoder ---- */

void kube_watch_decoder_init(struct kube_watch_decoder *d, size_t max_line)
{
    buf_init(&d->line, 0);
    d->max_line = max_line ? max_line : KUBE_WATCH_LINE_MAX;
    d->lines = 0;
    d->skipped = 0;
}

void kube_watch_decoder_done(struct kube_watch_decoder *d)
{
    buf_done(&d->line);
}

/* Returns the callback's code, or 1 when the line is not an event and was skipped. */
static int decode_line(struct kube_watch_decoder *d, const char *p, size_t len,
                       kube_watch_decoded_fn fn, void *userdata)
{
    cJSON *ev, *type, *obj;
    int r;

    while (len && (p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    if (len == 0)
        return 0;
    d->lines++;
    ev = cJSON_ParseWithLength(p, len);
    if (!ev)
        return 1;
    type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    if (!cJSON_IsString(type) || !cJSON_IsObject(obj)) {
        cJSON_Delete(ev);
        return 1;
    }
    r = fn(userdata, type->valuestring, obj, ev);
    cJSON_Delete(ev);
    return r;
}

int kube_watch_decoder_feed(struct kube_watch_decoder *d, const char *data, size_t len,
                            kube_watch_decoded_fn fn, void *userdata)
{
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        int r;

        if (d->line.len + take > d->max_line)
            return -EMSGSIZE;
        if (!nl) {
            return buf_append(&d->line, data, take);
        }
        if (d->line.len == 0) {
            /* The whole line is in this chunk: decode it in place. */
            r = decode_line(d, data, take, fn, userdata);
        } else {
            r = buf_append(&d->line, data, take);
            if (r == 0)
                r = decode_line(d, d->line.data, d->line.len, fn, userdata);
            buf_reset(&d->line);
        }
        if (r == 1) {
            d->skipped++;
            r = 0;
        }
        if (r < 0)
            return r;
        data += take + 1;
        len -= take + 1;
    }
    return 0;
}

/* ---- the watch ---- */

struct kube_watch {
    struct kube_xfer x;
    struct kube_handle handle; /* in the client's handles while running */
    struct kube_client *c;     /* NULL once the client is gone */
    struct curl_slist *headers;
    char *url;
    struct kube_watch_decoder dec;
    struct buf errbody; /* the body of a non-200 answer */
    kube_watch_event_fn on_event;
    kube_watch_end_fn on_end;
    void *userdata;
    cJSON *cur_event, *cur_obj; /* during on_event */
    unsigned long events;
    unsigned long unknown; /* events of a type this client does not know, skipped */
    int end_code;
    struct kube_pace pace;
    char end_msg[256];
    char errbuf[CURL_ERROR_SIZE];
};

unsigned long kube_watch_events(const struct kube_watch *w)
{
    return w->events;
}

unsigned long kube_watch_skipped(const struct kube_watch *w)
{
    return w->dec.skipped + w->unknown;
}

cJSON *kube_watch_steal_object(struct kube_watch *w)
{
    cJSON *obj = w->cur_obj;

    if (!obj)
        return NULL;
    w->cur_obj = NULL;
    return cJSON_DetachItemViaPointer(w->cur_event, obj);
}

/* Frees a watch that is off the transport, the client's handles and the rate limit queue. */
static void watch_destroy(struct kube_watch *w)
{
    if (w->x.easy)
        curl_easy_cleanup(w->x.easy);
    curl_slist_free_all(w->headers);
    kube_watch_decoder_done(&w->dec);
    buf_done(&w->errbody);
    free(w->url);
    free(w);
}

static void watch_closed(struct kube_xfer *x)
{
    watch_destroy(kube_container_of(x, struct kube_watch, x));
}

void kube_watch_free(struct kube_watch *w)
{
    if (!w || kube_xfer_closing(&w->x))
        return;
    kube_pace_cancel(&w->pace);
    if (w->c)
        kube_client_handle_remove(w->c, &w->handle);
    kube_transport_close(&w->x, watch_closed);
}

/* Calls on_end, which may free w: nothing of w is touched after it, and the message it gets is
 * a copy, valid for the whole callback. */
static void watch_end(struct kube_watch *w, int code, const char *message)
{
    char msg[sizeof(w->end_msg)];

    snprintf(msg, sizeof(msg), "%s", message);
    w->on_end(w->userdata, code, msg);
}

static int set_end(struct kube_watch *w, int code, const char *message)
{
    if (!w->end_code) {
        w->end_code = code;
        snprintf(w->end_msg, sizeof(w->end_msg), "%s", message);
    }
    return code;
}

static int on_decoded(void *userdata, const char *type, cJSON *object, cJSON *event)
{
    struct kube_watch *w = userdata;
    enum kube_watch_event_type t;

    if (strcmp(type, "ADDED") == 0)
        t = KUBE_WATCH_ADDED;
    else if (strcmp(type, "MODIFIED") == 0)
        t = KUBE_WATCH_MODIFIED;
    else if (strcmp(type, "DELETED") == 0)
        t = KUBE_WATCH_DELETED;
    else if (strcmp(type, "BOOKMARK") == 0)
        t = KUBE_WATCH_BOOKMARK;
    else if (strcmp(type, "ERROR") == 0) {
        const char *m = kube_status_message(object);
        int code = kube_status_code(0, object);

        return set_end(w, code ? code : -EIO, m ? m : "watch ERROR event");
    } else {
        w->unknown++;
        return 0; /* unknown types are skipped, as client-go does */
    }
    w->cur_event = event;
    w->cur_obj = object;
    w->events++;
    w->on_event(w->userdata, t, object);
    w->cur_event = w->cur_obj = NULL;
    return kube_xfer_closing(&w->x) ? -ECANCELED : 0;
}

static size_t watch_write(char *p, size_t size, size_t n, void *userdata)
{
    struct kube_watch *w = userdata;
    size_t len = size * n;
    long status = 0;
    int r;

    if (kube_xfer_closing(&w->x) || w->end_code)
        return 0;
    curl_easy_getinfo(w->x.easy, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200)
        return buf_append(&w->errbody, p, len) < 0 ? 0 : len;
    r = kube_watch_decoder_feed(&w->dec, p, len, on_decoded, w);
    if (r == -EMSGSIZE) {
        char m[64];

        snprintf(m, sizeof(m), "watch event line longer than %zu bytes", w->dec.max_line);
        set_end(w, r, m);
    } else if (r < 0) {
        set_end(w, r, "watch stream stopped");
    }
    return r < 0 ? 0 : len;
}

static void watch_done(struct kube_xfer *x, CURLcode rc)
{
    struct kube_watch *w = kube_container_of(x, struct kube_watch, x);
    long status = 0;
    int code = 0;
    const char *msg = "watch closed by the server";
    cJSON *body = NULL;

    kube_client_handle_remove(w->c, &w->handle);
    curl_easy_getinfo(w->x.easy, CURLINFO_RESPONSE_CODE, &status);
    if (w->end_code) {
        code = w->end_code;
        msg = w->end_msg;
    } else if (rc != CURLE_OK) {
        code = kube_curl_code(rc);
        msg = w->errbuf[0] ? w->errbuf : curl_easy_strerror(rc);
    } else if (status != 200) {
        const char *m;

        body = cJSON_ParseWithLength(w->errbody.data ? w->errbody.data : "", w->errbody.len);
        code = kube_status_code(status, body);
        if (code == 0)
            code = -EIO;
        m = kube_status_message(body);
        snprintf(w->end_msg, sizeof(w->end_msg), "HTTP %ld%s%s", status, m ? ": " : "", m ? m : "");
        msg = w->end_msg;
    }
    watch_end(w, code, msg);
    cJSON_Delete(body);
}

/* The client is going away (and has taken the handle off its list). */
static void watch_cancel(struct kube_handle *h)
{
    struct kube_watch *w = kube_container_of(h, struct kube_watch, handle);

    kube_pace_cancel(&w->pace);
    kube_transport_remove(&w->x);
    w->c = NULL;
    watch_end(w, -ECANCELED, "client closed");
}

/* Its turn under the client's rate limit came. */
static void watch_paced(struct kube_pace *p)
{
    struct kube_watch *w = kube_container_of(p, struct kube_watch, pace);
    int r = kube_transport_add(kube_client_transport(w->c), &w->x);

    if (r < 0) {
        kube_client_handle_remove(w->c, &w->handle);
        watch_end(w, r, "cannot start the watch");
    }
}

int kube_watch_start(struct kube_client *c, const struct kube_resource *res,
                     const struct kube_watch_opts *opts, kube_watch_event_fn on_event,
                     kube_watch_end_fn on_end, void *userdata, struct kube_watch **ret_watch)
{
    static const struct kube_watch_opts none = {0};
    struct kube_watch *w;
    struct buf q, url;
    long idle;
    char num[32];
    int r = -ENOMEM;

    if (!opts)
        opts = &none;
    if (!res || !on_event || !on_end)
        return -EINVAL;
    w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->c = c;
    w->on_event = on_event;
    w->on_end = on_end;
    w->userdata = userdata;
    kube_client_handle_init(&w->handle, watch_cancel);
    kube_pace_init(&w->pace, watch_paced);
    kube_watch_decoder_init(&w->dec, opts->max_line);
    buf_init(&w->errbody, WATCH_ERROR_BODY_MAX);
    buf_init(&q, 0);
    buf_init(&url, 0);
    if (kube_query_add(&q, "watch", "1") < 0 ||
        (opts->allow_bookmarks && kube_query_add(&q, "allowWatchBookmarks", "true") < 0) ||
        (opts->label_selector && kube_query_add(&q, "labelSelector", opts->label_selector) < 0) ||
        (opts->field_selector && kube_query_add(&q, "fieldSelector", opts->field_selector) < 0) ||
        (opts->resource_version &&
         kube_query_add(&q, "resourceVersion", opts->resource_version) < 0))
        goto fail;
    if (opts->timeout_seconds > 0) {
        snprintf(num, sizeof(num), "%ld", opts->timeout_seconds);
        if (kube_query_add(&q, "timeoutSeconds", num) < 0)
            goto fail;
    }
    if (kube_server_url(kube_client_server(c), res, opts->namespace_, NULL, NULL, &q, &url) < 0)
        goto fail;
    w->url = buf_steal(&url);
    w->x.easy = curl_easy_init();
    if (!w->url || !w->x.easy)
        goto fail;
    r = kube_server_setup_easy(kube_client_server(c), w->x.easy, NULL, &w->headers);
    if (r < 0)
        goto fail;
    if (opts->idle_timeout_seconds > 0)
        idle = opts->idle_timeout_seconds;
    else if (opts->allow_bookmarks)
        idle = BOOKMARK_IDLE_SECONDS;
    else
        idle = (opts->timeout_seconds > 0 ? opts->timeout_seconds : DEFAULT_SERVER_TIMEOUT) +
               IDLE_GRACE_SECONDS;
    curl_easy_setopt(w->x.easy, CURLOPT_URL, w->url);
    curl_easy_setopt(w->x.easy, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(w->x.easy, CURLOPT_WRITEFUNCTION, watch_write);
    curl_easy_setopt(w->x.easy, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(w->x.easy, CURLOPT_ERRORBUFFER, w->errbuf);
    curl_easy_setopt(w->x.easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(w->x.easy, CURLOPT_LOW_SPEED_TIME, idle);
    w->x.done = watch_done;
    if (kube_pacer_take(kube_client_pacer(c), &w->pace)) {
        r = kube_transport_add(kube_client_transport(c), &w->x);
        if (r < 0)
            goto fail;
    }
    kube_client_handle_add(c, &w->handle);
    kube_client_count_watch(c);
    buf_done(&q);
    *ret_watch = w;
    return 0;
fail:
    buf_done(&q);
    buf_done(&url);
    watch_destroy(w);
    return r;
}
