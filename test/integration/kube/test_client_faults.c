/* Faults the real API server will not produce on demand, injected by the TLS + HTTP/2 fault
 * proxy in front of it: 429 with and without Retry-After, 503, an expired continue token in the
 * middle of a paged list, HTTP 410 on a watch, and serving certificates that change. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/kube/informer.h"
#include "lib/kube/server.h"
#include "lib/kube/transport.h"
#include "test/support/kube_faultproxy.h"
#include "test/support/kube_testenv.h"

static struct kt T;
static struct kfp *P;
static struct kube_config *proxied_cfg;

static int setup(void **state)
{
    kt_setup(&T, "kube-faults");
    assert_int_equal(kfp_start(T.cfg, &P), 0);
    proxied_cfg = kfp_client_config(P);
    assert_non_null(proxied_cfg);
    return 0;
}

static int teardown(void **state)
{
    kfp_stop(P);
    kube_config_free(proxied_cfg);
    kt_teardown(&T);
    return 0;
}

static struct kube_client *proxied_client(void)
{
    struct kube_client *c = NULL;
    struct err e;

    assert_int_equal(kube_client_new(T.loop, proxied_cfg, &c, &e), 0);
    return c;
}

struct outcome {
    bool done;
    int code;
    long http;
    double retry_after;
    int items;
    char *msg; /* when set, the result's message is copied here */
    size_t msglen;
};

static void record(void *ud, const struct kube_result *res)
{
    struct outcome *o = ud;

    o->done = true;
    o->code = res->code;
    o->http = res->http_status;
    o->retry_after = res->retry_after;
    o->items = cJSON_GetArraySize(cJSON_GetObjectItem(res->body, "items"));
    if (o->msg)
        snprintf(o->msg, o->msglen, "%s", res->message);
}

static void test_client_faults__429_is_retried_after_retry_after(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_request get = {.verb = KUBE_GET, .resource = &KUBE_NAMESPACES, .name = T.ns};
    struct kube_client_stats st;
    struct outcome o = {0};
    struct kfp_stats ps;
    double start = time_mono();
    int before;

    kfp_get_stats(P, &ps);
    before = ps.requests;
    assert_int_equal(kfp_add_rule(P, &(struct kfp_rule){.match = {"GET /api/v1/namespaces/"},
                                                        .count = 2,
                                                        .action = KFP_REPLY,
                                                        .status = 429,
                                                        .retry_after = "1"}),
                     0);
    assert_int_equal(kube_request_send(c, &get, record, &o), 0);
    assert_true(kt_run_until(&T, &o.done, 30));
    assert_int_equal(o.code, 0);
    assert_int_equal(o.http, 200);
    assert_true(time_mono() - start >= 1.9); /* waited Retry-After (1 s) twice */
    kfp_get_stats(P, &ps);
    assert_int_equal(ps.requests - before, 3);
    kube_client_get_stats(c, &st);
    assert_int_equal(st.retries, 2);
    assert_int_equal(st.requests, 3);
    kube_client_free(c);
}

static void test_client_faults__429_reaches_caller_without_retries(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_request get = {.verb = KUBE_GET, .resource = &KUBE_NAMESPACES, .name = T.ns};
    struct outcome o = {0};

    kube_client_set_retry(c, 0, 0);
    assert_int_equal(kfp_add_rule(P, &(struct kfp_rule){.match = {"GET /api/v1/namespaces/"},
                                                        .count = 1,
                                                        .action = KFP_REPLY,
                                                        .status = 429,
                                                        .retry_after = "1"}),
                     0);
    assert_int_equal(kube_request_send(c, &get, record, &o), 0);
    assert_true(kt_run_until(&T, &o.done, 30));
    assert_int_equal(o.code, -EAGAIN);
    assert_int_equal(o.http, 429);
    assert_true(o.retry_after == 1.0);
    /* More 429s than retries: the last one is handed over. */
    kube_client_set_retry(c, 1, 5);
    assert_int_equal(kfp_add_rule(P, &(struct kfp_rule){.match = {"GET /api/v1/namespaces/"},
                                                        .count = 2,
                                                        .action = KFP_REPLY,
                                                        .status = 429,
                                                        .retry_after = "1"}),
                     0);
    o = (struct outcome){0};
    assert_int_equal(kube_request_send(c, &get, record, &o), 0);
    assert_true(kt_run_until(&T, &o.done, 30));
    assert_int_equal(o.code, -EAGAIN);
    assert_int_equal(kfp_rules_armed(P), 0);
    kfp_clear_rules(P);
    kube_client_free(c);
}

static void test_client_faults__expired_continue_falls_back_to_full_list(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_request req = {.verb = KUBE_LIST,
                               .resource = &KUBE_CONFIGMAPS,
                               .namespace_ = T.ns,
                               .label_selector = "test=fallback",
                               .limit = 10};
    struct kube_client_stats st;
    struct outcome o = {0};
    char name[32];

    for (int i = 0; i < 25; i++) {
        snprintf(name, sizeof(name), "fb-%02d", i);
        assert_int_equal(kt_create_cm(&T, T.ns, name, "fallback", "x", NULL), 0);
    }
    assert_int_equal(kfp_add_rule(P, &(struct kfp_rule){.match = {"continue="},
                                                        .count = 1,
                                                        .action = KFP_REPLY,
                                                        .status = 410}),
                     0);
    assert_int_equal(kube_list_all(c, &req, record, &o), 0);
    assert_true(kt_run_until(&T, &o.done, 30));
    assert_int_equal(o.code, 0);
    assert_int_equal(o.items, 25); /* no page counted twice */
    assert_int_equal(kfp_rules_armed(P), 0);
    kfp_clear_rules(P);
    kube_client_get_stats(c, &st);
    assert_int_equal(st.lists, 3); /* page 1, the expired page 2, one full list */
    kube_client_free(c);
}

static void test_client_faults__429_without_retry_after_and_503_reach_caller(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_request get = {.verb = KUBE_GET, .resource = &KUBE_NAMESPACES, .name = T.ns};
    struct kube_client_stats st;
    struct outcome o = {0};

    assert_int_equal(kfp_add_rule(P, &(struct kfp_rule){.match = {"GET /api/v1/namespaces/"},
                                                        .count = 1,
                                                        .action = KFP_REPLY,
                                                        .status = 429}),
                     0);
    assert_int_equal(kube_request_send(c, &get, record, &o), 0);
    assert_true(kt_run_until(&T, &o.done, 30));
    assert_int_equal(o.code, -EAGAIN); /* no delay to honour: the caller's backoff decides */
    assert_true(o.retry_after == 0);
    assert_int_equal(kfp_add_rule(P, &(struct kfp_rule){.match = {"GET /api/v1/namespaces/"},
                                                        .count = 1,
                                                        .action = KFP_REPLY,
                                                        .status = 503,
                                                        .retry_after = "2"}),
                     0);
    o = (struct outcome){0};
    assert_int_equal(kube_request_send(c, &get, record, &o), 0);
    assert_true(kt_run_until(&T, &o.done, 30));
    assert_int_equal(o.code, -EIO);
    assert_int_equal(o.http, 503);
    assert_true(o.retry_after == 2.0);
    kube_client_get_stats(c, &st);
    assert_int_equal(st.requests, 2);
    assert_int_equal(st.retries, 0);
    kfp_clear_rules(P);
    kube_client_free(c);
}

static bool synced(void *inf)
{
    return kube_informer_synced(inf);
}

static bool relisted(void *inf)
{
    struct kube_informer_stats st;

    kube_informer_get_stats(inf, &st);
    return st.lists >= 2 && st.watches >= 2;
}

static void test_client_faults__informer_relists_on_http_410_watch(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer_opts o = {.resource = &KUBE_CONFIGMAPS, .namespace_ = T.ns};
    struct kube_informer *inf = NULL;
    struct kube_informer_stats st;

    assert_int_equal(kfp_add_rule(P, &(struct kfp_rule){.match = {"watch=1"},
                                                        .count = 1,
                                                        .action = KFP_REPLY,
                                                        .status = 410}),
                     0);
    assert_int_equal(kube_informer_new(c, &o, NULL, NULL, &inf), 0);
    assert_int_equal(kube_informer_start(inf), 0);
    assert_true(kt_wait(&T, synced, inf, 30));
    assert_true(kt_wait(&T, relisted, inf, 30));
    kube_informer_get_stats(inf, &st);
    assert_int_equal(st.watch_expired, 1);
    assert_int_equal(st.lists, 2);
    assert_int_equal(st.missed_deletes, 0);
    kfp_clear_rules(P);
    kube_informer_free(inf);
    kube_client_free(c);
}

/* ---- the client-wide rate limit ---- */

/* The client's request counter, sampled on the loop: what the rate limit governs, free of
 * the proxy thread's delays in noting arrivals. */
struct sampler {
    ev_timer timer;
    struct kube_client *c;
    int n;
    double t[4096];
    unsigned long requests[4096];
};

static void sample_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct sampler *s = w->data;
    struct kube_client_stats st;

    if (s->n >= 4096)
        return;
    kube_client_get_stats(s->c, &st);
    s->t[s->n] = ev_now(loop);
    s->requests[s->n++] = st.requests;
}

static void test_client_faults__429_storm_total_rate_stays_at_the_limit(void **state)
{
    enum { N = 30, QPS = 20, BURST = 5 };
    struct kube_client *c = proxied_client();
    struct kube_request get = {.verb = KUBE_GET, .resource = &KUBE_NAMESPACES, .name = T.ns};
    struct outcome o[N] = {0};
    struct kube_client_stats st;
    struct kfp_stats ps;
    static struct sampler smp;
    double t0 = time_mono(), took;
    unsigned long worst = 0;
    int from;

    kfp_get_stats(P, &ps);
    from = ps.requests;
    kube_client_set_rate_limit(c, QPS, BURST);
    kube_client_set_retry(c, 2, 30);
    memset(&smp, 0, sizeof(smp));
    smp.c = c;
    ev_timer_init(&smp.timer, sample_cb, 0., 0.01);
    smp.timer.data = &smp;
    ev_timer_start(T.loop, &smp.timer);
    /* Every key of a busy controller at once, and the server refuses them all (Retry-After:
     * 1): 30 requests and their 2 retries each. */
    assert_int_equal(kfp_add_rule(P, &(struct kfp_rule){.match = {"GET /api/v1/namespaces/"},
                                                        .count = -1,
                                                        .action = KFP_REPLY,
                                                        .status = 429,
                                                        .retry_after = "1"}),
                     0);
    for (int i = 0; i < N; i++)
        assert_int_equal(kube_request_send(c, &get, record, &o[i]), 0);
    for (int i = 0; i < N; i++) {
        assert_true(kt_run_until(&T, &o[i].done, 60));
        assert_int_equal(o[i].code, -EAGAIN);
    }
    ev_timer_stop(T.loop, &smp.timer);
    took = time_mono() - t0;
    kfp_clear_rules(P);
    kfp_get_stats(P, &ps);
    assert_int_equal(ps.requests - from, 3 * N); /* every one reached the server */
    kube_client_get_stats(c, &st);
    assert_int_equal(st.requests, 3 * N);
    /* Never more than BURST + QPS requests sent in any one second. */
    for (int i = 0; i < smp.n; i++)
        for (int j = i + 1; j < smp.n && smp.t[j] - smp.t[i] <= 1.0; j++)
            if (smp.requests[j] - smp.requests[i] > worst)
                worst = smp.requests[j] - smp.requests[i];
    print_message("%d requests in %.1f s, at most %lu sent in one second, %lu waited\n", 3 * N,
                  took, worst, st.throttled);
    assert_true(worst <= QPS + BURST);
    assert_true(took >= (3.0 * N - BURST) / QPS - 0.1);
    assert_true(st.throttled > 0);
    kube_client_free(c);
}

/* ---- TLS ---- */

static bool proxy_idle(void *arg)
{
    struct kfp_stats ps;

    kfp_get_stats(P, &ps);
    return ps.open == 0;
}

/* New connections get `cert`; the open ones are dropped so the client must reconnect. */
static void switch_cert(enum kfp_cert cert)
{
    kfp_set_cert(P, cert);
    kfp_reset_connections(P);
    assert_true(kt_wait(&T, proxy_idle, NULL, 10));
}

static void get_namespace(struct kube_client *c, struct outcome *o, char *msg, size_t len)
{
    struct kube_request get = {.verb = KUBE_GET, .resource = &KUBE_NAMESPACES, .name = T.ns};

    *o = (struct outcome){0};
    msg[0] = '\0';
    o->msg = msg;
    o->msglen = len;
    assert_int_equal(kube_request_send(c, &get, record, o), 0);
    assert_true(kt_run_until(&T, &o->done, 30));
}

static void test_client_faults__speaks_h2_over_tls_one_connection(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_request get = {.verb = KUBE_GET, .resource = &KUBE_NAMESPACES, .name = T.ns};
    struct outcome o[10] = {0};
    struct kfp_stats before, after;

    kfp_get_stats(P, &before);
    for (int i = 0; i < 10; i++)
        assert_int_equal(kube_request_send(c, &get, record, &o[i]), 0);
    for (int i = 0; i < 10; i++) {
        assert_true(kt_run_until(&T, &o[i].done, 30));
        assert_int_equal(o[i].code, 0);
    }
    kfp_get_stats(P, &after);
    /* The proxy accepts ALPN h2 only: ten requests, one TLS connection, ten streams. */
    assert_int_equal(after.connections - before.connections, 1);
    assert_int_equal(after.handshakes - before.handshakes, 1);
    assert_int_equal(after.requests - before.requests, 10);
    kube_client_free(c);
}

static void test_client_faults__reissued_cert_from_same_ca_reconnects(void **state)
{
    struct kube_client *c = proxied_client();
    struct kfp_stats before, after;
    struct outcome o;
    char msg[256];

    get_namespace(c, &o, msg, sizeof(msg));
    assert_int_equal(o.code, 0);
    kfp_get_stats(P, &before);
    switch_cert(KFP_CERT_REISSUED);
    get_namespace(c, &o, msg, sizeof(msg));
    assert_int_equal(o.code, 0);
    kfp_get_stats(P, &after);
    assert_int_equal(after.handshakes - before.handshakes, 1);
    switch_cert(KFP_CERT_GOOD);
    kube_client_free(c);
}

static struct kfp_stats seen_before;

static bool proxy_saw_tls_failure(void *arg)
{
    struct kfp_stats ps;

    kfp_get_stats(P, &ps);
    return ps.tls_failures > seen_before.tls_failures;
}

static bool proxy_saw_handshake(void *arg)
{
    struct kfp_stats ps;

    kfp_get_stats(P, &ps);
    return ps.handshakes > seen_before.handshakes;
}

static void test_client_faults__untrusted_certs_are_refused_before_any_request(void **state)
{
    static const struct {
        enum kfp_cert cert;
        const char *message;
    } cases[] = {
        {KFP_CERT_UNKNOWN_CA, "unable to get local issuer certificate"},
        {KFP_CERT_WRONG_NAME, "127.0.0.1"},
        {KFP_CERT_EXPIRED, "certificate has expired"},
    };
    struct kube_client *c = proxied_client();
    struct kfp_stats before, after;
    struct outcome o;
    char msg[256];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        switch_cert(cases[i].cert);
        kfp_get_stats(P, &before);
        get_namespace(c, &o, msg, sizeof(msg));
        kfp_get_stats(P, &after);
        print_message("certificate %d: %s\n", (int)cases[i].cert, msg);
        assert_true(o.code < 0);
        assert_int_equal(o.http, 0);
        assert_non_null(strstr(msg, cases[i].message));
        assert_int_equal(after.requests, before.requests); /* nothing was sent */
        /* The proxy's thread sees the end of the handshake when it gets to it. */
        seen_before = before;
        if (cases[i].cert == KFP_CERT_WRONG_NAME) {
            /* libcurl checks the name right after the handshake completes, and sends no byte
             * of HTTP. */
            assert_true(kt_wait(&T, proxy_saw_handshake, NULL, 10));
        } else {
            /* The chain is refused inside the handshake. */
            assert_true(kt_wait(&T, proxy_saw_tls_failure, NULL, 10));
            kfp_get_stats(P, &after);
            assert_int_equal(after.handshakes, before.handshakes);
        }
        kfp_get_stats(P, &after);
        assert_int_equal(after.requests, before.requests);
    }
    switch_cert(KFP_CERT_GOOD);
    get_namespace(c, &o, msg, sizeof(msg));
    assert_int_equal(o.code, 0);
    kube_client_free(c);
}

static bool failed_thrice(void *inf)
{
    struct kube_informer_stats st;

    kube_informer_get_stats(inf, &st);
    return st.list_failures >= 3;
}

static void test_client_faults__informer_retries_untrusted_server_with_backoff(void **state)
{
    struct kube_client *c;
    struct kube_informer_opts o = {.resource = &KUBE_CONFIGMAPS, .namespace_ = T.ns};
    struct kube_informer *inf = NULL;
    struct kube_informer_stats st;
    struct kfp_stats before, after;

    switch_cert(KFP_CERT_UNKNOWN_CA);
    c = proxied_client();
    kfp_get_stats(P, &before);
    assert_int_equal(kube_informer_new(c, &o, NULL, NULL, &inf), 0);
    assert_int_equal(kube_informer_start(inf), 0);
    assert_true(kt_wait(&T, failed_thrice, inf, 30));
    kube_informer_get_stats(inf, &st);
    assert_false(kube_informer_synced(inf));
    assert_true(st.last_backoff >= 0.8); /* 1.6 s or more with jitter 0.5-1: backing off */
    /* The proxy's thread counts each refused handshake when it reads the client's alert. */
    seen_before = before;
    seen_before.tls_failures += 2;
    assert_true(kt_wait(&T, proxy_saw_tls_failure, NULL, 10));
    kfp_get_stats(P, &after);
    assert_int_equal(after.requests, before.requests);
    /* A trusted certificate again: the informer gets there by itself. */
    kfp_set_cert(P, KFP_CERT_GOOD);
    assert_true(kt_wait(&T, synced, inf, 60));
    kube_informer_free(inf);
    kube_client_free(c);
}

static void write_ca(const char *path, const char *pem1, const char *pem2, time_t mtime)
{
    struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(pem1, f);
    if (pem2)
        fputs(pem2, f);
    fclose(f);
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_client_faults__rotated_ca_file_is_used_and_a_broken_one_ignored(void **state)
{
    char dir[] = "/tmp/nestcp-ca-rotation-XXXXXX", path[64];
    struct kube_config *cfg = kfp_client_config(P);
    struct kube_client *c = NULL;
    struct kube_client_stats st;
    struct outcome o;
    char msg[256];
    struct err e;

    switch_cert(KFP_CERT_GOOD);
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ca.crt", dir);
    write_ca(path, kfp_ca(P, KFP_CERT_GOOD), NULL, 1000);
    cfg->ca_file = strdup(path); /* as a kubeconfig's certificate-authority: <file> sets it */
    assert_int_equal(kube_client_new(T.loop, cfg, &c, &e), 0);
    get_namespace(c, &o, msg, sizeof(msg));
    assert_int_equal(o.code, 0);

    /* A rotation written badly: the working CA stays in use. */
    write_ca(path, "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", NULL,
             2000);
    switch_cert(KFP_CERT_GOOD); /* a new connection, verified again */
    get_namespace(c, &o, msg, sizeof(msg));
    assert_int_equal(o.code, 0);
    kube_client_get_stats(c, &st);
    assert_int_equal(st.ca_errors, 1);
    assert_int_equal(st.ca_reloads, 0);

    /* The server moves to a certificate from another CA: refused until the file has it. */
    switch_cert(KFP_CERT_UNKNOWN_CA);
    get_namespace(c, &o, msg, sizeof(msg));
    assert_true(o.code < 0);
    write_ca(path, kfp_ca(P, KFP_CERT_UNKNOWN_CA), kfp_ca(P, KFP_CERT_GOOD), 3000);
    get_namespace(c, &o, msg, sizeof(msg));
    assert_int_equal(o.code, 0); /* no restart, no new client */
    kube_client_get_stats(c, &st);
    assert_int_equal(st.ca_reloads, 1);

    switch_cert(KFP_CERT_GOOD);
    kube_client_free(c);
    kube_config_free(cfg);
    unlink(path);
    rmdir(dir);
}

/* ---- idle connections ---- */

struct fetched {
    struct kube_xfer x;
    bool done;
    CURLcode rc;
};

static void fetched_done(struct kube_xfer *x, CURLcode rc)
{
    struct fetched *f = kube_container_of(x, struct fetched, x);

    f->done = true;
    f->rc = rc;
}

struct proxies {
    struct kfp *p[KUBE_TRANSPORT_MAX_CONNECTS + 2];
    int open;
};

static bool few_open(void *arg)
{
    struct proxies *ps = arg;
    struct kfp_stats st;

    ps->open = 0;
    for (size_t i = 0; i < sizeof(ps->p) / sizeof(ps->p[0]); i++) {
        kfp_get_stats(ps->p[i], &st);
        ps->open += st.open;
    }
    return ps->open <= KUBE_TRANSPORT_MAX_CONNECTS;
}

/* One transport's transfers to more servers than KUBE_TRANSPORT_MAX_CONNECTS, as etcd calls to
 * one tenant after another are: each completes, and no more connections than that stay open. */
static void test_client_faults__a_transport_keeps_few_idle_connections(void **state)
{
    enum { N = KUBE_TRANSPORT_MAX_CONNECTS + 2 };
    static struct proxies ps;
    struct kube_server srv[N];
    struct fetched f[N];
    struct curl_slist *headers[N] = {0};
    struct kube_transport *t;
    struct kube_config *cfg;
    char url[256];
    struct err e;

    assert_int_equal(kube_transport_new(T.loop, &t), 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(kfp_start(T.cfg, &ps.p[i]), 0);
        cfg = kfp_client_config(ps.p[i]);
        assert_non_null(cfg);
        assert_int_equal(kube_server_init(&srv[i], cfg, &e), 0);
        kube_config_free(cfg);
        memset(&f[i], 0, sizeof(f[i]));
        f[i].x.easy = curl_easy_init();
        assert_int_equal(kube_server_setup_easy(&srv[i], f[i].x.easy, NULL, &headers[i]), 0);
        snprintf(url, sizeof(url), "https://127.0.0.1:%d/version", kfp_port(ps.p[i]));
        curl_easy_setopt(f[i].x.easy, CURLOPT_URL, url);
        f[i].x.done = fetched_done;
        assert_int_equal(kube_transport_add(t, &f[i].x), 0);
    }
    for (int i = 0; i < N; i++) {
        assert_true(kt_run_until(&T, &f[i].done, 30));
        assert_int_equal(f[i].rc, CURLE_OK);
    }
    assert_true(kt_wait(&T, few_open, &ps, 30));
    assert_true(ps.open >= 1);
    kube_transport_free(t);
    for (int i = 0; i < N; i++) {
        curl_easy_cleanup(f[i].x.easy);
        curl_slist_free_all(headers[i]);
        kube_server_done(&srv[i]);
        kfp_stop(ps.p[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_faults__429_is_retried_after_retry_after),
        cmocka_unit_test(test_client_faults__429_reaches_caller_without_retries),
        cmocka_unit_test(test_client_faults__expired_continue_falls_back_to_full_list),
        cmocka_unit_test(test_client_faults__informer_relists_on_http_410_watch),
        cmocka_unit_test(test_client_faults__429_without_retry_after_and_503_reach_caller),
        cmocka_unit_test(test_client_faults__429_storm_total_rate_stays_at_the_limit),
        cmocka_unit_test(test_client_faults__a_transport_keeps_few_idle_connections),
        cmocka_unit_test(test_client_faults__speaks_h2_over_tls_one_connection),
        cmocka_unit_test(test_client_faults__reissued_cert_from_same_ca_reconnects),
        cmocka_unit_test(test_client_faults__untrusted_certs_are_refused_before_any_request),
        cmocka_unit_test(test_client_faults__informer_retries_untrusted_server_with_backoff),
        cmocka_unit_test(test_client_faults__rotated_ca_file_is_used_and_a_broken_one_ignored),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
