#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/rollerrors.h"
#include "lib/ctrl/plan.h"
#include "lib/kube/client.h"
#include "lib/kube/store.h"
#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/kubeconfig.h"

#define NOW 1799914200.0

/* Lines of a kube-apiserver 1.37 /metrics page, as measured: the /readyz 500s of its start
 * (no resource), resource requests answered 200, 201, 429 and 500, the in-flight filter's 429s
 * again among the terminations, a timeout's 504 only there, and WATCH 429s. */
static const char PAGE[] =
    "# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each "
    "verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n"
    "# TYPE apiserver_request_total counter\n"
    "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\","
    "resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"} 30\n"
    "apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"\",group=\"\","
    "resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"} 10\n"
    "apiserver_request_total{code=\"429\",component=\"apiserver\",dry_run=\"\",group=\"\","
    "resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"} "
    "150\n"
    "apiserver_request_total{code=\"429\",component=\"apiserver\",dry_run=\"\",group=\"\","
    "resource=\"pods\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",version=\"v1\"} 4\n"
    "apiserver_request_total{code=\"500\",component=\"\",dry_run=\"\",group=\"\",resource=\"\","
    "scope=\"\",subresource=\"/readyz\",verb=\"GET\",version=\"\"} 105\n"
    "apiserver_request_total{code=\"500\",component=\"apiserver\",dry_run=\"\",group=\"apps\","
    "resource=\"deployments\",scope=\"namespace\",subresource=\"\",verb=\"LIST\","
    "version=\"v1\"} 6\n"
    "apiserver_request_total_other{code=\"500\",resource=\"pods\"} 1000\n"
    "# TYPE apiserver_request_terminations_total counter\n"
    "apiserver_request_terminations_total{code=\"429\",component=\"apiserver\",group=\"\","
    "resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"POST\","
    "version=\"v1\"} 150\n"
    "apiserver_request_terminations_total{code=\"504\",component=\"apiserver\",group=\"\","
    "resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"LIST\","
    "version=\"v1\"} 5\n"
    "apiserver_request_terminations_total{code=\"504\",component=\"\",group=\"\","
    "resource=\"\",scope=\"\",subresource=\"/healthz\",verb=\"GET\",version=\"\"} 7\n"
    "apiserver_current_inflight_requests{request_kind=\"readOnly\"} 1\n"
    "apiserver_request_total{code=\"500\",resource=\"pods\"} not-a-number\n"
    "apiserver_request_total{code=\"500\",resource=\"pods\" 3\n";

static void count_text(struct rollerrors_counts *c, const char *text, size_t len)
{
    size_t start = 0;

    for (size_t i = 0; i <= len; i++)
        if (i == len || text[i] == '\n') {
            rollerrors_count_line(c, text + start, i - start);
            start = i + 1;
        }
}

static void test_rollerrors__counts_resource_requests_and_terminations(void **state)
{
    struct rollerrors_counts c = {0};

    (void)state;
    count_text(&c, PAGE, strlen(PAGE));
    assert_true(c.total == 200);
    assert_true(c.code429 == 154);
    assert_true(c.code5xx == 6);
    assert_true(c.terminated == 5);
}

static void test_rollerrors__a_label_value_may_hold_quotes_commas_and_braces(void **state)
{
    static const char line[] = "apiserver_request_total{code=\"503\",group=\"x\\\",y{}\","
                               "resource=\"widgets\",verb=\"GET\"} 2.5e+01";
    struct rollerrors_counts c = {0};

    (void)state;
    rollerrors_count_line(&c, line, strlen(line));
    assert_true(c.total == 25);
    assert_true(c.code5xx == 25);
}

static void test_rollerrors__decides_on_enough_requests_and_the_share_failed(void **state)
{
    struct rollerrors_counts few = {.total = 19, .code429 = 19};
    struct rollerrors_counts under = {.total = 200, .code429 = 10, .code5xx = 5, .terminated = 4};
    struct rollerrors_counts at = {.total = 200, .code429 = 160, .code5xx = 10};
    char msg[256] = "";

    (void)state;
    assert_false(rollerrors_failed(&few, msg, sizeof(msg)));
    assert_false(rollerrors_failed(&under, msg, sizeof(msg)));
    under.terminated = 5;
    assert_true(rollerrors_failed(&under, msg, sizeof(msg)));
    assert_true(rollerrors_failed(&at, msg, sizeof(msg)));
    assert_string_equal(msg, "170 of 200 API requests since it started were refused or failed "
                             "(429: 160, 5xx: 10, terminated: 0)");
}

/* ---- the plan ---- */

struct pair {
    char *crt, *key;
};

static struct pair issue(const struct pair *ca)
{
    struct pki_cert_spec spec;
    struct pair p = {NULL, NULL};
    struct err e;

    pki_cert_spec_init(&spec);
    assert_int_equal(pki_cert_spec_set_cn(&spec, ca ? "kubernetes-admin" : "c-ca", &e), 0);
    spec.is_ca = !ca;
    spec.ext_usage = PKI_EKU_CLIENT_AUTH;
    spec.now = (int64_t)NOW;
    spec.validity = 86400 * 30;
    assert_int_equal(
        pki_cert_issue(ca ? ca->crt : NULL, ca ? ca->key : NULL, &spec, &p.crt, &p.key, &e), 0);
    pki_cert_spec_done(&spec);
    return p;
}

static void put(struct kube_store *s, const char *text)
{
    cJSON *old = NULL;

    assert_int_equal(kube_store_put(s, cJSON_Parse(text), &old), 0);
    cJSON_Delete(old);
}

static void put_kubeconfig(struct kube_store *secrets)
{
    struct pair ca = issue(NULL), client = issue(&ca);
    struct pki_kubeconfig kc = {.cluster_name = "c",
                                .server = "https://c-apiserver.t.svc:6443",
                                .ca_cert_pem = ca.crt,
                                .client_cert_pem = client.crt,
                                .client_key_pem = client.key};
    char *yaml = NULL, *b64 = NULL, *text;
    struct err e;

    assert_int_equal(pki_kubeconfig_render(&kc, &yaml, &e), 0);
    assert_int_equal(pki_base64_encode(yaml, strlen(yaml), &b64), 0);
    text = malloc(strlen(b64) + 200);
    assert_non_null(text);
    snprintf(text, strlen(b64) + 200,
             "{\"metadata\":{\"namespace\":\"t\",\"name\":\"c-kubeconfig\"},"
             "\"data\":{\"value\":\"%s\"}}",
             b64);
    put(secrets, text);
    free(text);
    free(b64);
    free(yaml);
    free(ca.crt);
    free(ca.key);
    free(client.crt);
    free(client.key);
}

static void put_pod(struct kube_store *pods, int ordinal, const char *rev, bool ready)
{
    char text[600];

    snprintf(text, sizeof(text),
             "{\"metadata\":{\"namespace\":\"t\",\"name\":\"c-apiserver-%d\",\"uid\":\"u%d\","
             "\"labels\":{\"controller-revision-hash\":\"%s\"}},"
             "\"status\":{\"podIP\":\"10.0.0.%d\",\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"%s\"}]}}",
             ordinal, ordinal, rev, 10 + ordinal, ready ? "True" : "False");
    put(pods, text);
}

static size_t calls(const struct plan *p, const struct plan_action **ret)
{
    size_t n = 0;

    for (size_t i = 0; i < p->n_actions; i++) {
        const char *pod, *host, *ip;
        if (rollerrors_call_of(&p->actions[i], &pod, &host, &ip) == 0) {
            *ret = &p->actions[i];
            n++;
        }
    }
    return n;
}

static void test_rollerrors__scrapes_ready_new_pods_and_fails_the_one_that_refuses(void **state)
{
    struct kube_store pods, secrets;
    struct rollerrors *re = NULL;
    cJSON *sts = cJSON_Parse("{\"metadata\":{\"namespace\":\"t\",\"name\":\"c-apiserver\"},"
                             "\"spec\":{\"replicas\":2},\"status\":{\"currentRevision\":\"r1\","
                             "\"updateRevision\":\"r2\"}}");
    struct rollerrors_input in = {sts, &pods, &secrets, "t", "c", NOW};
    struct rollerrors_counts good = {.total = 300, .code429 = 3};
    struct rollerrors_counts bad = {.total = 200, .code429 = 160, .code5xx = 10};
    const struct plan_action *a = NULL;
    const char *pod, *host, *ip;
    struct plan p;
    char msg[512] = "";
    bool failed = true;

    (void)state;
    kube_store_init(&pods);
    kube_store_init(&secrets);
    put_pod(&pods, 0, "r1", true);
    put_pod(&pods, 1, "r2", false);

    /* The new pod is not Ready: nothing to scrape, nothing to wait for here. */
    plan_init(&p);
    assert_int_equal(rollerrors_check(&re, &in, &p, msg, sizeof(msg), &failed), 0);
    assert_false(failed);
    assert_int_equal(calls(&p, &a), 0);
    assert_true(p.requeue_after == 0);
    plan_done(&p);

    /* Ready, but no kubeconfig cached yet: looked at again, no call. */
    put_pod(&pods, 1, "r2", true);
    plan_init(&p);
    assert_int_equal(rollerrors_check(&re, &in, &p, msg, sizeof(msg), &failed), 0);
    assert_int_equal(calls(&p, &a), 0);
    assert_true(p.requeue_after == ROLLHEALTH_SCRAPE_EVERY / 2);
    plan_done(&p);

    /* With it: one scrape of the new pod (the old one is left alone), at its IP under the
     * Service's name. */
    put_kubeconfig(&secrets);
    in.now += ROLLHEALTH_SCRAPE_EVERY;
    plan_init(&p);
    assert_int_equal(rollerrors_check(&re, &in, &p, msg, sizeof(msg), &failed), 0);
    assert_false(failed);
    assert_int_equal(calls(&p, &a), 1);
    assert_int_equal(rollerrors_call_of(a, &pod, &host, &ip), 0);
    assert_string_equal(pod, "c-apiserver-1");
    assert_string_equal(host, "c-apiserver.t.svc");
    assert_string_equal(ip, "10.0.0.11");
    assert_true(p.requeue_after == ROLLHEALTH_SCRAPE_EVERY / 2);
    rollerrors_answer(a, &good, in.now);
    plan_done(&p);

    /* Asked again only after ROLLHEALTH_SCRAPE_EVERY; a healthy answer fails nothing. */
    in.now += 1;
    plan_init(&p);
    assert_int_equal(rollerrors_check(&re, &in, &p, msg, sizeof(msg), &failed), 0);
    assert_false(failed);
    assert_int_equal(calls(&p, &a), 0);
    plan_done(&p);
    in.now += ROLLHEALTH_SCRAPE_EVERY;
    plan_init(&p);
    assert_int_equal(rollerrors_check(&re, &in, &p, msg, sizeof(msg), &failed), 0);
    assert_int_equal(calls(&p, &a), 1);
    rollerrors_answer(a, &bad, in.now);
    plan_done(&p);

    /* The answer that says it refuses: the roll failed, named by pod. */
    plan_init(&p);
    assert_int_equal(rollerrors_check(&re, &in, &p, msg, sizeof(msg), &failed), 0);
    assert_true(failed);
    assert_string_equal(msg, "pod c-apiserver-1: 170 of 200 API requests since it started were "
                             "refused or failed (429: 160, 5xx: 10, terminated: 0)");
    plan_done(&p);

    /* A new pod (another UID) starts from nothing. */
    put(&pods, "{\"metadata\":{\"namespace\":\"t\",\"name\":\"c-apiserver-1\",\"uid\":\"u9\","
               "\"labels\":{\"controller-revision-hash\":\"r2\"}},\"status\":{\"podIP\":"
               "\"10.0.0.12\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    plan_init(&p);
    assert_int_equal(rollerrors_check(&re, &in, &p, msg, sizeof(msg), &failed), 0);
    assert_false(failed);
    assert_int_equal(calls(&p, &a), 1);
    plan_done(&p);

    rollerrors_free(re);
    cJSON_Delete(sts);
    kube_store_done(&pods);
    kube_store_done(&secrets);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollerrors__counts_resource_requests_and_terminations),
        cmocka_unit_test(test_rollerrors__a_label_value_may_hold_quotes_commas_and_braces),
        cmocka_unit_test(test_rollerrors__decides_on_enough_requests_and_the_share_failed),
        cmocka_unit_test(test_rollerrors__scrapes_ready_new_pods_and_fails_the_one_that_refuses),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
