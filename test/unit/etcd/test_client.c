/* The etcd client without an etcd: what it refuses before sending, transport failures and
 * timeouts, and the lifetimes of calls cancelled or freed while in flight, also from inside a
 * libcurl callback of another transfer on the same transport. The real protocol is exercised by
 * test/integration/etcd against real etcd members. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <ev.h>

#include "lib/etcd/client.h"
#include "lib/kube/transport.h"
#include "lib/pki/cert.h"
#include "lib/util/httpd.h"
#include "lib/util/strutil.h"

struct fx {
    struct ev_loop *loop;
    struct kube_transport *t;
    struct etcd_client *c;
    char *ca_cert, *ca_key, *cert, *key, *other_key;
    int refused_fd, refused_port; /* bound, not listening: connections are refused */
    int hole_fd, hole_port;       /* listening, never accepting: TLS never answers */
};

/* What one call's callback saw. */
struct seen {
    int calls;
    int code;
    char msg[ERR_MSG_MAX];
    struct etcd_client *free_client; /* freed from inside the callback when set */
};

static void on_done(void *userdata, const struct etcd_result *res)
{
    struct seen *s = userdata;

    s->calls++;
    s->code = res->code;
    snprintf(s->msg, sizeof(s->msg), "%s", res->err->msg);
    assert_int_equal(res->err->code, res->code);
    if (s->free_client) {
        etcd_client_free(s->free_client);
        s->free_client = NULL;
    }
}

static int loopback_socket(bool listening, int *ret_port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    if (listening)
        assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *ret_port = ntohs(a.sin_port);
    return fd;
}

static void issue(const char *ca_cert, const char *ca_key, const char *cn, bool is_ca,
                  char **ret_cert, char **ret_key)
{
    struct pki_cert_spec s;
    struct err e;

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, cn, &e), 0);
    s.is_ca = is_ca;
    s.ext_usage = PKI_EKU_CLIENT_AUTH;
    assert_int_equal(pki_cert_issue(ca_cert, ca_key, &s, ret_cert, ret_key, &e), 0);
    pki_cert_spec_done(&s);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char *unused;
    struct err e;

    f->loop = ev_loop_new(EVFLAG_AUTO);
    assert_int_equal(kube_transport_new(f->loop, &f->t), 0);
    issue(NULL, NULL, "etcd-ca", true, &f->ca_cert, &f->ca_key);
    issue(f->ca_cert, f->ca_key, "nestcp-etcd-client", false, &f->cert, &f->key);
    issue(f->ca_cert, f->ca_key, "someone-else", false, &unused, &f->other_key);
    free(unused);
    struct etcd_tls tls = {.ca_pem = f->ca_cert, .cert_pem = f->cert, .key_pem = f->key};
    assert_int_equal(etcd_client_new(f->t, &tls, &f->c, &e), 0);
    f->refused_fd = loopback_socket(false, &f->refused_port);
    f->hole_fd = loopback_socket(true, &f->hole_port);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    etcd_client_free(f->c);
    /* Freeing the client took its transfers off the transport. */
    assert_int_equal(kube_transport_active(f->t), 0);
    kube_transport_free(f->t);
    ev_loop_destroy(f->loop);
    close(f->refused_fd);
    close(f->hole_fd);
    free(f->ca_cert);
    free(f->ca_key);
    free(f->cert);
    free(f->key);
    free(f->other_key);
    free(f);
    return 0;
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
}

/* Runs the loop until *calls reaches want or timeout seconds pass. */
static bool run_until(struct fx *f, const int *calls, int want, double timeout)
{
    double end = time_mono() + timeout;
    ev_timer tick;

    ev_timer_init(&tick, tick_cb, 0.05, 0.05);
    ev_timer_start(f->loop, &tick);
    while (*calls < want && time_mono() < end)
        ev_run(f->loop, EVRUN_ONCE);
    ev_timer_stop(f->loop, &tick);
    return *calls >= want;
}

static void test_client__refuses_bad_tls_material(void **state)
{
    struct fx *f = *state;
    struct etcd_client *c = NULL;
    struct err e;

    assert_int_equal(etcd_client_new(f->t, NULL, &c, &e), -EINVAL);
    assert_int_equal(etcd_client_new(f->t, &(struct etcd_tls){.ca_pem = f->ca_cert}, &c, &e),
                     -EINVAL);
    assert_int_equal(
        etcd_client_new(
            f->t, &(struct etcd_tls){.ca_pem = "junk", .cert_pem = f->cert, .key_pem = f->key}, &c,
            &e),
        -EINVAL);
    assert_non_null(strstr(e.msg, "CA PEM"));
    assert_int_equal(
        etcd_client_new(
            f->t, &(struct etcd_tls){.ca_pem = f->ca_cert, .cert_pem = f->key, .key_pem = f->key},
            &c, &e),
        -EINVAL);
    assert_non_null(strstr(e.msg, "client certificate"));
    assert_int_equal(
        etcd_client_new(
            f->t, &(struct etcd_tls){.ca_pem = f->ca_cert, .cert_pem = f->cert, .key_pem = f->cert},
            &c, &e),
        -EINVAL);
    assert_non_null(strstr(e.msg, "client key"));
    assert_int_equal(
        etcd_client_new(
            f->t,
            &(struct etcd_tls){.ca_pem = f->ca_cert, .cert_pem = f->cert, .key_pem = f->other_key},
            &c, &e),
        -EKEYREJECTED);
    /* No key material in a message. */
    assert_null(strstr(e.msg, "PRIVATE KEY"));
    assert_null(c);
}

static void test_client__refuses_bad_endpoints_before_sending(void **state)
{
    static const char *const hosts[] = {"",    "a b",  "m0:2379", "-m0",
                                        ".m0", "m0/x", "m0\n",    "[::1]"};
    struct fx *f = *state;
    struct seen s = {0};
    const char *urls[] = {"https://10.0.0.2:2380"};
    struct etcd_endpoint ep = {.host = "m0.test.svc", .ip = "127.0.0.1", .port = 2379};
    struct err e;

    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        ep.host = hosts[i];
        assert_int_equal(etcd_member_list(f->c, &ep, on_done, &s, NULL, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "not a DNS name"));
    }
    ep.host = NULL;
    assert_int_equal(etcd_status_get(f->c, &ep, on_done, &s, NULL, &e), -EINVAL);
    assert_int_equal(etcd_status_get(f->c, NULL, on_done, &s, NULL, &e), -EINVAL);
    ep.host = "m0.test.svc";
    ep.port = 0;
    assert_int_equal(etcd_health_get(f->c, &ep, on_done, &s, NULL, &e), -EINVAL);
    ep.port = 65536;
    assert_int_equal(etcd_health_get(f->c, &ep, on_done, &s, NULL, &e), -EINVAL);
    ep.port = 2379;
    ep.ip = "127.0.0";
    assert_int_equal(etcd_health_get(f->c, &ep, on_done, &s, NULL, &e), -EINVAL);
    ep.ip = "m0.test.svc";
    assert_int_equal(etcd_health_get(f->c, &ep, on_done, &s, NULL, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "not an IP address"));
    ep.ip = "127.0.0.1";
    assert_int_equal(etcd_member_promote(f->c, &ep, 0, on_done, &s, NULL, &e), -EINVAL);
    assert_int_equal(etcd_member_remove(f->c, &ep, 0, on_done, &s, NULL, &e), -EINVAL);
    assert_int_equal(etcd_member_add(f->c, &ep, urls, 0, true, on_done, &s, NULL, &e), -EINVAL);
    assert_int_equal(etcd_member_list(f->c, &ep, NULL, &s, NULL, &e), -EINVAL);
    assert_int_equal(s.calls, 0);
    assert_int_equal(etcd_client_pending(f->c), 0);
    assert_int_equal(kube_transport_active(f->t), 0);
}

/* The pinned address is where the client connects: nothing listens there, so it is refused,
 * and the message names the member. */
static void test_client__refused_connection(void **state)
{
    struct fx *f = *state;
    struct seen s = {0};
    struct etcd_endpoint ep = {.host = "m0.test.svc", .ip = "127.0.0.1", .port = f->refused_port};
    char where[64];
    struct err e;

    assert_int_equal(etcd_member_list(f->c, &ep, on_done, &s, NULL, &e), 0);
    assert_int_equal(etcd_client_pending(f->c), 1);
    assert_true(run_until(f, &s.calls, 1, 10));
    assert_int_equal(s.calls, 1);
    assert_int_equal(s.code, -ECONNREFUSED);
    snprintf(where, sizeof(where), "m0.test.svc:%d: ", f->refused_port);
    assert_true(str_has_prefix(s.msg, where));
    assert_int_equal(etcd_client_pending(f->c), 0);
}

/* An IPv6 address is pinned too (in brackets): the client connects to it rather than looking
 * the name up, whether or not this host has ::1. */
static void test_client__pins_ipv6(void **state)
{
    struct fx *f = *state;
    struct seen s = {0};
    struct etcd_endpoint ep = {.host = "m0.test.svc", .ip = "::1", .port = f->refused_port};
    struct err e;

    assert_int_equal(etcd_health_get(f->c, &ep, on_done, &s, NULL, &e), 0);
    assert_true(run_until(f, &s.calls, 1, 10));
    assert_int_equal(s.code, -ECONNREFUSED);
    assert_null(strstr(s.msg, "resolve"));

    /* Without an address the name is looked up (localhost: from /etc/hosts). */
    s.calls = 0;
    ep.ip = NULL;
    ep.host = "localhost";
    assert_int_equal(etcd_health_get(f->c, &ep, on_done, &s, NULL, &e), 0);
    assert_true(run_until(f, &s.calls, 1, 10));
    assert_int_equal(s.code, -ECONNREFUSED);
    assert_null(strstr(s.msg, "resolve"));
}

static void test_client__timeout(void **state)
{
    struct fx *f = *state;
    struct seen s1 = {0}, s2 = {0};
    struct etcd_endpoint ep = {
        .host = "m0.test.svc", .ip = "127.0.0.1", .port = f->hole_port, .timeout_ms = 200};
    double start = time_mono(), took;
    struct err e;

    assert_int_equal(etcd_status_get(f->c, &ep, on_done, &s1, NULL, &e), 0);
    assert_true(run_until(f, &s1.calls, 1, 10));
    took = time_mono() - start;
    assert_int_equal(s1.code, -ETIMEDOUT);
    assert_true(took >= 0.15 && took < 5);

    /* The client's default applies where the endpoint sets none. */
    etcd_client_set_timeout(f->c, 300);
    ep.timeout_ms = 0;
    start = time_mono();
    assert_int_equal(etcd_member_promote(f->c, &ep, UINT64_MAX, on_done, &s2, NULL, &e), 0);
    assert_true(run_until(f, &s2.calls, 1, 10));
    took = time_mono() - start;
    assert_int_equal(s2.code, -ETIMEDOUT);
    assert_true(took >= 0.25 && took < 5);
    etcd_client_set_timeout(f->c, 0);
}

static void test_client__cancel_and_free_in_flight(void **state)
{
    struct fx *f = *state;
    struct seen s[4] = {{0}};
    struct etcd_call *call = NULL;
    struct etcd_endpoint ep = {.host = "m0.test.svc", .ip = "127.0.0.1", .port = f->hole_port};
    struct etcd_tls tls = {.ca_pem = f->ca_cert, .cert_pem = f->cert, .key_pem = f->key};
    struct etcd_client *c;
    struct err e;

    assert_int_equal(etcd_client_new(f->t, &tls, &c, &e), 0);
    assert_int_equal(etcd_member_list(c, &ep, on_done, &s[0], &call, &e), 0);
    assert_int_equal(etcd_member_remove(c, &ep, 42, on_done, &s[1], NULL, &e), 0);
    assert_int_equal(etcd_health_get(c, &ep, on_done, &s[2], NULL, &e), 0);
    assert_int_equal(etcd_status_get(c, &ep, on_done, &s[3], NULL, &e), 0);
    assert_int_equal(etcd_client_pending(c), 4);
    ev_run(f->loop, EVRUN_NOWAIT);

    etcd_call_cancel(call);
    assert_int_equal(s[0].calls, 1);
    assert_int_equal(s[0].code, -ECANCELED);
    assert_int_equal(etcd_client_pending(c), 3);
    assert_int_equal(kube_transport_active(f->t), 3);

    etcd_client_free(c);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(s[i].calls, 1);
        assert_int_equal(s[i].code, -ECANCELED);
    }
    assert_int_equal(kube_transport_active(f->t), 0);
    ev_run(f->loop, EVRUN_NOWAIT);
    for (int i = 0; i < 4; i++)
        assert_int_equal(s[i].calls, 1);
}

/* A callback may free its client: the calls still in flight end with -ECANCELED. */
static void test_client__free_from_a_callback(void **state)
{
    struct fx *f = *state;
    struct etcd_tls tls = {.ca_pem = f->ca_cert, .cert_pem = f->cert, .key_pem = f->key};
    struct etcd_endpoint refused = {
        .host = "m0.test.svc", .ip = "127.0.0.1", .port = f->refused_port};
    struct etcd_endpoint hole = {.host = "m1.test.svc", .ip = "127.0.0.1", .port = f->hole_port};
    struct seen a = {0}, b = {0};
    struct etcd_client *c;
    struct err e;

    assert_int_equal(etcd_client_new(f->t, &tls, &c, &e), 0);
    a.free_client = c;
    assert_int_equal(etcd_member_list(c, &refused, on_done, &a, NULL, &e), 0);
    assert_int_equal(etcd_member_list(c, &hole, on_done, &b, NULL, &e), 0);
    assert_true(run_until(f, &a.calls, 1, 10));
    assert_int_equal(a.code, -ECONNREFUSED);
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.code, -ECANCELED);
    assert_int_equal(kube_transport_active(f->t), 0);
}

/* ---- cancelling from inside libcurl ---- */

struct raw {
    struct kube_xfer x;
    struct etcd_call *cancel;        /* cancelled from the write callback */
    struct etcd_client *free_client; /* freed from the write callback */
    bool in_curl_seen;
    int done;
};

static size_t raw_write(char *p, size_t size, size_t n, void *userdata)
{
    struct raw *r = userdata;

    r->in_curl_seen = kube_transport_in_curl(r->x.t);
    if (r->cancel) {
        etcd_call_cancel(r->cancel);
        r->cancel = NULL;
    }
    if (r->free_client) {
        etcd_client_free(r->free_client);
        r->free_client = NULL;
    }
    return size * n;
}

static void raw_done(struct kube_xfer *x, CURLcode rc)
{
    struct raw *r = kube_container_of(x, struct raw, x);

    assert_int_equal(rc, CURLE_OK);
    r->done++;
}

static void hello(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
    buf_puts(&resp->body, "hello");
}

static void raw_start(struct fx *f, struct raw *r, int port)
{
    char url[64];

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
    r->x.easy = curl_easy_init();
    assert_non_null(r->x.easy);
    curl_easy_setopt(r->x.easy, CURLOPT_URL, url);
    curl_easy_setopt(r->x.easy, CURLOPT_WRITEFUNCTION, raw_write);
    curl_easy_setopt(r->x.easy, CURLOPT_WRITEDATA, r);
    r->x.done = raw_done;
    assert_int_equal(kube_transport_add(f->t, &r->x), 0);
}

/* Cancelling a call, or freeing its client, from inside another transfer's write callback
 * (where libcurl forbids taking transfers off) answers at once and takes the transfer off as
 * soon as libcurl returns, before the loop handles anything else. */
static void test_client__cancel_inside_libcurl(void **state)
{
    struct fx *f = *state;
    struct etcd_tls tls = {.ca_pem = f->ca_cert, .cert_pem = f->cert, .key_pem = f->key};
    struct etcd_endpoint hole = {.host = "m0.test.svc", .ip = "127.0.0.1", .port = f->hole_port};
    struct httpd *h = NULL;
    struct raw r1 = {0}, r2 = {0};
    struct seen a = {0}, b = {0}, c2 = {0};
    struct etcd_client *c;
    struct err e;

    assert_int_equal(httpd_new(f->loop, "127.0.0.1:0", NULL, hello, NULL, &h, &e), 0);

    assert_int_equal(etcd_member_list(f->c, &hole, on_done, &a, &r1.cancel, &e), 0);
    raw_start(f, &r1, httpd_port(h));
    assert_true(run_until(f, &r1.done, 1, 10));
    assert_true(r1.in_curl_seen);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.code, -ECANCELED);
    assert_int_equal(etcd_client_pending(f->c), 0);

    assert_int_equal(etcd_client_new(f->t, &tls, &c, &e), 0);
    assert_int_equal(etcd_member_list(c, &hole, on_done, &b, NULL, &e), 0);
    assert_int_equal(etcd_status_get(c, &hole, on_done, &c2, NULL, &e), 0);
    r2.free_client = c;
    raw_start(f, &r2, httpd_port(h));
    assert_true(run_until(f, &r2.done, 1, 10));
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.code, -ECANCELED);
    assert_int_equal(c2.calls, 1);
    assert_int_equal(c2.code, -ECANCELED);

    /* The cancelled transfers are off the transport already (only the two raw ones were left
     * when their callbacks returned), and call nobody again. */
    assert_int_equal(kube_transport_active(f->t), 0);
    assert_int_equal(a.calls + b.calls + c2.calls, 3);
    curl_easy_cleanup(r1.x.easy);
    curl_easy_cleanup(r2.x.easy);
    httpd_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client__refuses_bad_tls_material),
        cmocka_unit_test(test_client__refuses_bad_endpoints_before_sending),
        cmocka_unit_test(test_client__refused_connection),
        cmocka_unit_test(test_client__pins_ipv6),
        cmocka_unit_test(test_client__timeout),
        cmocka_unit_test(test_client__cancel_and_free_in_flight),
        cmocka_unit_test(test_client__free_from_a_callback),
        cmocka_unit_test(test_client__cancel_inside_libcurl),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
