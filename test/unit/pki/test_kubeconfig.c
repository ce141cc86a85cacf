#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/key.h"
#include "lib/pki/kubeconfig.h"
#include "lib/util/yamlconv.h"
#include "test/unit/pki/pki_check.h"

struct fixture {
    char *ca_crt, *ca_key, *crt, *key;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct pki_cert_spec s;

    pki_cert_spec_init(&s);
    pki_cert_spec_set_cn(&s, "kubernetes", NULL);
    s.is_ca = true;
    if (pki_cert_issue(NULL, NULL, &s, &f->ca_crt, &f->ca_key, NULL) < 0)
        return -1;
    pki_cert_spec_done(&s);
    pki_cert_spec_init(&s);
    pki_cert_spec_set_cn(&s, "kubernetes-admin", NULL);
    pki_cert_spec_add_org(&s, "system:masters", NULL);
    s.ext_usage = PKI_EKU_CLIENT_AUTH;
    if (pki_cert_issue(f->ca_crt, f->ca_key, &s, &f->crt, &f->key, NULL) < 0)
        return -1;
    pki_cert_spec_done(&s);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    free(f->ca_crt);
    free(f->ca_key);
    free(f->crt);
    free(f->key);
    free(f);
    return 0;
}

static char *decode(const cJSON *s)
{
    unsigned char *out = NULL;
    size_t len;

    assert_true(cJSON_IsString(s));
    assert_int_equal(pki_base64_decode(s->valuestring, strlen(s->valuestring), 1 << 20, &out, &len),
                     0);
    return (char *)out;
}

static const cJSON *at(const cJSON *doc, const char *list, int i, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, list), i), key);
}

/* The YAML parses back (through yamlconv) into the names Cluster API uses, and the embedded
 * certificate and key belong together and chain to the embedded CA. */
static void test_kubeconfig__renders_capi_names_and_parses_back(void **state)
{
    struct fixture *f = *state;
    struct pki_kubeconfig kc = {.cluster_name = "foo",
                                .server = "https://foo-apiserver:6443",
                                .ca_cert_pem = f->ca_crt,
                                .client_cert_pem = f->crt,
                                .client_key_pem = f->key};
    char *yaml = NULL;
    cJSON *doc = NULL;
    struct err e;

    assert_int_equal(pki_kubeconfig_render(&kc, &yaml, &e), 0);
    assert_null(strstr(yaml, "PRIVATE KEY")); /* only base64 of it */
    assert_true(strncmp(yaml, "apiVersion: v1\nclusters:\n- cluster:\n", 36) == 0);
    assert_non_null(strstr(yaml, "\ncurrent-context: foo-admin@foo\nkind: Config\n"
                                 "preferences: {}\nusers:\n- name: foo-admin\n  user:\n"));
    assert_int_equal(yamlconv_parse_one(yaml, strlen(yaml), "kubeconfig", &doc, &e), 0);
    assert_string_equal(cJSON_GetObjectItem(doc, "kind")->valuestring, "Config");
    assert_string_equal(cJSON_GetObjectItem(doc, "current-context")->valuestring, "foo-admin@foo");
    assert_string_equal(at(doc, "clusters", 0, "name")->valuestring, "foo");
    assert_string_equal(at(doc, "contexts", 0, "name")->valuestring, "foo-admin@foo");
    assert_string_equal(at(doc, "users", 0, "name")->valuestring, "foo-admin");
    const cJSON *ctx = at(doc, "contexts", 0, "context");
    assert_string_equal(cJSON_GetObjectItem(ctx, "cluster")->valuestring, "foo");
    assert_string_equal(cJSON_GetObjectItem(ctx, "user")->valuestring, "foo-admin");
    const cJSON *cl = at(doc, "clusters", 0, "cluster");
    assert_string_equal(cJSON_GetObjectItem(cl, "server")->valuestring,
                        "https://foo-apiserver:6443");
    char *ca = decode(cJSON_GetObjectItem(cl, "certificate-authority-data"));
    const cJSON *us = at(doc, "users", 0, "user");
    char *crt = decode(cJSON_GetObjectItem(us, "client-certificate-data"));
    char *key = decode(cJSON_GetObjectItem(us, "client-key-data"));
    assert_string_equal(ca, f->ca_crt);
    assert_int_equal(pki_key_check_match(key, crt, NULL, NULL, &e), 0);
    assert_int_equal(verify_chain(ca, crt, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
    free(ca);
    free(crt);
    free(key);
    cJSON_Delete(doc);
    free(yaml);
}

static void test_kubeconfig__read_resolves_the_current_context(void **state)
{
    struct fixture *f = *state;
    struct pki_kubeconfig kc = {.cluster_name = "foo",
                                .user_name = "system:kube-controller-manager",
                                .context_name = "default",
                                .server = "https://127.0.0.1:6443",
                                .ca_cert_pem = f->ca_crt,
                                .client_cert_pem = f->crt,
                                .client_key_pem = f->key};
    struct pki_kubeconfig_creds *c = NULL;
    char *yaml = NULL;
    struct err e;

    assert_int_equal(pki_kubeconfig_render(&kc, &yaml, &e), 0);
    assert_int_equal(pki_kubeconfig_read(yaml, strlen(yaml), NULL, &c, &e), 0);
    assert_string_equal(c->context_name, "default");
    assert_string_equal(c->cluster_name, "foo");
    assert_string_equal(c->user_name, "system:kube-controller-manager");
    assert_string_equal(c->server, "https://127.0.0.1:6443");
    assert_string_equal(c->ca_cert_pem, f->ca_crt);
    assert_string_equal(c->client_cert_pem, f->crt);
    assert_string_equal(c->client_key_pem, f->key);
    pki_kubeconfig_creds_free(c);
    free(yaml);
}

static void test_kubeconfig__read_names_what_is_wrong(void **state)
{
    struct pki_kubeconfig_creds *c = NULL;
    struct err e;
    const char *no_ctx = "apiVersion: v1\nkind: Config\ncontexts: []\n";
    const char *dangling = "current-context: x\ncontexts:\n- name: x\n  context:\n"
                           "    cluster: c\n    user: u\nclusters: []\n";
    const char *bad_b64 = "current-context: x\ncontexts:\n- name: x\n  context:\n"
                          "    cluster: c\n    user: u\nclusters:\n- name: c\n  cluster:\n"
                          "    server: https://h:1\n    certificate-authority-data: '!!'\n"
                          "users:\n- name: u\n  user: {}\n";

    assert_int_equal(pki_kubeconfig_read(no_ctx, strlen(no_ctx), "Secret a/b: value", &c, &e),
                     -EINVAL);
    assert_string_equal(e.msg, "Secret a/b: value: current-context is not set");
    assert_int_equal(pki_kubeconfig_read(dangling, strlen(dangling), NULL, &c, &e), -EINVAL);
    assert_string_equal(e.msg, "kubeconfig: clusters has no entry named \"c\"");
    assert_int_equal(pki_kubeconfig_read(bad_b64, strlen(bad_b64), NULL, &c, &e), -EINVAL);
    assert_string_equal(e.msg, "kubeconfig: cluster.certificate-authority-data is not base64");
    assert_int_equal(pki_kubeconfig_read("a: [", 4, NULL, &c, &e), -EINVAL);
    assert_null(c);
}

static void test_kubeconfig__server_url_and_required_fields(void **state)
{
    char url[128];
    struct pki_kubeconfig kc = {.cluster_name = "foo", .server = "https://h:1"};
    cJSON *doc = NULL;
    struct err e;

    assert_int_equal(pki_kubeconfig_server_url("foo-apiserver", 6443, url, sizeof(url)), 0);
    assert_string_equal(url, "https://foo-apiserver:6443");
    assert_int_equal(pki_kubeconfig_server_url("fd00::1", 443, url, sizeof(url)), 0);
    assert_string_equal(url, "https://[fd00::1]:443");
    assert_int_equal(pki_kubeconfig_server_url("h", 0, url, sizeof(url)), -EINVAL);
    assert_int_equal(pki_kubeconfig_server_url("", 1, url, sizeof(url)), -EINVAL);
    assert_int_equal(pki_kubeconfig_server_url("a-long-host", 1, url, 10), -EINVAL);
    assert_int_equal(pki_kubeconfig_build(&kc, &doc, &e), -EINVAL);
    assert_string_equal(e.msg,
                        "kubeconfig: CA certificate, client certificate and key are required");
    kc.server = NULL;
    assert_int_equal(pki_kubeconfig_build(&kc, &doc, &e), -EINVAL);
    assert_string_equal(e.msg, "kubeconfig: server is required");
    assert_null(doc);
}

/* A kubeconfig cut at any byte is read whole or refused with a message, never half-read:
 * whenever it is accepted, the key it yields is the full key. */
static void test_kubeconfig__read_survives_truncation_at_every_byte(void **state)
{
    struct fixture *f = *state;
    struct pki_kubeconfig kc = {.cluster_name = "foo",
                                .server = "https://foo-apiserver:6443",
                                .ca_cert_pem = f->ca_crt,
                                .client_cert_pem = f->crt,
                                .client_key_pem = f->key};
    char *yaml = NULL;
    int accepted = 0;

    assert_int_equal(pki_kubeconfig_render(&kc, &yaml, NULL), 0);
    size_t n = strlen(yaml);
    for (size_t cut = 0; cut <= n; cut++) {
        struct pki_kubeconfig_creds *c = NULL;
        struct err e = {0};
        int r = pki_kubeconfig_read(yaml, cut, NULL, &c, &e);
        if (r == 0) {
            accepted++;
            if (c->client_key_pem)
                assert_string_equal(c->client_key_pem, f->key);
        } else {
            assert_int_equal(r, -EINVAL);
            assert_true(e.msg[0] != '\0');
            assert_null(c);
        }
        pki_kubeconfig_creds_free(c);
    }
    assert_true(accepted >= 1); /* at least the whole text */
    free(yaml);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubeconfig__renders_capi_names_and_parses_back),
        cmocka_unit_test(test_kubeconfig__read_resolves_the_current_context),
        cmocka_unit_test(test_kubeconfig__read_names_what_is_wrong),
        cmocka_unit_test(test_kubeconfig__server_url_and_required_fields),
        cmocka_unit_test(test_kubeconfig__read_survives_truncation_at_every_byte),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
