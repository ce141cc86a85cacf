#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/key.h"
#include "lib/pki/kubeconfig.h"
#include "lib/pki/secret.h"

#define DAY ((int64_t)86400)

struct pair {
    char *crt;
    char *key;
};

static struct pair issue(const struct pair *ca, const char *cn, bool is_ca, int64_t now,
                         int64_t validity)
{
    struct pki_cert_spec s;
    struct pair p = {NULL, NULL};

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, cn, NULL), 0);
    s.is_ca = is_ca;
    s.now = now;
    s.validity = validity;
    s.ext_usage = is_ca ? 0 : PKI_EKU_CLIENT_AUTH;
    assert_int_equal(
        pki_cert_issue(ca ? ca->crt : NULL, ca ? ca->key : NULL, &s, &p.crt, &p.key, NULL), 0);
    pki_cert_spec_done(&s);
    return p;
}

static void pair_done(struct pair *p)
{
    free(p->crt);
    free(p->key);
}

static cJSON *ca_secret(const char *name, const char *crt, const char *key)
{
    cJSON *s = NULL;

    assert_int_equal(pki_secret_tls_new(name, "default", "ca", crt, key, &s, NULL), 0);
    return s;
}

/* A built Secret has Cluster API's name, type, label and base64 data, in a fixed order. */
static void test_secret__tls_secret_has_capi_shape(void **state)
{
    struct pair ca = issue(NULL, "kubernetes", true, 0, 0);
    cJSON *s = NULL;
    char *json, *crt = NULL, *key = NULL;

    assert_int_equal(
        pki_secret_tls_new("foo", "tenants", PKI_PURPOSE_ETCD, ca.crt, ca.key, &s, NULL), 0);
    json = cJSON_PrintUnformatted(s);
    assert_true(strncmp(json,
                        "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"foo-"
                        "etcd\",\"namespace\":\"tenants\",\"labels\":{\"cluster.x-k8s.io/"
                        "cluster-name\":\"foo\"}},\"type\":\"cluster.x-k8s.io/secret\",\"data\":"
                        "{\"tls.crt\":\"",
                        strlen("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":"
                               "\"foo-etcd\",\"namespace\":\"tenants\",\"labels\":{\"cluster.x-"
                               "k8s.io/cluster-name\":\"foo\"}},\"type\":\"cluster.x-k8s.io/"
                               "secret\",\"data\":{\"tls.crt\":\"")) == 0);
    assert_null(strstr(json, "BEGIN"));
    assert_int_equal(pki_secret_read_tls(s, &crt, &key, NULL), 0);
    assert_string_equal(crt, ca.crt);
    assert_string_equal(key, ca.key);
    free(crt);
    free(key);
    free(json);
    cJSON_Delete(s);
    pair_done(&ca);
}

static void test_secret__sa_secret_holds_public_key(void **state)
{
    char *key = NULL, *pub = NULL, *other = NULL;
    cJSON *s = NULL;
    struct err e;

    assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &key, NULL), 0);
    assert_int_equal(pki_key_public_pem(key, &pub, NULL), 0);
    assert_int_equal(pki_secret_tls_new("foo", "default", PKI_PURPOSE_SA, pub, key, &s, NULL), 0);
    assert_int_equal(pki_secret_check_sa(s, &e), 0);
    cJSON_Delete(s);
    assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &other, NULL), 0);
    assert_int_equal(pki_secret_tls_new("foo", "default", PKI_PURPOSE_SA, pub, other, &s, NULL), 0);
    assert_int_equal(pki_secret_check_sa(s, &e), -EKEYREJECTED);
    assert_string_equal(e.msg, "Secret default/foo-sa: tls.key does not match tls.crt");
    cJSON_Delete(s);
    free(key);
    free(pub);
    free(other);
}

static void test_secret__kubeconfig_secret_uses_value_key(void **state)
{
    cJSON *s = NULL;
    char *back = NULL;
    size_t len = 0;
    const char *text = "apiVersion: v1\nkind: Config\n";

    assert_int_equal(pki_secret_kubeconfig_new("foo", "default", text, &s, NULL), 0);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metadata"), "name")->valuestring,
        "foo-kubeconfig");
    assert_string_equal(cJSON_GetObjectItem(s, "type")->valuestring, "cluster.x-k8s.io/secret");
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "data"), "value"));
    assert_int_equal(pki_secret_read_kubeconfig(s, &back, &len, NULL), 0);
    assert_string_equal(back, text);
    assert_int_equal(len, strlen(text));
    free(back);
    cJSON_Delete(s);
}

/* A user-supplied CA Secret: good, not a CA, key mismatch, garbage, expired, missing key,
 * bad base64 - each with a message that names the Secret and the key. */
static void test_secret__user_ca_is_validated_with_named_errors(void **state)
{
    int64_t now = (int64_t)time(NULL);
    struct pair ca = issue(NULL, "kubernetes", true, 0, 0);
    struct pair other = issue(NULL, "kubernetes", true, 0, 0);
    struct pair leaf = issue(&ca, "not-a-ca", false, 0, 0);
    struct pair old = issue(NULL, "old", true, now - 400 * DAY, 100 * DAY);
    cJSON *s;
    struct err e;

    s = ca_secret("foo", ca.crt, ca.key);
    assert_int_equal(pki_secret_check_ca(s, 0, &e), 0);
    cJSON_Delete(s);

    s = ca_secret("foo", leaf.crt, leaf.key);
    assert_int_equal(pki_secret_check_ca(s, 0, &e), -EINVAL);
    assert_string_equal(e.msg, "Secret default/foo-ca: tls.crt is not a CA certificate "
                               "(basicConstraints CA:TRUE is missing)");
    cJSON_Delete(s);

    s = ca_secret("foo", ca.crt, other.key);
    assert_int_equal(pki_secret_check_ca(s, 0, &e), -EKEYREJECTED);
    assert_string_equal(e.msg, "Secret default/foo-ca: tls.key does not match tls.crt");
    cJSON_Delete(s);

    s = ca_secret("foo", "this is not PEM", ca.key);
    assert_int_equal(pki_secret_check_ca(s, 0, &e), -EINVAL);
    assert_true(strncmp(e.msg, "Secret default/foo-ca: tls.crt: no readable PEM certificate", 59) ==
                0);
    cJSON_Delete(s);

    s = ca_secret("foo", ca.crt,
                  "-----BEGIN EC PRIVATE KEY-----\nAAAA\n"
                  "-----END EC PRIVATE KEY-----\n");
    assert_int_equal(pki_secret_check_ca(s, 0, &e), -EINVAL);
    assert_true(strncmp(e.msg, "Secret default/foo-ca: tls.key: no readable PEM private key", 59) ==
                0);
    assert_null(strstr(e.msg, "AAAA"));
    cJSON_Delete(s);

    s = ca_secret("foo", old.crt, old.key);
    assert_int_equal(pki_secret_check_ca(s, 0, &e), -EKEYEXPIRED);
    assert_true(strncmp(e.msg, "Secret default/foo-ca: tls.crt expired at ", 42) == 0);
    cJSON_Delete(s);

    s = ca_secret("foo", ca.crt, NULL);
    assert_int_equal(pki_secret_check_ca(s, 0, &e), -ENOENT);
    assert_string_equal(e.msg, "Secret default/foo-ca: data.tls.key is missing");
    cJSON_AddStringToObject(cJSON_GetObjectItem(s, "data"), "tls.key", "not*base64");
    assert_int_equal(pki_secret_check_ca(s, 0, &e), -EINVAL);
    assert_string_equal(e.msg, "Secret default/foo-ca: data.tls.key is not base64");
    cJSON_Delete(s);

    assert_int_equal(pki_secret_check_ca(NULL, 0, &e), -EINVAL);
    pair_done(&ca);
    pair_done(&other);
    pair_done(&leaf);
    pair_done(&old);
}

/* Reading a Secret's data bounds the size and refuses binary data. */
static void test_secret__read_bounds_and_refuses_binary(void **state)
{
    cJSON *s = NULL;
    char *crt = NULL, *b64 = NULL, *big;
    struct err e;

    assert_int_equal(pki_secret_tls_new("foo", "default", "x", NULL, NULL, &s, NULL), 0);
    assert_int_equal(pki_base64_encode("a\0b", 3, &b64), 0);
    cJSON_AddStringToObject(cJSON_GetObjectItem(s, "data"), "tls.crt", b64);
    free(b64);
    assert_int_equal(pki_secret_read_tls(s, &crt, NULL, &e), -EINVAL);
    assert_string_equal(e.msg, "Secret default/foo-x: data.tls.crt is not text");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(s, "data"), "tls.crt");
    big = calloc(1, PKI_PEM_MAX + 2);
    memset(big, 'A', PKI_PEM_MAX + 1);
    assert_int_equal(pki_base64_encode(big, PKI_PEM_MAX + 1, &b64), 0);
    cJSON_AddStringToObject(cJSON_GetObjectItem(s, "data"), "tls.crt", b64);
    assert_int_equal(pki_secret_read_tls(s, &crt, NULL, &e), -ENOBUFS);
    assert_string_equal(e.msg, "Secret default/foo-x: data.tls.crt is larger than 65536 bytes");
    assert_null(crt);
    free(b64);
    free(big);
    cJSON_Delete(s);

    char name[16];
    assert_int_equal(pki_secret_name("foo", "ca", name, sizeof(name)), 0);
    assert_string_equal(name, "foo-ca");
    assert_int_equal(pki_secret_name("foo", "", name, sizeof(name)), -EINVAL);
    assert_int_equal(pki_secret_name("a-very-long-cluster", "ca", name, sizeof(name)), -EINVAL);
    assert_int_equal(pki_secret_tls_new("foo", "", "ca", NULL, NULL, &s, &e), -EINVAL);
    assert_string_equal(e.msg, "Secret for cluster foo: namespace is required");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret__tls_secret_has_capi_shape),
        cmocka_unit_test(test_secret__sa_secret_holds_public_key),
        cmocka_unit_test(test_secret__kubeconfig_secret_uses_value_key),
        cmocka_unit_test(test_secret__user_ca_is_validated_with_named_errors),
        cmocka_unit_test(test_secret__read_bounds_and_refuses_binary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
