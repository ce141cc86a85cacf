/*
 * The NetworkPolicies the packages render, evaluated as a NetworkPolicy implementation would
 * (the test super cluster enforces none): against the labels the rendered pod templates really
 * give two clusters' pods in one namespace, and the labels and namespace config/ gives the
 * manager's pod. etcd's client and peer ports admit only the cluster's own etcd members (both),
 * its API servers (client) and the manager (client); the API server's port admits anyone, or
 * with apiServerAllowedCIDRs those ranges and the cluster's own pods.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/catalog.h"
#include "lib/render/render.h"
#include "lib/util/yamlconv.h"

static struct render_catalog *catalog;
static char source_dir[4096];

static int setup(void **state)
{
    const char *src = getenv("NESTCP_SOURCE_DIR");
    char dir[4200];
    struct err e = {0};

    snprintf(source_dir, sizeof(source_dir), "%s", src ? src : ".");
    snprintf(dir, sizeof(dir), "%s/templates", source_dir);
    if (render_catalog_open(dir, &catalog, &e) < 0) {
        print_error("catalog %s: %s\n", dir, e.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    render_catalog_free(catalog);
    return 0;
}

/* A pod as a NetworkPolicy sees it: its namespace (and that namespace's labels), its labels,
 * its IP. */
struct peer {
    const char *name;
    const char *ns;
    cJSON *ns_labels, *labels; /* owned */
    const char *ip;
};

static const cJSON *at(const cJSON *o, const char *path)
{
    char key[64];

    while (o && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, path);
        o = cJSON_GetObjectItemCaseSensitive(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

/* matchLabels semantics: every pair of sel is among labels (an empty selector matches all). */
static bool selects(const cJSON *selector, const cJSON *labels)
{
    const cJSON *kv;

    cJSON_ArrayForEach(kv, at(selector, "matchLabels")) {
        const cJSON *have = cJSON_GetObjectItemCaseSensitive(labels, kv->string);
        if (!cJSON_IsString(have) || strcmp(have->valuestring, kv->valuestring) != 0)
            return false;
    }
    assert_null(at(selector, "matchExpressions")); /* not evaluated here */
    return true;
}

static bool in_cidr(const char *ip, const char *cidr)
{
    char net[64];
    struct in_addr a, n;
    const char *slash = strchr(cidr, '/');
    int bits = slash ? atoi(slash + 1) : 32;
    uint32_t mask = bits ? htonl(~0u << (32 - bits)) : 0;

    snprintf(net, sizeof(net), "%.*s", (int)(slash ? slash - cidr : (long)strlen(cidr)), cidr);
    if (!ip || inet_pton(AF_INET, ip, &a) != 1 || inet_pton(AF_INET, net, &n) != 1)
        return false;
    return (a.s_addr & mask) == (n.s_addr & mask);
}

static bool peer_matches(const cJSON *from, const char *policy_ns, const struct peer *p)
{
    const cJSON *ps = at(from, "podSelector"), *nss = at(from, "namespaceSelector");
    const cJSON *ipb = at(from, "ipBlock");

    if (ipb)
        return in_cidr(p->ip, at(ipb, "cidr")->valuestring);
    if (nss && !selects(nss, p->ns_labels))
        return false;
    if (!nss && strcmp(p->ns, policy_ns) != 0)
        return false; /* a podSelector alone: pods of the policy's namespace */
    return !ps || selects(ps, p->labels);
}

/* Whether the policies admit p to port on a pod with target labels in policy_ns: a pod no
 * policy selects admits everything; otherwise some rule of a policy that selects it must. */
static bool admits(const cJSON *policies, const char *policy_ns, const cJSON *target, int port,
                   const struct peer *p)
{
    const cJSON *pol, *rule, *from, *pt;
    bool selected = false;

    cJSON_ArrayForEach(pol, policies) {
        if (!selects(at(pol, "spec.podSelector"), target))
            continue;
        selected = true;
        cJSON_ArrayForEach(rule, at(pol, "spec.ingress")) {
            bool port_ok = !at(rule, "ports"), peer_ok = !at(rule, "from");
            cJSON_ArrayForEach(pt, at(rule, "ports")) {
                port_ok = port_ok || at(pt, "port")->valueint == port;
            }
            cJSON_ArrayForEach(from, at(rule, "from")) {
                peer_ok = peer_ok || peer_matches(from, policy_ns, p);
            }
            if (port_ok && peer_ok)
                return true;
        }
    }
    return !selected;
}

/* Renders component of cluster in ns1 (with extra values) and appends its NetworkPolicies to
 * policies; returns the pod template's labels (caller frees). */
static cJSON *render_into(const char *cluster, const char *component, const char *version,
                          const char *extra, cJSON *policies)
{
    char values[2048];
    cJSON *v = NULL, *objs = NULL, *labels = NULL, *o;
    struct err e = {0};

    snprintf(values, sizeof(values),
             "cluster: {name: %s, namespace: ns1}\ncomponent: %s\nversion: %s\n"
             "etcd: {replicas: 3}\n%s",
             cluster, component, version, extra ? extra : "");
    assert_int_equal(yamlconv_parse_one(values, strlen(values), "values", &v, &e), 0);
    if (render_component(catalog, v, &objs, &e) < 0)
        fail_msg("%s", e.msg);
    cJSON_ArrayForEach(o, objs) {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(o, "kind"));
        if (strcmp(kind, "StatefulSet") == 0)
            labels = cJSON_Duplicate(at(o, "spec.template.metadata.labels"), true);
        if (strcmp(kind, "NetworkPolicy") == 0) {
            assert_string_equal(at(o, "metadata.namespace")->valuestring, "ns1");
            cJSON_AddItemToArray(policies, cJSON_Duplicate(o, true));
        }
    }
    cJSON_Delete(objs);
    cJSON_Delete(v);
    assert_non_null(labels);
    return labels;
}

static cJSON *ns_labels(const char *ns)
{
    cJSON *l = cJSON_CreateObject();

    cJSON_AddStringToObject(l, "kubernetes.io/metadata.name", ns);
    return l;
}

/* The manager's pod as config/ installs it: config/manager's pod template labels, in
 * config/default's namespace. */
static void manager_pod(struct peer *p, char ns[64])
{
    char path[4200], *text = NULL;
    cJSON *docs = NULL, *d;
    const cJSON *labels = NULL;
    struct err e = {0};

    snprintf(path, sizeof(path), "%s/config/default/kustomization.yaml", source_dir);
    assert_int_equal(util_read_file(path, 1 << 20, &text, NULL), 0);
    assert_int_equal(yamlconv_parse_one(text, strlen(text), path, &d, &e), 0);
    snprintf(ns, 64, "%s", at(d, "namespace")->valuestring);
    cJSON_Delete(d);
    free(text);
    snprintf(path, sizeof(path), "%s/config/manager/manager.yaml", source_dir);
    assert_int_equal(util_read_file(path, 1 << 20, &text, NULL), 0);
    assert_int_equal(yamlconv_parse_all(text, strlen(text), path, &docs, &e), 0);
    cJSON_ArrayForEach(d, docs) {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "kind")), "Deployment") == 0)
            labels = at(d, "spec.template.metadata.labels");
    }
    assert_non_null(labels);
    *p = (struct peer){"manager", ns, ns_labels(ns), cJSON_Duplicate(labels, true), "10.1.0.9"};
    cJSON_Delete(docs);
    free(text);
}

/* A pod of namespace ns1 with a copy of labels. */
static struct peer tenant_pod(const char *name, const cJSON *labels)
{
    return (struct peer){name, "ns1", ns_labels("ns1"), cJSON_Duplicate(labels, true), NULL};
}

static void peer_done(struct peer *p)
{
    cJSON_Delete(p->ns_labels);
    cJSON_Delete(p->labels);
}

static void test_network_policy__etcd_admits_only_its_cluster_and_the_manager(void **state)
{
    cJSON *policies = cJSON_CreateArray(), *other = cJSON_CreateArray();
    char mns[64];
    struct peer mgr, p[7];
    cJSON *c1_etcd = render_into("c1", "etcd", "3.6.17", NULL, policies);
    cJSON *c1_kas = render_into("c1", "kube-apiserver", "1.37.2", NULL, policies);
    cJSON *c1_kcm = render_into("c1", "kube-controller-manager", "1.37.2", NULL, policies);
    cJSON *c2_etcd = render_into("c2", "etcd", "3.6.17", NULL, other);
    cJSON *c2_kas = render_into("c2", "kube-apiserver", "1.37.2", NULL, other);
    /* Who knocks: name, namespace, labels. */
    enum { ETCD1, KAS1, KCM1, ETCD2, KAS2, FAKE_MGR, STRANGER };
    static const int ports[] = {2379, 2380, 2381};
    /* want[peer][port]: admitted to c1's etcd */
    static const bool want[7][3] = {
        [ETCD1] = {true, true, true},      [KAS1] = {true, false, true},
        [KCM1] = {false, false, true},     [ETCD2] = {false, false, true},
        [KAS2] = {false, false, true},     [FAKE_MGR] = {false, false, true},
        [STRANGER] = {false, false, true},
    };

    assert_int_equal(cJSON_GetArraySize(policies), 2); /* etcd's and the API server's */
    manager_pod(&mgr, mns);
    p[ETCD1] = tenant_pod("c1 etcd", c1_etcd);
    p[KAS1] = tenant_pod("c1 kube-apiserver", c1_kas);
    p[KCM1] = tenant_pod("c1 controller manager", c1_kcm);
    p[ETCD2] = tenant_pod("c2 etcd", c2_etcd);
    p[KAS2] = tenant_pod("c2 kube-apiserver", c2_kas);
    p[FAKE_MGR] = tenant_pod("a pod labelled as the manager in the tenant's namespace", mgr.labels);
    p[STRANGER] = (struct peer){"an unlabelled pod of the manager's namespace", mns, ns_labels(mns),
                                cJSON_CreateObject(), NULL};
    for (int i = 0; i < 7; i++)
        for (int k = 0; k < 3; k++)
            if (admits(policies, "ns1", c1_etcd, ports[k], &p[i]) != want[i][k])
                fail_msg("c1's etcd port %d: %s is %s", ports[k], p[i].name,
                         want[i][k] ? "refused" : "admitted");
    assert_true(admits(policies, "ns1", c1_etcd, 2379, &mgr));
    assert_false(admits(policies, "ns1", c1_etcd, 2380, &mgr));
    /* c1's policies select c1's etcd and API server pods and nobody else's. */
    assert_true(admits(policies, "ns1", c2_etcd, 2380, &p[STRANGER]));
    assert_true(admits(policies, "ns1", c1_kcm, 10257, &p[STRANGER]));
    /* The API server: any source on its port by default. */
    assert_true(admits(policies, "ns1", c1_kas, 6443, &p[STRANGER]));
    assert_true(admits(policies, "ns1", c1_kas, 6443, &p[KAS2]));
    for (int i = 0; i < 7; i++)
        peer_done(&p[i]);
    peer_done(&mgr);
    cJSON_Delete(c1_etcd);
    cJSON_Delete(c1_kas);
    cJSON_Delete(c1_kcm);
    cJSON_Delete(c2_etcd);
    cJSON_Delete(c2_kas);
    cJSON_Delete(policies);
    cJSON_Delete(other);
}

static void test_network_policy__the_api_server_admits_the_configured_ranges(void **state)
{
    cJSON *policies = cJSON_CreateArray(), *scratch = cJSON_CreateArray();
    cJSON *c1_kas =
        render_into("c1", "kube-apiserver", "1.36.3",
                    "networkPolicy: {apiServerAllowedCIDRs: [203.0.113.0/24]}\n", policies);
    cJSON *c1_kcm = render_into("c1", "kube-controller-manager", "1.36.3", NULL, scratch);
    cJSON *c2_kcm = render_into("c2", "kube-controller-manager", "1.36.3", NULL, scratch);
    struct peer in = {"a client in range", "elsewhere", ns_labels("elsewhere"),
                      cJSON_CreateObject(), "203.0.113.7"};
    struct peer out = {"a client out of range", "elsewhere", ns_labels("elsewhere"),
                       cJSON_CreateObject(), "198.51.100.7"};
    struct peer kcm1 = {"c1's controller manager", "ns1", ns_labels("ns1"), c1_kcm, "10.2.0.5"};
    struct peer kcm2 = {"c2's controller manager", "ns1", ns_labels("ns1"), c2_kcm, "10.2.0.6"};

    assert_int_equal(cJSON_GetArraySize(policies), 1);
    assert_true(admits(policies, "ns1", c1_kas, 6443, &in));
    assert_false(admits(policies, "ns1", c1_kas, 6443, &out));
    assert_true(admits(policies, "ns1", c1_kas, 6443, &kcm1));
    assert_false(admits(policies, "ns1", c1_kas, 6443, &kcm2));
    assert_false(admits(policies, "ns1", c1_kas, 2379, &in));
    peer_done(&in);
    peer_done(&out);
    peer_done(&kcm1);
    peer_done(&kcm2);
    cJSON_Delete(c1_kas);
    cJSON_Delete(policies);
    cJSON_Delete(scratch);
}

static void test_network_policy__switched_off_none_is_rendered(void **state)
{
    cJSON *policies = cJSON_CreateArray();
    cJSON *l1 = render_into("c1", "etcd", "3.5.36", "networkPolicy: {enabled: false}\n", policies);
    cJSON *l2 = render_into("c1", "kube-apiserver", "1.35.4", "networkPolicy: {enabled: false}\n",
                            policies);

    assert_int_equal(cJSON_GetArraySize(policies), 0);
    cJSON_Delete(l1);
    cJSON_Delete(l2);
    cJSON_Delete(policies);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_network_policy__etcd_admits_only_its_cluster_and_the_manager),
        cmocka_unit_test(test_network_policy__the_api_server_admits_the_configured_ranges),
        cmocka_unit_test(test_network_policy__switched_off_none_is_rendered),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
