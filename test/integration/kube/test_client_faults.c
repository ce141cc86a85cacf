/* Faults the real API server will not produce on demand, injected by a loopback proxy in
 * front of it: 429 with Retry-After, an expired continue token in the middle of a paged list,
 * and HTTP 410 on a watch. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/kube/informer.h"
#include "test/support/kube_faultproxy.h"
#include "test/support/kube_testenv.h"

static struct kt T;
static struct kfp P;
static struct kube_config *proxied_cfg;

static int setup(void **state)
{
    kt_setup(&T, "kube-faults");
    kfp_start(&P, T.cfg);
    proxied_cfg = kfp_client_config(&P);
    return 0;
}

static int teardown(void **state)
{
    kfp_stop(&P);
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
};

static void record(void *ud, const struct kube_result *res)
{
    struct outcome *o = ud;

    o->done = true;
    o->code = res->code;
    o->http = res->http_status;
    o->retry_after = res->retry_after;
    o->items = cJSON_GetArraySize(cJSON_GetObjectItem(res->body, "items"));
}

static void test_client_faults__429_is_retried_after_retry_after(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_request get = {.verb = KUBE_GET, .resource = &KUBE_NAMESPACES, .name = T.ns};
    struct kube_client_stats st;
    struct outcome o = {0};
    int before = atomic_load(&P.requests);
    double start = time_mono();

    atomic_store(&P.n429, 2);
    assert_int_equal(kube_request_send(c, &get, record, &o), 0);
    assert_true(kt_run_until(&T, &o.done, 30));
    assert_int_equal(o.code, 0);
    assert_int_equal(o.http, 200);
    assert_true(time_mono() - start >= 1.9); /* waited Retry-After (1 s) twice */
    assert_int_equal(atomic_load(&P.requests) - before, 3);
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
    atomic_store(&P.n429, 1);
    assert_int_equal(kube_request_send(c, &get, record, &o), 0);
    assert_true(kt_run_until(&T, &o.done, 30));
    assert_int_equal(o.code, -EAGAIN);
    assert_int_equal(o.http, 429);
    assert_true(o.retry_after == 1.0);
    /* More 429s than retries: the last one is handed over. */
    kube_client_set_retry(c, 1, 5);
    atomic_store(&P.n429, 2);
    o = (struct outcome){0};
    assert_int_equal(kube_request_send(c, &get, record, &o), 0);
    assert_true(kt_run_until(&T, &o.done, 30));
    assert_int_equal(o.code, -EAGAIN);
    atomic_store(&P.n429, 0);
    kube_client_free(c);
}

static void test_client_faults__expired_continue_falls_back_to_full_list(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_request req = {.verb = KUBE_LIST, .resource = &KUBE_CONFIGMAPS,
                               .namespace_ = T.ns, .label_selector = "test=fallback",
                               .limit = 10};
    struct kube_client_stats st;
    struct outcome o = {0};
    char name[32];

    for (int i = 0; i < 25; i++) {
        snprintf(name, sizeof(name), "fb-%02d", i);
        assert_int_equal(kt_create_cm(&T, T.ns, name, "fallback", "x", NULL), 0);
    }
    atomic_store(&P.expire_continue, true);
    assert_int_equal(kube_list_all(c, &req, record, &o), 0);
    assert_true(kt_run_until(&T, &o.done, 30));
    assert_int_equal(o.code, 0);
    assert_int_equal(o.items, 25); /* no page counted twice */
    assert_false(atomic_load(&P.expire_continue));
    kube_client_get_stats(c, &st);
    assert_int_equal(st.lists, 3); /* page 1, the expired page 2, one full list */
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

    atomic_store(&P.expire_watch, true);
    assert_int_equal(kube_informer_new(c, &o, NULL, NULL, &inf), 0);
    assert_int_equal(kube_informer_start(inf), 0);
    assert_true(kt_wait(&T, synced, inf, 30));
    assert_true(kt_wait(&T, relisted, inf, 30));
    kube_informer_get_stats(inf, &st);
    assert_int_equal(st.watch_expired, 1);
    assert_int_equal(st.lists, 2);
    assert_int_equal(st.missed_deletes, 0);
    kube_informer_free(inf);
    kube_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_faults__429_is_retried_after_retry_after),
        cmocka_unit_test(test_client_faults__429_reaches_caller_without_retries),
        cmocka_unit_test(test_client_faults__expired_continue_falls_back_to_full_list),
        cmocka_unit_test(test_client_faults__informer_relists_on_http_410_watch),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
