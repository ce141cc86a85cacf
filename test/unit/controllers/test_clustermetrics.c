#include "nested_sim.h"

#include <errno.h>
#include <time.h>

#include <ev.h>

#include "controllers/clustermetrics.h"
#include "lib/ctrl/metrics.h"
#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/kubeconfig.h"
#include "lib/pki/secret.h"
#include "lib/util/buf.h"
#include "lib/util/strutil.h"

#define DAY 86400.0

/* config/samples/standalone.yaml's control plane, with the uids the caches would hold. */
static const char standalone[] =
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControlPlane\n"
    "metadata:\n"
    "  name: standalone\n"
    "  uid: ncp-1\n"
    "  generation: 1\n"
    "  resourceVersion: '1'\n"
    "  labels: {cluster.x-k8s.io/cluster-name: standalone}\n"
    "spec:\n"
    "  version: 1.36.3\n"
    "  certificates: {keyAlgorithm: ECDSA-P256, extraSANs: [localhost, 127.0.0.1]}\n"
    "  etcd: {kind: NestedEtcd, name: standalone-etcd}\n"
    "  apiserver: {kind: NestedAPIServer, name: standalone-apiserver}\n"
    "  controllerManager: {kind: NestedControllerManager, name: standalone-controller-manager}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedEtcd\n"
    "metadata: {name: standalone-etcd, uid: etcd-1, generation: 1, resourceVersion: '1',\n"
    "           labels: {cluster.x-k8s.io/cluster-name: standalone}}\n"
    "spec: {replicas: 1}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedAPIServer\n"
    "metadata: {name: standalone-apiserver, uid: kas-1, generation: 1, resourceVersion: '1',\n"
    "           labels: {cluster.x-k8s.io/cluster-name: standalone}}\n"
    "spec: {replicas: 1}\n"
    "---\n"
    "apiVersion: controlplane.cluster.x-k8s.io/v1beta1\n"
    "kind: NestedControllerManager\n"
    "metadata: {name: standalone-controller-manager, uid: kcm-1, generation: 1,\n"
    "           resourceVersion: '1', labels: {cluster.x-k8s.io/cluster-name: standalone}}\n"
    "spec: {replicas: 1}\n";

/* The Secrets a cluster's expiry is computed from, besides the mounted certs Secrets. */
static const char *const managed[] = {"standalone-ca", "standalone-etcd", "standalone-proxy",
                                      "standalone-kubeconfig"};
static const char *const statefulsets[] = {"standalone-etcd", "standalone-apiserver",
                                           "standalone-controller-manager"};

struct fx {
    struct sim s;
    struct metrics *r;
    struct clustermetrics *cm;
    struct buf text;
    double t0; /* the clock when the simulation began; each pass takes a second */
};

static void fx_setup(struct fx *x, bool converge)
{
    memset(x, 0, sizeof(*x));
    sim_init(&x->s, converge ? standalone : NULL);
    x->t0 = x->s.f.view.now;
    if (converge)
        sim_converge(&x->s, 40);
    assert_int_equal(metrics_new(&x->r), 0);
    assert_int_equal(clustermetrics_new(x->r, &x->cm), 0);
}

static void fx_teardown(struct fx *x)
{
    buf_done(&x->text);
    clustermetrics_free(x->cm);
    metrics_free(x->r);
    sim_done(&x->s);
}

/* True for the expiry of a leaf certificate issued for a year during the simulation: a year
 * less the seconds since. */
static bool a_year_from_issue(const struct fx *x, double expiry)
{
    return expiry <= 365 * DAY && expiry >= 365 * DAY - (x->s.f.view.now - x->t0);
}

/* Updates from the caches and renders the registry into x->text. */
static void scrape(struct fx *x)
{
    assert_int_equal(clustermetrics_update(x->cm, &x->s.f.view), 0);
    buf_reset(&x->text);
    assert_int_equal(metrics_render(x->r, &x->text), 0);
}

/* The value of the sample `series` (name and labels as rendered) in text; fails when absent. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);

    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    fail_msg("no sample %s in:\n%s", series, text);
    return 0;
}

static bool has_sample(const char *text, const char *series)
{
    size_t n = strlen(series);

    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return true;
    return false;
}

#define EXPIRY "nestcp_certificate_expiry_seconds{namespace=\"default\",cluster=\"standalone\"}"

struct pair {
    char *crt, *key;
};

static void pair_done(struct pair *p)
{
    free(p->crt);
    free(p->key);
}

/* A CA (ca NULL) or a client certificate signed by ca, valid `days` from the caches' now. */
static struct pair issue(struct fx *x, const struct pair *ca, double days)
{
    struct pki_cert_spec spec;
    struct pair p = {NULL, NULL};
    struct err e;

    pki_cert_spec_init(&spec);
    assert_int_equal(pki_cert_spec_set_cn(&spec, ca ? "kubernetes-admin" : "test-ca", &e), 0);
    spec.is_ca = !ca;
    spec.ext_usage = PKI_EKU_CLIENT_AUTH;
    spec.now = (int64_t)x->s.f.view.now;
    spec.validity = (int64_t)(days * DAY);
    assert_int_equal(
        pki_cert_issue(ca ? ca->crt : NULL, ca ? ca->key : NULL, &spec, &p.crt, &p.key, &e), 0);
    pki_cert_spec_done(&spec);
    return p;
}

/* A kubeconfig whose client certificate is valid `days`. */
static char *kubeconfig(struct fx *x, double days)
{
    struct pair ca = issue(x, NULL, 3650), client = issue(x, &ca, days);
    struct pki_kubeconfig kc = {.cluster_name = "standalone",
                                .server = "https://standalone-apiserver.default.svc:6443",
                                .ca_cert_pem = ca.crt,
                                .client_cert_pem = client.crt,
                                .client_key_pem = client.key};
    char *yaml = NULL;
    struct err e;

    assert_int_equal(pki_kubeconfig_render(&kc, &yaml, &e), 0);
    pair_done(&client);
    pair_done(&ca);
    return yaml;
}

/* Sets data[key] of Secret ns/name (created, labelled for the cluster, when absent) to the
 * base64 of text, with a new resourceVersion, as a watch event would. */
static void set_secret_data(struct fx *x, const char *ns, const char *name, const char *key,
                            const char *text)
{
    static unsigned rv = 1;
    const cJSON *cur = kube_store_get(&x->s.f.stores[FX_SECRETS], ns, name);
    cJSON *s, *meta, *data;
    char *b64 = NULL, buf[32];

    if (cur) {
        s = cJSON_Duplicate(cur, true);
    } else {
        s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "apiVersion", "v1");
        cJSON_AddStringToObject(s, "kind", "Secret");
        meta = cJSON_AddObjectToObject(s, "metadata");
        cJSON_AddStringToObject(meta, "name", name);
        cJSON_AddStringToObject(meta, "namespace", ns);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "labels"), PKI_CLUSTER_NAME_LABEL,
                                "standalone");
    }
    meta = cJSON_GetObjectItemCaseSensitive(s, "metadata");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    snprintf(buf, sizeof(buf), "cm-%u", rv++);
    cJSON_AddStringToObject(meta, "resourceVersion", buf);
    if (!(data = cJSON_GetObjectItemCaseSensitive(s, "data")))
        data = cJSON_AddObjectToObject(s, "data");
    assert_int_equal(pki_base64_encode(text, strlen(text), &b64), 0);
    cJSON_DeleteItemFromObjectCaseSensitive(data, key);
    cJSON_AddStringToObject(data, key, b64);
    free(b64);
    fx_put_json(&x->s.f, s);
}

static const char *mounted(struct fx *x, const char *sts)
{
    const char *name = render_cluster_certs_mounted(fx_get(&x->s.f, FX_STATEFULSETS, sts));

    assert_non_null(name);
    return name;
}

/* The earliest NotAfter among the Secret's certificates, read the slow, independent way:
 * pki_cert_info_read and pki_kubeconfig_read. */
static void earliest_the_slow_way(const cJSON *secret, int64_t *earliest)
{
    const cJSON *item;

    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(secret, "data")) {
        unsigned char *text = NULL;
        size_t n;
        struct err e;
        int64_t t;
        assert_int_equal(pki_base64_decode(item->valuestring, strlen(item->valuestring),
                                           PKI_KUBECONFIG_MAX, &text, &n),
                         0);
        if (str_has_suffix(item->string, ".crt")) {
            struct pki_cert_info *info = NULL;
            assert_int_equal(pki_cert_info_read((char *)text, item->string, &info, &e), 0);
            t = info->not_after;
            pki_cert_info_free(info);
        } else if (str_has_suffix(item->string, ".conf") || !strcmp(item->string, "value")) {
            struct pki_kubeconfig_creds *c = NULL;
            struct pki_cert_info *info = NULL;
            assert_int_equal(pki_kubeconfig_read((char *)text, n, item->string, &c, &e), 0);
            assert_int_equal(pki_cert_info_read(c->client_cert_pem, item->string, &info, &e), 0);
            t = info->not_after;
            pki_cert_info_free(info);
            pki_kubeconfig_creds_free(c);
        } else {
            free(text);
            continue;
        }
        if (t < *earliest)
            *earliest = t;
        free(text);
    }
}

/* ---- phases ---- */

static void
test_clustermetrics__counts_control_planes_by_phase_with_every_phase_present(void **state)
{
    cJSON *old = NULL;
    struct fx x;

    fx_setup(&x, false);
    scrape(&x);
    /* No control plane yet: every phase is there, at zero. */
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Provisioning\"}") == 0);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Ready\"}") == 0);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Upgrading\"}") == 0);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Reconfiguring\"}") == 0);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Failed\"}") == 0);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Deleting\"}") == 0);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Unknown\"}") == 0);
    assert_true(sample(x.text.data, "nestcp_control_planes_ready") == 0);

    fx_put(&x.s.f, "kind: NestedControlPlane\n"
                   "metadata: {name: a}\n"
                   "status: {phase: Ready, ready: true}\n"
                   "---\n"
                   "kind: NestedControlPlane\n"
                   "metadata: {name: b, namespace: other}\n"
                   "status: {phase: Ready, ready: true}\n"
                   "---\n"
                   "kind: NestedControlPlane\n"
                   "metadata: {name: c}\n"
                   "status: {phase: Upgrading, ready: true}\n"
                   "---\n"
                   "kind: NestedControlPlane\n"
                   "metadata: {name: d}\n"
                   "status: {phase: Provisioning, ready: false}\n"
                   "---\n"
                   "kind: NestedControlPlane\n"
                   "metadata: {name: e}\n"
                   "---\n"
                   "kind: NestedControlPlane\n"
                   "metadata: {name: f}\n"
                   "status: {phase: Failed}\n");
    scrape(&x);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Ready\"}") == 2);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Upgrading\"}") == 1);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Provisioning\"}") == 1);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Reconfiguring\"}") == 0);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Deleting\"}") == 0);
    /* An invalid control plane is Failed; no status yet is Unknown. */
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Failed\"}") == 1);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Unknown\"}") == 1);
    assert_true(sample(x.text.data, "nestcp_control_planes_ready") == 3);
    /* Nothing to read certificates from: no expiry series. */
    assert_null(strstr(x.text.data, "nestcp_certificate_expiry_seconds{"));

    assert_int_equal(kube_store_remove(&x.s.f.stores[FX_CONTROL_PLANES], "default", "a", &old), 0);
    cJSON_Delete(old);
    scrape(&x);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Ready\"}") == 1);
    assert_true(sample(x.text.data, "nestcp_control_planes_ready") == 2);
    fx_teardown(&x);
}

static void test_clustermetrics__a_converged_cluster_is_ready(void **state)
{
    struct fx x;

    fx_setup(&x, true);
    scrape(&x);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Ready\"}") == 1);
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Unknown\"}") == 0);
    assert_true(sample(x.text.data, "nestcp_control_planes_ready") == 1);
    fx_teardown(&x);
}

/* ---- certificate expiry ---- */

static void test_clustermetrics__expiry_is_the_earliest_certificate_of_the_cluster(void **state)
{
    int64_t earliest = INT64_MAX;
    struct fx x;

    fx_setup(&x, true);
    scrape(&x);
    for (size_t i = 0; i < sizeof(managed) / sizeof(managed[0]); i++)
        earliest_the_slow_way(fx_get(&x.s.f, FX_SECRETS, managed[i]), &earliest);
    for (size_t i = 0; i < sizeof(statefulsets) / sizeof(statefulsets[0]); i++)
        earliest_the_slow_way(fx_get(&x.s.f, FX_SECRETS, mounted(&x, statefulsets[i])), &earliest);
    assert_true(sample(x.text.data, EXPIRY) == (double)earliest - x.s.f.view.now);
    /* The leaves: issued now for a year. */
    assert_true(a_year_from_issue(&x, sample(x.text.data, EXPIRY)));
    fx_teardown(&x);
}

/* The service-account key has no NotAfter: its age is the one figure to watch. */
static void test_clustermetrics__the_service_account_key_age_is_its_secrets(void **state)
{
    static const char series[] =
        "nestcp_service_account_key_age_seconds{namespace=\"default\",cluster=\"standalone\"}";
    struct fx x;
    double age;

    fx_setup(&x, true);
    scrape(&x);
    age = sample(x.text.data, series);
    assert_true(age >= 0 && age < DAY);
    x.s.f.view.now += 30 * DAY;
    scrape(&x);
    assert_true(sample(x.text.data, series) == age + 30 * DAY);
    assert_false(has_sample(x.text.data, "nestcp_service_account_key_age_seconds{namespace="
                                         "\"elsewhere\",cluster=\"standalone\"}"));
    /* A rotated key was made when its rotation started, long after its Secret. */
    {
        cJSON *sa = cJSON_Duplicate(fx_get(&x.s.f, FX_SECRETS, "standalone-sa"), true);
        cJSON *md = cJSON_GetObjectItemCaseSensitive(sa, "metadata"), *ann;
        char when[32];
        if (!(ann = cJSON_GetObjectItemCaseSensitive(md, "annotations")))
            ann = cJSON_AddObjectToObject(md, "annotations");
        time_format_rfc3339(x.s.f.view.now - 2 * DAY, when);
        cJSON_AddStringToObject(ann, PKI_SA_KEY_CREATED_ANNOTATION, when);
        cJSON_DeleteItemFromObjectCaseSensitive(md, "resourceVersion");
        cJSON_AddStringToObject(md, "resourceVersion", "rotated");
        fx_put_json(&x.s.f, sa);
    }
    scrape(&x);
    assert_true(sample(x.text.data, series) == 2 * DAY);
    fx_teardown(&x);
}

static void test_clustermetrics__each_managed_certificate_counts(void **state)
{
    struct fx x;
    struct pair ca, soon;
    char *kc;

    fx_setup(&x, true);
    /* A CA Secret's certificate. */
    ca = issue(&x, NULL, 3650);
    soon = issue(&x, NULL, 20);
    set_secret_data(&x, "default", "standalone-proxy", "tls.crt", soon.crt);
    scrape(&x);
    assert_true(sample(x.text.data, EXPIRY) == 20 * DAY);
    /* each CA has its own series: the front-proxy CA's is the one about to expire */
    assert_true(sample(x.text.data, "nestcp_ca_expiry_seconds{namespace=\"default\","
                                    "cluster=\"standalone\",ca=\"front-proxy\"}") == 20 * DAY);
    assert_true(sample(x.text.data, "nestcp_ca_expiry_seconds{namespace=\"default\","
                                    "cluster=\"standalone\",ca=\"cluster\"}") > 3000 * DAY);
    assert_true(sample(x.text.data, "nestcp_ca_expiry_seconds{namespace=\"default\","
                                    "cluster=\"standalone\",ca=\"etcd\"}") > 3000 * DAY);
    pair_done(&soon);

    /* The admin kubeconfig's client certificate. */
    kc = kubeconfig(&x, 10);
    set_secret_data(&x, "default", "standalone-kubeconfig", "value", kc);
    free(kc);
    scrape(&x);
    assert_true(sample(x.text.data, EXPIRY) == 10 * DAY);

    /* A kubeconfig in a mounted certs Secret. */
    kc = kubeconfig(&x, 5);
    set_secret_data(&x, "default", mounted(&x, "standalone-controller-manager"),
                    "controller-manager.conf", kc);
    free(kc);
    scrape(&x);
    assert_true(sample(x.text.data, EXPIRY) == 5 * DAY);

    /* A leaf in a mounted certs Secret; an expired one counts below zero. */
    soon = issue(&x, &ca, 1);
    set_secret_data(&x, "default", mounted(&x, "standalone-etcd"), "healthcheck-client.crt",
                    soon.crt);
    x.s.f.view.now += 2 * DAY;
    scrape(&x);
    assert_true(sample(x.text.data, EXPIRY) == -1 * DAY);
    pair_done(&soon);
    pair_done(&ca);
    fx_teardown(&x);
}

static void test_clustermetrics__certificates_nestcp_does_not_manage_do_not_count(void **state)
{
    struct fx x;
    struct pair ca, soon;

    fx_setup(&x, true);
    ca = issue(&x, NULL, 3650);
    soon = issue(&x, &ca, 1);
    /* A superseded certs Secret no StatefulSet mounts, a user's Secret with the cluster
     * label, the service-account Secret, and a key beside a certificate. */
    set_secret_data(&x, "default", "standalone-etcd-certs-0123456789", "ca.crt", soon.crt);
    set_secret_data(&x, "default", "standalone-extra", "tls.crt", soon.crt);
    set_secret_data(&x, "default", "standalone-sa", "tls.crt", soon.crt);
    set_secret_data(&x, "default", "standalone-ca", "extra.pem", soon.crt);
    /* The same names in another namespace. */
    set_secret_data(&x, "elsewhere", "standalone-ca", "tls.crt", soon.crt);
    scrape(&x);
    assert_true(a_year_from_issue(&x, sample(x.text.data, EXPIRY)));
    assert_false(has_sample(x.text.data, "nestcp_certificate_expiry_seconds{namespace="
                                         "\"elsewhere\",cluster=\"standalone\"}"));
    assert_false(has_sample(x.text.data, "nestcp_ca_expiry_seconds{namespace=\"elsewhere\","
                                         "cluster=\"standalone\",ca=\"cluster\"}"));
    pair_done(&soon);
    pair_done(&ca);
    fx_teardown(&x);
}

static void test_clustermetrics__unreadable_certificates_are_skipped(void **state)
{
    struct fx x;

    fx_setup(&x, true);
    set_secret_data(&x, "default", "standalone-proxy", "tls.crt", "not a certificate");
    set_secret_data(&x, "default", "standalone-kubeconfig", "value", "users: [{user: 7}]");
    set_secret_data(&x, "default", mounted(&x, "standalone-apiserver"), "apiserver.crt",
                    "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    scrape(&x);
    assert_true(a_year_from_issue(&x, sample(x.text.data, EXPIRY)));

    /* A cluster none of whose certificates reads has no series. */
    fx_put(&x.s.f, "kind: NestedControlPlane\n"
                   "metadata: {name: broken, labels: {cluster.x-k8s.io/cluster-name: broken}}\n"
                   "---\n"
                   "kind: Secret\n"
                   "metadata: {name: broken-ca, resourceVersion: '1'}\n"
                   "data: {tls.crt: '!!!'}\n"
                   "---\n"
                   "kind: Secret\n"
                   "metadata: {name: broken-etcd, resourceVersion: '1'}\n"
                   "data: [1, 2]\n"
                   "---\n"
                   "kind: Secret\n"
                   "metadata: {name: broken-kubeconfig, resourceVersion: '1'}\n"
                   "data: {value: 'Og=='}\n");
    scrape(&x);
    assert_false(has_sample(x.text.data, "nestcp_certificate_expiry_seconds{namespace="
                                         "\"default\",cluster=\"broken\"}"));
    assert_true(a_year_from_issue(&x, sample(x.text.data, EXPIRY)));
    fx_teardown(&x);
}

static void test_clustermetrics__reads_a_secret_again_only_when_it_changes(void **state)
{
    struct fx x;
    cJSON *old = NULL;
    char *kc;
    size_t read;

    fx_setup(&x, true);
    scrape(&x);
    /* Four Secrets by name and the three mounted certs Secrets. */
    assert_int_equal(clustermetrics_secrets_read(x.cm), 7);
    assert_int_equal(clustermetrics_secrets_remembered(x.cm), 7);
    scrape(&x);
    scrape(&x);
    assert_int_equal(clustermetrics_secrets_read(x.cm), 7);

    kc = kubeconfig(&x, 100);
    set_secret_data(&x, "default", "standalone-kubeconfig", "value", kc);
    free(kc);
    scrape(&x);
    assert_int_equal(clustermetrics_secrets_read(x.cm), 8);
    assert_true(sample(x.text.data, EXPIRY) == 100 * DAY);

    /* The control plane goes: its series and what was remembered for it go too. */
    read = clustermetrics_secrets_read(x.cm);
    assert_int_equal(
        kube_store_remove(&x.s.f.stores[FX_CONTROL_PLANES], "default", "standalone", &old), 0);
    cJSON_Delete(old);
    scrape(&x);
    assert_false(has_sample(x.text.data, EXPIRY));
    assert_int_equal(clustermetrics_secrets_remembered(x.cm), 0);
    assert_int_equal(clustermetrics_secrets_read(x.cm), read);
    fx_teardown(&x);
}

/* ---- scrape cost ---- */

static double mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct clone {
    struct fixture *f;
    int n;
};

static bool clone_one(void *userdata, const cJSON *obj)
{
    struct clone *c = userdata;
    char ns[16];

    if (strcmp(kube_obj_namespace(obj), "default") != 0)
        return true;
    for (int i = 0; i < c->n; i++) {
        cJSON *copy = cJSON_Duplicate(obj, true);
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(copy, "metadata");
        snprintf(ns, sizeof(ns), "t%03d", i);
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "namespace");
        cJSON_AddStringToObject(meta, "namespace", ns);
        fx_put_json(c->f, copy);
    }
    return true;
}

/* 100 converged clusters' worth of control planes, StatefulSets and Secrets (copies of one
 * cluster's, each in a namespace of its own). Prints what a scrape costs; asserts only what
 * it reads. */
static void test_clustermetrics__scrape_cost_with_100_clusters(void **state)
{
    static const enum fx_store copied[] = {FX_CONTROL_PLANES, FX_STATEFULSETS, FX_SECRETS};
    struct clone c = {.n = 100};
    struct fixture big;
    struct fx x;
    double t0, t1, t2, t3;
    size_t secrets;

    fx_setup(&x, true);
    fx_init(&big);
    big.view.now = x.s.f.view.now;
    c.f = &big;
    for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++)
        kube_store_foreach(&x.s.f.stores[copied[i]], clone_one, &c);
    secrets = kube_store_count(&big.stores[FX_SECRETS]);

    t0 = mono();
    assert_int_equal(clustermetrics_update(x.cm, &big.view), 0);
    t1 = mono();
    assert_int_equal(clustermetrics_secrets_read(x.cm), 700);
    for (int i = 0; i < 10; i++)
        assert_int_equal(clustermetrics_update(x.cm, &big.view), 0);
    t2 = mono();
    assert_int_equal(clustermetrics_secrets_read(x.cm), 700);
    buf_reset(&x.text);
    assert_int_equal(metrics_render(x.r, &x.text), 0);
    t3 = mono();
    assert_true(sample(x.text.data, "nestcp_control_planes{phase=\"Ready\"}") == 100);
    assert_true(a_year_from_issue(&x, sample(x.text.data,
                                             "nestcp_certificate_expiry_seconds{namespace=\"t042\","
                                             "cluster=\"standalone\"}")));
    print_message("clustermetrics: 100 clusters, %zu Secrets cached, 700 read: first scrape "
                  "%.1f ms (%.1f us per Secret); later scrapes %.3f ms; render %.3f ms, "
                  "%zu bytes\n",
                  secrets, (t1 - t0) * 1e3, (t1 - t0) * 1e6 / 700, (t2 - t1) * 1e3 / 10,
                  (t3 - t2) * 1e3, x.text.len);
    fx_done(&big);
    fx_teardown(&x);
}

/* ---- the manager's collector ---- */

static int refuse_send(void *ctx, const struct kube_request *req, kube_done_fn done, void *userdata)
{
    return -ENOTSUP;
}

static void test_clustermetrics__attached_to_a_manager_updates_at_every_scrape(void **state)
{
    struct manager_opts o = {.send = refuse_send};
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct clustermetrics *cm = NULL;
    struct manager *m = NULL;
    struct buf text = BUF_INIT;
    struct err e;

    assert_non_null(loop);
    caches_manager_opts(&o);
    assert_int_equal(manager_new(loop, NULL, &o, &m, &e), 0);
    assert_int_equal(clustermetrics_new(manager_metrics(m), &cm), 0);
    assert_int_equal(clustermetrics_new(manager_metrics(m), &(struct clustermetrics *){NULL}),
                     -EEXIST);
    assert_int_equal(clustermetrics_attach(cm, m), 0);
    assert_int_equal(metrics_render(manager_metrics(m), &text), 0);
    /* The manager's caches are empty without a client: every phase at zero. */
    assert_true(sample(text.data, "nestcp_control_planes{phase=\"Ready\"}") == 0);
    assert_true(sample(text.data, "nestcp_control_planes{phase=\"Unknown\"}") == 0);
    assert_true(sample(text.data, "nestcp_control_planes_ready") == 0);
    assert_non_null(strstr(text.data, "# TYPE nestcp_certificate_expiry_seconds gauge\n"));
    buf_done(&text);
    manager_free(m);
    clustermetrics_free(cm);
    ev_loop_destroy(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_clustermetrics__counts_control_planes_by_phase_with_every_phase_present),
        cmocka_unit_test(test_clustermetrics__a_converged_cluster_is_ready),
        cmocka_unit_test(test_clustermetrics__expiry_is_the_earliest_certificate_of_the_cluster),
        cmocka_unit_test(test_clustermetrics__the_service_account_key_age_is_its_secrets),
        cmocka_unit_test(test_clustermetrics__each_managed_certificate_counts),
        cmocka_unit_test(test_clustermetrics__certificates_nestcp_does_not_manage_do_not_count),
        cmocka_unit_test(test_clustermetrics__unreadable_certificates_are_skipped),
        cmocka_unit_test(test_clustermetrics__reads_a_secret_again_only_when_it_changes),
        cmocka_unit_test(test_clustermetrics__scrape_cost_with_100_clusters),
        cmocka_unit_test(test_clustermetrics__attached_to_a_manager_updates_at_every_scrape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
