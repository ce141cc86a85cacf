#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>

#include "lib/kube/client.h"
#include "lib/kube/config.h"
#include "lib/kube/status.h"
#include "lib/kube/transport.h"

static cJSON *status(const char *reason, int code)
{
    cJSON *s = cJSON_CreateObject();

    cJSON_AddStringToObject(s, "kind", "Status");
    cJSON_AddStringToObject(s, "apiVersion", "v1");
    cJSON_AddStringToObject(s, "status", "Failure");
    if (reason)
        cJSON_AddStringToObject(s, "reason", reason);
    cJSON_AddStringToObject(s, "message", "the server said so");
    cJSON_AddNumberToObject(s, "code", code);
    return s;
}

static void test_client_errors__http_status_and_reason_map_to_codes(void **state)
{
    static const struct {
        long http;
        const char *reason;
        int code;
    } cases[] = {
        {200, NULL, 0},
        {201, NULL, 0},
        {404, "NotFound", -ENOENT},
        {409, "AlreadyExists", -EEXIST},
        {409, "Conflict", -EBUSY},
        {409, NULL, -EBUSY},
        {410, "Expired", -ESTALE},
        {410, "Gone", -ESTALE},
        {400, "BadRequest", -EINVAL},
        {422, "Invalid", -EINVAL},
        {401, "Unauthorized", -EACCES},
        {403, "Forbidden", -EPERM},
        {429, "TooManyRequests", -EAGAIN},
        {500, "InternalError", -EIO},
        {503, "ServiceUnavailable", -EIO},
        {415, "UnsupportedMediaType", -EINVAL},
        {302, NULL, -EIO},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *s = status(cases[i].reason, (int)cases[i].http);

        assert_int_equal(kube_status_code(cases[i].http, s), cases[i].code);
        /* Without a body the HTTP status alone decides. */
        if (cases[i].reason && strcmp(cases[i].reason, "AlreadyExists") != 0)
            assert_int_equal(kube_status_code(cases[i].http, NULL), cases[i].code);
        /* The same Status inside a watch ERROR event (no HTTP status) maps the same. */
        assert_int_equal(kube_status_code(0, s), cases[i].code);
        cJSON_Delete(s);
    }
}

static void test_client_errors__too_large_resource_version_maps_to_erange(void **state)
{
    /* What kube-apiserver's watch cache answers when asked for a resourceVersion it has not
     * reached within 3 s (storage.NewTooLargeResourceVersionError). */
    cJSON *s = cJSON_Parse(
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"Timeout: Too large resource version: 9999999, current: 1234\","
        "\"reason\":\"Timeout\",\"details\":{\"causes\":[{\"reason\":"
        "\"ResourceVersionTooLarge\",\"message\":\"Too large resource version\"}],"
        "\"retryAfterSeconds\":1},\"code\":504}");
    /* Servers before 1.18.6: a Timeout with the message only. */
    cJSON *old = cJSON_Parse("{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Timeout\","
                             "\"message\":\"Too large resource version: 9, current: 2\","
                             "\"code\":504}");
    cJSON *timeout = cJSON_Parse("{\"kind\":\"Status\",\"reason\":\"Timeout\",\"message\":"
                                 "\"request did not complete within 60s\",\"code\":504}");

    assert_int_equal(kube_status_code(504, s), -ERANGE);
    assert_int_equal(kube_status_code(0, s), -ERANGE); /* as a watch ERROR event */
    assert_int_equal(kube_status_code(504, old), -ERANGE);
    assert_int_equal(kube_status_code(504, timeout), -EIO);
    assert_int_equal(kube_status_code(504, NULL), -EIO);
    cJSON_Delete(s);
    cJSON_Delete(old);
    cJSON_Delete(timeout);
}

static void test_client_errors__invalid_keeps_server_message(void **state)
{
    cJSON *s = cJSON_Parse(
        "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Invalid\",\"code\":422,"
        "\"message\":\"ConfigMap \\\"Bad_Name\\\" is invalid: metadata.name: Invalid value\"}");

    assert_int_equal(kube_status_code(422, s), -EINVAL);
    assert_string_equal(kube_status_message(s),
                        "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value");
    /* A body that is not a Status has no message. */
    assert_null(kube_status_message(cJSON_GetObjectItem(s, "code")));
    cJSON_Delete(s);
}

static void test_client_errors__retry_after(void **state)
{
    cJSON *s = cJSON_Parse("{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"code\":429,"
                           "\"details\":{\"retryAfterSeconds\":3}}");

    assert_true(kube_status_retry_after(429, "2", s) == 2.0);
    assert_true(kube_status_retry_after(429, NULL, s) == 3.0);
    assert_true(kube_status_retry_after(429, "Wed, 21 Oct 2015 07:28:00 GMT", NULL) == 1.0);
    assert_true(kube_status_retry_after(429, NULL, NULL) == 0.0);
    assert_true(kube_status_retry_after(429, "9999999", NULL) == 1.0);
    cJSON_Delete(s);
}

static void test_client_errors__curl_failures(void **state)
{
    assert_int_equal(kube_curl_code(CURLE_OK), 0);
    assert_int_equal(kube_curl_code(CURLE_OPERATION_TIMEDOUT), -ETIMEDOUT);
    assert_int_equal(kube_curl_code(CURLE_COULDNT_CONNECT), -ECONNREFUSED);
    assert_int_equal(kube_curl_code(CURLE_RECV_ERROR), -ECONNRESET);
    assert_int_equal(kube_curl_code(CURLE_HTTP2_STREAM), -ECONNRESET);
    assert_int_equal(kube_curl_code(CURLE_PEER_FAILED_VERIFICATION), -EIO);
}

static struct kube_config plain_cfg(const char *server)
{
    struct kube_config cfg = {0};

    cfg.server = (char *)server;
    cfg.namespace_ = (char *)"default";
    return cfg;
}

static void test_client_errors__plain_http_refused_outside_tests(void **state)
{
    struct ev_loop *loop = ev_loop_new(0);
    struct kube_config cfg = plain_cfg("http://127.0.0.1:1");
    struct kube_client *c = NULL;
    struct err e;

    assert_int_equal(kube_client_new(loop, &cfg, &c, &e), -EINVAL);
    assert_string_equal(e.msg,
                        "kube client: server http://127.0.0.1:1: only https:// is supported");
    /* The test-only switch still refuses anything but loopback. */
    cfg.allow_plain_http = true;
    cfg.server = (char *)"http://10.0.0.1:80";
    assert_int_equal(kube_client_new(loop, &cfg, &c, &e), -EINVAL);
    cfg.server = (char *)"http://127.0.0.1:1";
    assert_int_equal(kube_client_new(loop, &cfg, &c, &e), 0);
    kube_client_free(c);
    ev_loop_destroy(loop);
}

struct outcome {
    int calls;
    int code;
    long http;
    char message[256];
};

static void record(void *userdata, const struct kube_result *res)
{
    struct outcome *o = userdata;

    o->calls++;
    o->code = res->code;
    o->http = res->http_status;
    assert_non_null(res->message);
    snprintf(o->message, sizeof(o->message), "%s", res->message);
}

/* A loopback port with nothing listening. */
static int closed_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_client_errors__refused_connection_and_bad_requests(void **state)
{
    struct ev_loop *loop = ev_loop_new(0);
    char server[64];
    struct kube_config cfg;
    struct kube_client *c = NULL;
    struct kube_request req = {
        .verb = KUBE_GET, .resource = &KUBE_CONFIGMAPS, .namespace_ = "default", .name = "x"};
    struct outcome o = {0};
    struct kube_client_stats st;
    cJSON *patch = cJSON_CreateObject();
    struct err e;

    snprintf(server, sizeof(server), "http://127.0.0.1:%d", closed_port());
    cfg = plain_cfg(server);
    cfg.allow_plain_http = true;
    assert_int_equal(kube_client_new(loop, &cfg, &c, &e), 0);
    assert_string_equal(kube_client_namespace(c), "default");

    assert_int_equal(kube_request_send(c, &req, record, &o), 0);
    while (!o.calls)
        ev_run(loop, EVRUN_ONCE);
    assert_int_equal(o.calls, 1);
    assert_int_equal(o.code, -ECONNREFUSED);
    assert_int_equal(o.http, 0);
    assert_true(strlen(o.message) > 0);

    assert_int_equal(kube_request_sync(c, &req, NULL, &e), -ECONNREFUSED);
    assert_int_equal(e.code, -ECONNREFUSED);

    /* Requests that cannot be right are refused before anything is sent. */
    req.namespace_ = NULL;
    assert_int_equal(kube_request_send(c, &req, record, &o), -EINVAL);
    req.namespace_ = "default";
    req.name = NULL;
    assert_int_equal(kube_request_send(c, &req, record, &o), -EINVAL);
    req = (struct kube_request){.verb = KUBE_PATCH,
                                .resource = &KUBE_CONFIGMAPS,
                                .namespace_ = "default",
                                .name = "x",
                                .body = patch,
                                .patch_type = KUBE_PATCH_APPLY};
    assert_int_equal(kube_request_send(c, &req, record, &o), -EINVAL); /* no fieldManager */
    req.verb = KUBE_CREATE;
    req.body = NULL;
    assert_int_equal(kube_request_send(c, &req, record, &o), -EINVAL);
    assert_int_equal(o.calls, 1);

    kube_client_get_stats(c, &st);
    assert_int_equal(st.requests, 2);
    assert_int_equal(st.pending, 0);
    kube_client_free(c);
    cJSON_Delete(patch);
    ev_loop_destroy(loop);
}

static void watch_event(void *userdata, enum kube_watch_event_type type, cJSON *obj)
{
    fail();
}

static void watch_end(void *userdata, int code, const char *message)
{
    struct outcome *o = userdata;

    o->calls++;
    o->code = code;
}

static void test_client_errors__free_cancels_pending_work(void **state)
{
    struct ev_loop *loop = ev_loop_new(0);
    struct kube_config cfg = plain_cfg("http://127.0.0.1:1");
    struct kube_client *c = NULL;
    struct kube_request req = {.verb = KUBE_LIST, .resource = &KUBE_CONFIGMAPS};
    struct outcome a = {0}, b = {0}, w = {0}, x = {0}, y = {0};
    struct kube_watch *watch = NULL;
    struct kube_call *call = NULL;
    struct kube_list *list = NULL;
    struct err e;

    cfg.allow_plain_http = true;
    assert_int_equal(kube_client_new(loop, &cfg, &c, &e), 0);
    assert_int_equal(kube_request_send(c, &req, record, &a), 0);
    assert_int_equal(kube_list_all(c, &req, record, &b), 0);
    assert_int_equal(kube_request_start(c, &req, record, &x, &call), 0);
    assert_int_equal(
        kube_watch_start(c, &KUBE_CONFIGMAPS, NULL, watch_event, watch_end, &w, &watch), 0);
    assert_int_equal(kube_list_start(c, &req, record, &y, &list), 0);
    kube_call_cancel(call);
    assert_int_equal(x.calls, 1);
    assert_int_equal(x.code, -ECANCELED);
    kube_list_cancel(list);
    assert_int_equal(y.calls, 1);
    assert_int_equal(y.code, -ECANCELED);
    kube_client_free(c);
    assert_int_equal(x.calls, 1);
    assert_int_equal(y.calls, 1);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.code, -ECANCELED);
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.code, -ECANCELED);
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.code, -ECANCELED);
    kube_watch_free(watch);
    ev_loop_destroy(loop);
}

/* Exactly one of cJSON's allocations fails: the one after cjson_allocs_left more (< 0: none),
 * as under transient memory pressure. */
static int cjson_allocs_left = -1;

static void *failing_malloc(size_t size)
{
    if (cjson_allocs_left < 0)
        return malloc(size);
    return cjson_allocs_left-- == 0 ? NULL : malloc(size);
}

/* A loopback listener's port; its socket in *fd. */
static int listen_port(int *fd)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);

    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(*fd >= 0);
    assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(*fd, 4), 0);
    assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

/* What a listening socket receives on its first connection, into req (cap bytes). */
struct catch
{
    ev_io w;
    int conn;
    char *req;
    size_t len, cap;
    bool whole; /* headers and the Content-Length body read */
};

static void catch_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct catch *c = (struct catch *)w;
    const char *end, *cl;
    ssize_t n;

    if (c->conn < 0) {
        /* From the listening socket to the connection, where the rest of the body comes. */
        c->conn = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC);
        assert_true(c->conn >= 0);
        ev_io_stop(loop, w);
        ev_io_set(w, c->conn, EV_READ);
        ev_io_start(loop, w);
    }
    n = recv(c->conn, c->req + c->len, c->cap - 1 - c->len, MSG_DONTWAIT);
    if (n > 0)
        c->len += (size_t)n;
    c->req[c->len] = '\0';
    if ((end = strstr(c->req, "\r\n\r\n")) && (cl = strcasestr(c->req, "content-length:")) &&
        c->len >= (size_t)(end + 4 - c->req) + strtoul(cl + 15, NULL, 10))
        c->whole = true;
}

/* Sends req with cJSON's allocation number `budget` failing, for budget = 0, 1, 2, ... until
 * the request needs fewer allocations than that. Every budget that made an allocation fail must
 * refuse the request with -ENOMEM and send nothing; the one that did not must send exactly
 * want_line and want_body: so no request ever goes with a body built only in part. */
static void send_under_pressure(const struct kube_request *req, const char *want_line,
                                const char *want_body)
{
    struct ev_loop *loop = ev_loop_new(0);
    cJSON_Hooks hooks = {.malloc_fn = failing_malloc, .free_fn = free};
    int refused = 0;

    for (int budget = 0;; budget++) {
        struct kube_client *c = NULL;
        struct outcome o = {0};
        char buf[8192];
        struct catch k = {.conn = -1, .req = buf, .cap = sizeof(buf)};
        struct kube_client_stats st;
        char server[64];
        struct kube_config cfg;
        struct err e;
        bool failed;
        int lfd, r;

        snprintf(server, sizeof(server), "http://127.0.0.1:%d", listen_port(&lfd));
        cfg = plain_cfg(server);
        cfg.allow_plain_http = true;
        assert_int_equal(kube_client_new(loop, &cfg, &c, &e), 0);
        cJSON_InitHooks(&hooks);
        cjson_allocs_left = budget;
        r = kube_request_send(c, req, record, &o);
        failed = cjson_allocs_left < 0; /* allocation number `budget` was made, and failed */
        cjson_allocs_left = -1;
        cJSON_InitHooks(NULL);
        if (failed) {
            /* Refused, and nothing sent or queued: freeing the client answers no call. */
            assert_int_equal(r, -ENOMEM);
            kube_client_get_stats(c, &st);
            assert_int_equal(st.requests, 0);
            assert_int_equal(st.pending, 0);
            kube_client_free(c);
            assert_int_equal(o.calls, 0);
            close(lfd);
            refused++;
            continue;
        }
        assert_int_equal(r, 0);
        ev_io_init(&k.w, catch_cb, lfd, EV_READ);
        ev_io_start(loop, &k.w);
        while (!k.whole)
            ev_run(loop, EVRUN_ONCE);
        ev_io_stop(loop, &k.w);
        assert_non_null(strstr(k.req, want_line));
        assert_string_equal(strstr(k.req, "\r\n\r\n") + 4, want_body);
        close(k.conn);
        while (!o.calls)
            ev_run(loop, EVRUN_ONCE);
        kube_client_free(c);
        close(lfd);
        break;
    }
    /* The request does allocate through cJSON: some budgets made it fail. */
    assert_true(refused > 0);
    ev_loop_destroy(loop);
}

/* Under memory pressure a DELETE either is not sent at all, or goes with every precondition it
 * asked for: never without its uid (which could remove a same-named successor). */
static void test_client_errors__a_delete_never_goes_without_its_precondition(void **state)
{
    struct kube_request req = {.verb = KUBE_DELETE,
                               .resource = &KUBE_CONFIGMAPS,
                               .namespace_ = "default",
                               .name = "x",
                               .propagation_policy = "Background",
                               .precondition_uid = "uid-of-ours"};
    cJSON *grace = cJSON_Parse("{\"gracePeriodSeconds\":0}");

    send_under_pressure(&req, "DELETE /api/v1/namespaces/default/configmaps/x ",
                        "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                        "\"propagationPolicy\":\"Background\","
                        "\"preconditions\":{\"uid\":\"uid-of-ours\"}}");
    /* With the caller's own options, and both preconditions. */
    req.body = grace;
    req.propagation_policy = NULL;
    req.precondition_rv = "42";
    send_under_pressure(&req, "DELETE /api/v1/namespaces/default/configmaps/x ",
                        "{\"gracePeriodSeconds\":0,\"kind\":\"DeleteOptions\",\"apiVersion\":"
                        "\"v1\",\"preconditions\":{\"uid\":\"uid-of-ours\","
                        "\"resourceVersion\":\"42\"}}");
    cJSON_Delete(grace);
}

/* Creates, updates and patches either are not sent, or go with their whole body. */
static void test_client_errors__a_body_is_sent_whole_or_not_at_all(void **state)
{
    static const char obj[] = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                              "\"name\":\"x\",\"namespace\":\"default\",\"labels\":{\"a\":\"b\"}},"
                              "\"data\":{\"k1\":\"v1\",\"k2\":\"v2\"}}";
    static const char patch[] = "[{\"op\":\"replace\",\"path\":\"/data/k1\",\"value\":\"v3\"}]";
    cJSON *o = cJSON_Parse(obj), *p = cJSON_Parse(patch);
    struct kube_request req = {.resource = &KUBE_CONFIGMAPS, .body = o};

    req.verb = KUBE_CREATE;
    send_under_pressure(&req, "POST /api/v1/namespaces/default/configmaps ", obj);
    req.verb = KUBE_UPDATE;
    req.namespace_ = "default";
    req.name = "x";
    send_under_pressure(&req, "PUT /api/v1/namespaces/default/configmaps/x ", obj);
    req.verb = KUBE_PATCH;
    req.patch_type = KUBE_PATCH_APPLY;
    req.field_manager = "nestcp";
    req.force = true;
    send_under_pressure(
        &req, "PATCH /api/v1/namespaces/default/configmaps/x?fieldManager=nestcp&force=true ", obj);
    req.body = p;
    req.patch_type = KUBE_PATCH_JSON;
    req.field_manager = NULL;
    req.force = false;
    send_under_pressure(&req, "PATCH /api/v1/namespaces/default/configmaps/x ", patch);
    cJSON_Delete(o);
    cJSON_Delete(p);
}

/* A body many times the transport's upload buffer goes whole, in order. */
static void test_client_errors__a_body_larger_than_the_upload_buffer_goes_whole(void **state)
{
    struct ev_loop *loop = ev_loop_new(0);
    size_t size = 12 * KUBE_TRANSPORT_UPLOAD_BUFFER + 123;
    char *value = malloc(size + 1), *want;
    cJSON *o = cJSON_CreateObject(), *meta, *data;
    struct kube_request req = {.verb = KUBE_CREATE, .resource = &KUBE_CONFIGMAPS, .body = o};
    struct catch k = {.conn = -1, .cap = 2 * size + 4096};
    struct outcome out = {0};
    struct kube_client *c;
    struct kube_config cfg;
    char server[64];
    struct err e;
    int lfd;

    assert_non_null(value);
    for (size_t i = 0; i < size; i++)
        value[i] = (char)('a' + i % 26);
    value[size] = '\0';
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "ConfigMap");
    meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(meta, "name", "big");
    cJSON_AddStringToObject(meta, "namespace", "default");
    data = cJSON_AddObjectToObject(o, "data");
    cJSON_AddStringToObject(data, "k", value);
    want = cJSON_PrintUnformatted(o);
    k.req = malloc(k.cap);
    assert_non_null(k.req);

    snprintf(server, sizeof(server), "http://127.0.0.1:%d", listen_port(&lfd));
    cfg = plain_cfg(server);
    cfg.allow_plain_http = true;
    assert_int_equal(kube_client_new(loop, &cfg, &c, &e), 0);
    assert_int_equal(kube_request_send(c, &req, record, &out), 0);
    ev_io_init(&k.w, catch_cb, lfd, EV_READ);
    ev_io_start(loop, &k.w);
    while (!k.whole)
        ev_run(loop, EVRUN_ONCE);
    ev_io_stop(loop, &k.w);
    assert_non_null(strstr(k.req, "POST /api/v1/namespaces/default/configmaps "));
    assert_string_equal(strstr(k.req, "\r\n\r\n") + 4, want);
    close(k.conn);
    while (!out.calls)
        ev_run(loop, EVRUN_ONCE);
    kube_client_free(c);
    close(lfd);
    ev_loop_destroy(loop);
    cJSON_free(want);
    cJSON_Delete(o);
    free(k.req);
    free(value);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_errors__http_status_and_reason_map_to_codes),
        cmocka_unit_test(test_client_errors__too_large_resource_version_maps_to_erange),
        cmocka_unit_test(test_client_errors__invalid_keeps_server_message),
        cmocka_unit_test(test_client_errors__retry_after),
        cmocka_unit_test(test_client_errors__curl_failures),
        cmocka_unit_test(test_client_errors__plain_http_refused_outside_tests),
        cmocka_unit_test(test_client_errors__refused_connection_and_bad_requests),
        cmocka_unit_test(test_client_errors__free_cancels_pending_work),
        cmocka_unit_test(test_client_errors__a_delete_never_goes_without_its_precondition),
        cmocka_unit_test(test_client_errors__a_body_is_sent_whole_or_not_at_all),
        cmocka_unit_test(test_client_errors__a_body_larger_than_the_upload_buffer_goes_whole),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
