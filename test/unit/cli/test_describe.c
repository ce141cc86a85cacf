#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/nestcp/describe.h"
#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/kubeconfig.h"

#define NOW ((int64_t)1800000000) /* 2027-01-15 08:00 UTC */

static cJSON *parse(const char *json)
{
    cJSON *o = cJSON_Parse(json);

    assert_non_null(o);
    return o;
}

static void test_describe__status_of_objects(void **state)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"kind\":\"NestedControlPlane\",\"status\":{\"version\":\"v1.36.3\",\"phase\":\"Ready\","
         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Ready\"}],"
         "\"rollout\":{\"step\":\"\",\"targetVersion\":\"v1.36.3\"}}}",
         "Ready: True, version v1.36.3, phase Ready, target v1.36.3"},
        {"{\"kind\":\"NestedControlPlane\",\"status\":{\"version\":\"v1.36.3\",\"phase\":"
         "\"Upgrading\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":"
         "\"RollingOut\",\"message\":\"kube-apiserver 0/1\\nupdated\"}],"
         "\"rollout\":{\"step\":\"apiserver\",\"targetVersion\":\"v1.37.2\"}}}",
         "Ready: False (RollingOut): kube-apiserver 0/1 updated, version v1.36.3, phase Upgrading, "
         "rolling out v1.37.2: waiting on apiserver"},
        {"{\"kind\":\"NestedEtcd\",\"status\":{\"version\":\"3.6.17\",\"phase\":\"Ready\","
         "\"replicas\":3,\"readyReplicas\":2,\"conditions\":[{\"type\":\"Ready\","
         "\"status\":\"Unknown\"}]}}",
         "Ready: Unknown, version 3.6.17, phase Ready, 2/3 ready"},
        {"{\"kind\":\"NestedAPIServer\",\"metadata\":{\"name\":\"x\"}}", "Ready: -"},
        /* Cluster API's Cluster: v1beta1 has Ready, v1beta2 Available as its summary. */
        {"{\"kind\":\"Cluster\",\"status\":{\"phase\":\"Provisioned\",\"conditions\":"
         "[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
         "Ready: True, phase Provisioned"},
        {"{\"kind\":\"Cluster\",\"status\":{\"phase\":\"Provisioned\",\"conditions\":"
         "[{\"type\":\"Available\",\"status\":\"False\",\"reason\":\"NotAvailable\"}]}}",
         "Available: False (NotAvailable), phase Provisioned"},
        {"{\"kind\":\"Cluster\",\"status\":{\"phase\":\"Pending\"}}", "Ready: -, phase Pending"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct buf out = BUF_INIT;
        cJSON *o = parse(cases[i].json);

        assert_int_equal(describe_object_status(o, &out), 0);
        assert_string_equal(out.data, cases[i].want);
        buf_done(&out);
        cJSON_Delete(o);
    }
}

static void test_describe__statefulsets_pods_and_expiry(void **state)
{
    struct buf out = BUF_INIT;
    cJSON *sts = parse("{\"spec\":{\"replicas\":3},\"status\":{\"readyReplicas\":3,"
                       "\"updatedReplicas\":1,\"currentRevision\":\"a-1\",\"updateRevision\":"
                       "\"a-2\"}}");
    cJSON *pod = parse("{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":"
                       "\"Ready\",\"status\":\"True\"}]}}");
    struct describe_expiry x = {.secret = "s", .not_after = NOW + 364 * 86400 + 100};

    snprintf(x.key, sizeof(x.key), "apiserver.crt");
    assert_int_equal(describe_statefulset_status(sts, &out), 0);
    assert_string_equal(out.data, "3/3 ready, 1 updated, rolling out a-1 -> a-2");
    buf_reset(&out);
    assert_int_equal(describe_pod_status(pod, &out), 0);
    assert_string_equal(out.data, "Ready: True, Running");
    buf_reset(&out);
    assert_int_equal(describe_expiry_status(&x, NOW, &out), 0);
    assert_string_equal(out.data,
                        "certificates expire 2028-01-14 08:01 UTC (in 364 days, apiserver.crt)");
    buf_reset(&out);
    x.not_after = NOW + 5 * 3600;
    assert_int_equal(describe_expiry_status(&x, NOW, &out), 0);
    assert_string_equal(out.data,
                        "certificates expire 2027-01-15 13:00 UTC (in 5 hours, apiserver.crt)");
    buf_reset(&out);
    x.not_after = NOW - 3 * 86400;
    assert_int_equal(describe_expiry_status(&x, NOW, &out), 0);
    assert_string_equal(out.data,
                        "certificates EXPIRED 2027-01-12 08:00 UTC (3 days ago, apiserver.crt)");
    buf_done(&out);
    cJSON_Delete(sts);
    cJSON_Delete(pod);
}

/* Issues a certificate valid for days from NOW. */
static void issue(const char *ca_crt, const char *ca_key, const char *cn, int days, char **crt,
                  char **key)
{
    struct pki_cert_spec s;

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, cn, NULL), 0);
    s.is_ca = !ca_crt;
    s.ext_usage = PKI_EKU_CLIENT_AUTH;
    s.validity = (int64_t)days * 86400;
    s.now = NOW;
    assert_int_equal(pki_cert_issue(ca_crt, ca_key, &s, crt, key, NULL), 0);
    pki_cert_spec_done(&s);
}

static void add_data(cJSON *data, const char *key, const char *text)
{
    char *b64;

    assert_int_equal(pki_base64_encode(text, strlen(text), &b64), 0);
    cJSON_AddStringToObject(data, key, b64);
    free(b64);
}

static void test_describe__secret_expiry_reads_certificates_only(void **state)
{
    char *ca_crt, *ca_key, *crt, *key, *cm_crt, *cm_key, *conf;
    struct pki_kubeconfig kc = {.cluster_name = "c", .server = "https://c-apiserver.ns.svc:6443"};
    struct describe_expiry x = {0};
    cJSON *secret = parse("{\"data\":{}}"), *data = cJSON_GetObjectItem(secret, "data");
    int64_t want;

    issue(NULL, NULL, "ca", 3650, &ca_crt, &ca_key);
    issue(ca_crt, ca_key, "apiserver", 365, &crt, &key);
    issue(ca_crt, ca_key, "system:kube-controller-manager", 200, &cm_crt, &cm_key);
    kc.ca_cert_pem = ca_crt;
    kc.client_cert_pem = cm_crt;
    kc.client_key_pem = cm_key;
    assert_int_equal(pki_kubeconfig_render(&kc, &conf, NULL), 0);

    add_data(data, "ca.crt", ca_crt);
    add_data(data, "apiserver.crt", crt);
    add_data(data, "apiserver.key", key);
    describe_secret_expiry(secret, &x);
    assert_int_equal(x.code, 0);
    assert_int_equal(pki_cert_not_after(crt, NULL, &want, NULL), 0);
    assert_int_equal(x.not_after, want);
    assert_string_equal(x.key, "apiserver.crt");

    /* A kubeconfig's client certificate counts, and here expires first. */
    add_data(data, "controller-manager.conf", conf);
    describe_secret_expiry(secret, &x);
    assert_int_equal(x.code, 0);
    assert_int_equal(pki_cert_not_after(cm_crt, NULL, &want, NULL), 0);
    assert_int_equal(x.not_after, want);
    assert_string_equal(x.key, "controller-manager.conf");

    /* A damaged certificate is named; a key that is not a certificate is never looked at. */
    cJSON_ReplaceItemInObject(data, "apiserver.key", cJSON_CreateString("bm90IGEga2V5"));
    cJSON_ReplaceItemInObject(data, "apiserver.crt", cJSON_CreateString("bm90IGEgY2VydA=="));
    describe_secret_expiry(secret, &x);
    assert_int_equal(x.code, -EINVAL);
    assert_non_null(strstr(x.msg, "apiserver.crt"));

    cJSON_Delete(secret);
    secret = parse("{\"data\":{\"sa.key\":\"eA==\"}}");
    describe_secret_expiry(secret, &x);
    assert_int_equal(x.code, -ENOENT);
    cJSON_Delete(secret);
    free(ca_crt);
    free(ca_key);
    free(crt);
    free(key);
    free(cm_crt);
    free(cm_key);
    free(conf);
}

static void test_describe__tree_of_a_standalone_control_plane(void **state)
{
    struct describe_input in = {.ns = "ns", .cluster_name = "c", .now = NOW};
    struct tree *t = tree_new();
    struct buf out = BUF_INIT;

    in.ncp = parse("{\"kind\":\"NestedControlPlane\",\"metadata\":{\"name\":\"c\"},"
                   "\"status\":{\"version\":\"v1.36.3\",\"phase\":\"Ready\",\"conditions\":"
                   "[{\"type\":\"Ready\",\"status\":\"True\"}],\"rollout\":{\"targetVersion\":"
                   "\"v1.36.3\",\"components\":{\"etcd\":{\"version\":\"3.6.17\"},"
                   "\"apiserver\":{\"version\":\"1.36.3\"}}}}}");
    in.comps[RENDER_PART_ETCD].ref_name = "c-etcd";
    in.comps[RENDER_PART_ETCD].obj =
        parse("{\"kind\":\"NestedEtcd\",\"metadata\":{\"name\":\"c-etcd\"},\"status\":{"
              "\"version\":\"3.6.17\",\"replicas\":1,\"readyReplicas\":1,\"conditions\":"
              "[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    in.comps[RENDER_PART_ETCD].statefulset =
        parse("{\"metadata\":{\"name\":\"c-etcd\"},\"spec\":{\"replicas\":1},\"status\":"
              "{\"readyReplicas\":1,\"updatedReplicas\":1}}");
    in.comps[RENDER_PART_ETCD].pods =
        parse("[{\"metadata\":{\"name\":\"c-etcd-0\"},\"status\":{\"phase\":\"Running\","
              "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}]");
    in.comps[RENDER_PART_ETCD].certs =
        (struct describe_expiry){.secret = "c-etcd-certs-abc", .not_after = NOW + 30 * 86400};
    snprintf(in.comps[RENDER_PART_ETCD].certs.key, 128, "c-etcd-0-peer.crt");
    in.comps[RENDER_PART_APISERVER].ref_name = "c-apiserver";
    in.comps[RENDER_PART_APISERVER].obj =
        parse("{\"kind\":\"NestedAPIServer\",\"metadata\":{\"name\":\"c-apiserver\"},"
              "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
              "\"reason\":\"Creating\",\"message\":\"creating the StatefulSet\"}]}}");
    in.kubeconfig = (struct describe_expiry){.secret = "c-kubeconfig", .code = -ENOENT};
    snprintf(in.kubeconfig.msg, sizeof(in.kubeconfig.msg), "the Secret does not exist");

    assert_int_equal(describe_build(&in, t), 0);
    assert_int_equal(tree_render(t, &out), 0);
    assert_string_equal(
        out.data,
        "OBJECT                          STATUS\n"
        "NestedControlPlane ns/c         Ready: True, version v1.36.3, phase Ready, target "
        "v1.36.3\n"
        "├─NestedEtcd c-etcd             Ready: True, version 3.6.17, 1/1 ready, target 3.6.17\n"
        "│ ├─StatefulSet c-etcd          1/1 ready, 1 updated\n"
        "│ │ └─Pod c-etcd-0              Ready: True, Running\n"
        "│ └─Secret c-etcd-certs-abc     certificates expire 2027-02-14 08:00 UTC (in 30 days, "
        "c-etcd-0-peer.crt)\n"
        "├─NestedAPIServer c-apiserver   Ready: False (Creating): creating the StatefulSet, "
        "target 1.36.3\n"
        "│ └─StatefulSet -               not created yet\n"
        "├─NestedControllerManager -     not found (the control plane names none)\n"
        "└─Secret c-kubeconfig           admin kubeconfig: certificates: the Secret does not "
        "exist\n");
    buf_done(&out);
    tree_free(t);
    cJSON_Delete(in.ncp);
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        cJSON_Delete(in.comps[i].obj);
        cJSON_Delete(in.comps[i].statefulset);
        cJSON_Delete(in.comps[i].pods);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe__status_of_objects),
        cmocka_unit_test(test_describe__statefulsets_pods_and_expiry),
        cmocka_unit_test(test_describe__secret_expiry_reads_certificates_only),
        cmocka_unit_test(test_describe__tree_of_a_standalone_control_plane),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
