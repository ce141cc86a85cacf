#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd/nestcp/kcserver.h"
#include "lib/util/yamlconv.h"

/* A kubeconfig in the shape the NestedControlPlane controller writes, with a second cluster
 * that the current context does not use. */
static const char kubeconfig[] = "apiVersion: v1\n"
                                 "clusters:\n"
                                 "- cluster:\n"
                                 "    certificate-authority-data: Q0EK\n"
                                 "    server: https://other-apiserver.ns.svc:6443\n"
                                 "  name: other\n"
                                 "- cluster:\n"
                                 "    certificate-authority-data: Q0EK\n"
                                 "    server: https://c-apiserver.ns.svc:6443\n"
                                 "  name: c\n"
                                 "contexts:\n"
                                 "- context:\n"
                                 "    cluster: c\n"
                                 "    user: c-admin\n"
                                 "  name: c-admin@c\n"
                                 "current-context: c-admin@c\n"
                                 "kind: Config\n"
                                 "preferences: {}\n"
                                 "users:\n"
                                 "- name: c-admin\n"
                                 "  user:\n"
                                 "    client-certificate-data: Q0VSVAo=\n"
                                 "    client-key-data: S0VZCg==\n";

static cJSON *rewrite(const char *text, const char *server, int *ret_code, char *msg, size_t size)
{
    struct buf out = BUF_INIT;
    struct err e = {0};
    cJSON *doc = NULL;

    *ret_code =
        kcserver_rewrite(text, strlen(text), "Secret ns/c-kubeconfig: value", server, &out, &e);
    snprintf(msg, size, "%s", e.msg);
    if (*ret_code == 0)
        assert_int_equal(yamlconv_parse_one(out.data, out.len, "out", &doc, NULL), 0);
    buf_done(&out);
    return doc;
}

static const char *cluster_field(const cJSON *doc, int i, const char *key)
{
    const cJSON *c =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "clusters"), i), "cluster");
    const cJSON *v = cJSON_GetObjectItem(c, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_kcserver__rewrites_the_current_cluster_and_keeps_tls_verified(void **state)
{
    char msg[1024];
    int code;
    cJSON *doc = rewrite(kubeconfig, "https://127.0.0.1:16443", &code, msg, sizeof(msg));

    assert_int_equal(code, 0);
    assert_string_equal(cluster_field(doc, 1, "server"), "https://127.0.0.1:16443");
    /* The certificate is still checked against the name it was issued for. */
    assert_string_equal(cluster_field(doc, 1, "tls-server-name"), "c-apiserver.ns.svc");
    assert_string_equal(cluster_field(doc, 1, "certificate-authority-data"), "Q0EK");
    /* The other cluster, and the credentials, are untouched. */
    assert_string_equal(cluster_field(doc, 0, "server"), "https://other-apiserver.ns.svc:6443");
    assert_null(cluster_field(doc, 0, "tls-server-name"));
    assert_string_equal(
        cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "users"), 0), "user"),
            "client-key-data")
            ->valuestring,
        "S0VZCg==");
    assert_string_equal(cJSON_GetObjectItem(doc, "current-context")->valuestring, "c-admin@c");
    cJSON_Delete(doc);
}

static void test_kcserver__same_host_needs_no_tls_server_name(void **state)
{
    char msg[1024];
    int code;
    cJSON *doc = rewrite(kubeconfig, "https://c-apiserver.ns.svc:443", &code, msg, sizeof(msg));

    assert_int_equal(code, 0);
    assert_string_equal(cluster_field(doc, 1, "server"), "https://c-apiserver.ns.svc:443");
    assert_null(cluster_field(doc, 1, "tls-server-name"));
    cJSON_Delete(doc);
}

static void test_kcserver__ipv6_hosts(void **state)
{
    char host[64], msg[1024];
    int code;
    cJSON *doc;

    assert_int_equal(kcserver_url_host("https://[fd00::1]:6443", host, sizeof(host)), 0);
    assert_string_equal(host, "fd00::1");
    assert_int_equal(kcserver_url_host("https://[::1]", host, sizeof(host)), 0);
    assert_string_equal(host, "::1");
    doc = rewrite(kubeconfig, "https://[::1]:6443", &code, msg, sizeof(msg));
    assert_int_equal(code, 0);
    assert_string_equal(cluster_field(doc, 1, "server"), "https://[::1]:6443");
    assert_string_equal(cluster_field(doc, 1, "tls-server-name"), "c-apiserver.ns.svc");
    cJSON_Delete(doc);
}

static void test_kcserver__bad_urls_are_refused_naming_the_flag(void **state)
{
    static const struct {
        const char *url, *says;
    } bad[] = {
        {"", "empty"},
        {"http://127.0.0.1:6443", "not an https:// URL"},
        {"127.0.0.1:6443", "not an https:// URL"},
        {"https://", "names no host"},
        {"https://:6443", "names no host"},
        {"https://[]:6443", "names no host"},
        {"https://[::1:6443", "names no host"},
        {"https://h:0", "not in 1..65535"},
        {"https://h:65536", "not in 1..65535"},
        {"https://h:", "not a number"},
        {"https://h:64x", "not a number"},
        {"https://user@h:6443", "user info"},
        {"https://h:6443/?x=1", "a query"},
        {"https://h 1:6443", "whitespace"},
    };
    static const char *const good[] = {"https://h", "https://h:1", "https://h:65535/prefix",
                                       "https://10.0.0.1:6443", "https://[fd00::1]:443"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct err e = {0};
        assert_int_equal(kcserver_check_url(bad[i].url, &e), -EINVAL);
        if (!strstr(e.msg, "--server") || !strstr(e.msg, bad[i].says))
            fail_msg("%s: %s", bad[i].url, e.msg);
    }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct err e = {0};
        if (kcserver_check_url(good[i], &e) != 0)
            fail_msg("%s: %s", good[i], e.msg);
    }
}

static void test_kcserver__malformed_kubeconfigs_name_the_field(void **state)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"kind: Config\n", "current-context is not set"},
        {"current-context: x\ncontexts: []\n", "contexts[x].context.cluster is not set"},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters: []\n",
         "clusters[c].cluster: no such cluster"},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n"
         "- name: c\n  cluster: {server: 'http://c'}\n",
         "clusters[c].cluster.server is not an https:// URL"},
        {"a: [\n", "Secret ns/c-kubeconfig: value"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char msg[1024];
        int code;
        assert_null(rewrite(bad[i].text, "https://127.0.0.1:1", &code, msg, sizeof(msg)));
        assert_int_equal(code, -EINVAL);
        if (!strstr(msg, bad[i].says) || !strstr(msg, "Secret ns/c-kubeconfig: value"))
            fail_msg("case %zu: %s", i, msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kcserver__rewrites_the_current_cluster_and_keeps_tls_verified),
        cmocka_unit_test(test_kcserver__same_host_needs_no_tls_server_name),
        cmocka_unit_test(test_kcserver__ipv6_hosts),
        cmocka_unit_test(test_kcserver__bad_urls_are_refused_naming_the_flag),
        cmocka_unit_test(test_kcserver__malformed_kubeconfigs_name_the_field),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
