#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ev.h>

#include "lib/kube/client.h"
#include "lib/kube/client_internal.h"
#include "lib/kube/config.h"
#include "lib/kube/transport.h"
#include "lib/util/httpd.h"

/* Closing from inside libcurl: a watch event handler that cancels a request and frees its own
 * watch, where libcurl forbids taking transfers off. Served by lib/util/httpd over plain HTTP,
 * where libcurl queues the request behind the watch on the watch's connection (PIPEWAIT): it
 * is on the multi handle, not yet sent, when the watch's two events come. */

struct fx {
    struct ev_loop *loop;
    uint64_t watch_id; /* the server's connection, 0 until the watch came */
    struct httpd *h;
    struct kube_client *c;
    struct kube_watch *w;
    struct kube_call *slow;
    int slow_done, slow_code;
    int events, ends;
    int cancel_answered_in_event; /* the slow call's done had run when cancel returned */
};

static void serve(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
    struct fx *f = userdata;

    resp->deferred = true; /* the watch is answered below, the other request never */
    if (strcmp(req->path, "/api/v1/configmaps") == 0)
        f->watch_id = req->id;
}

static void slow_done(void *userdata, const struct kube_result *res)
{
    struct fx *f = userdata;

    f->slow_done++;
    f->slow_code = res->code;
}

static void on_event(void *userdata, enum kube_watch_event_type type, cJSON *obj)
{
    struct fx *f = userdata;

    f->events++;
    assert_true(kube_transport_in_curl(kube_client_transport(f->c)));
    kube_call_cancel(f->slow);
    f->cancel_answered_in_event = f->slow_done;
    kube_watch_free(f->w);
}

static void on_end(void *userdata, int code, const char *message)
{
    struct fx *f = userdata;

    f->ends++;
}

static void test_client__closing_inside_libcurl_takes_transfers_off_at_once(void **state)
{
    struct fx f = {.loop = ev_loop_new(0)};
    struct kube_request slow = {
        .verb = KUBE_GET, .resource = &KUBE_CONFIGMAPS, .namespace_ = "default", .name = "slow"};
    struct kube_config cfg = {.namespace_ = (char *)"default", .allow_plain_http = true};
    struct kube_client_stats st;
    struct buf events;
    char server[64];
    struct err e;

    assert_int_equal(httpd_new(f.loop, "127.0.0.1:0", NULL, serve, &f, &f.h, &e), 0);
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", httpd_port(f.h));
    cfg.server = server;
    assert_int_equal(kube_client_new(f.loop, &cfg, &f.c, &e), 0);
    assert_int_equal(kube_watch_start(f.c, &KUBE_CONFIGMAPS, NULL, on_event, on_end, &f, &f.w), 0);
    while (!f.watch_id)
        ev_run(f.loop, EVRUN_ONCE);
    assert_int_equal(kube_request_start(f.c, &slow, slow_done, &f, &f.slow), 0);
    assert_int_equal(kube_transport_active(kube_client_transport(f.c)), 2);
    buf_init(&events, 0);
    buf_puts(&events, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
                      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}\n");
    assert_int_equal(httpd_complete(f.h, f.watch_id, 200, "application/json", &events), 0);
    buf_done(&events);

    while (!f.events)
        ev_run(f.loop, EVRUN_ONCE);
    /* The cancelled request was answered inside the handler; the freed watch heard no more. */
    assert_int_equal(f.cancel_answered_in_event, 1);
    assert_int_equal(f.slow_code, -ECANCELED);
    assert_int_equal(f.events, 1);
    assert_int_equal(f.ends, 0);
    /* Both transfers left libcurl as soon as it returned, before the loop went on. */
    assert_int_equal(kube_transport_active(kube_client_transport(f.c)), 0);
    kube_client_get_stats(f.c, &st);
    assert_int_equal(st.pending, 0);

    ev_run(f.loop, EVRUN_NOWAIT);
    assert_int_equal(f.events, 1);
    assert_int_equal(f.slow_done, 1);
    kube_client_free(f.c);
    httpd_free(f.h);
    ev_loop_destroy(f.loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client__closing_inside_libcurl_takes_transfers_off_at_once),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
