#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/pki/cert.h"
#include "test/unit/pki/pki_check.h"

#define DAY ((int64_t)86400)
#define NOW ((int64_t)1800000000)

struct pair {
    char *crt;
    char *key;
};

static void pair_done(struct pair *p)
{
    free(p->crt);
    free(p->key);
}

/* A CA (ca NULL) or a leaf signed by ca, valid for `days` from NOW. */
static struct pair issue(const struct pair *ca, const char *cn, enum pki_key_alg alg, int64_t days)
{
    struct pki_cert_spec s;
    struct pair p = {NULL, NULL};
    struct err e;

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, cn, &e), 0);
    s.is_ca = !ca;
    s.key_alg = alg;
    s.ext_usage = PKI_EKU_CLIENT_AUTH;
    s.now = NOW;
    s.validity = days * DAY;
    assert_int_equal(
        pki_cert_issue(ca ? ca->crt : NULL, ca ? ca->key : NULL, &s, &p.crt, &p.key, &e), 0);
    pki_cert_spec_done(&s);
    return p;
}

/* NotAfter as OpenSSL itself reads it. */
static int64_t openssl_not_after(const char *pem)
{
    X509 *x = pem_x509(pem);
    struct tm tm;

    assert_non_null(x);
    assert_true(ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm));
    X509_free(x);
    return (int64_t)timegm(&tm);
}

static char *concat3(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);

    assert_non_null(s);
    snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

static void test_cert_validity__reads_not_after_as_openssl_does(void **state)
{
    static const enum pki_key_alg algs[] = {PKI_KEY_ECDSA_P256, PKI_KEY_ECDSA_P384,
                                            PKI_KEY_RSA_2048};
    struct err e;

    for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
        struct pair ca = issue(NULL, "ca", algs[i], 3650);
        struct pair leaf = issue(&ca, "leaf", algs[i], 365);
        int64_t t = 0;

        assert_int_equal(pki_cert_not_after(ca.crt, NULL, &t, &e), 0);
        assert_int_equal(t, openssl_not_after(ca.crt));
        assert_int_equal(t, NOW + 3650 * DAY);
        assert_int_equal(pki_cert_not_after(leaf.crt, NULL, &t, &e), 0);
        assert_int_equal(t, openssl_not_after(leaf.crt));
        assert_int_equal(t, NOW + 365 * DAY);
        pair_done(&leaf);
        pair_done(&ca);
    }
}

static void test_cert_validity__takes_the_earliest_of_a_bundle_and_skips_keys(void **state)
{
    struct pair ca = issue(NULL, "ca", PKI_KEY_ECDSA_P256, 3650);
    struct pair soon = issue(&ca, "soon", PKI_KEY_ECDSA_P256, 3);
    char *bundle = concat3(ca.crt, soon.key, soon.crt);
    char *reversed = concat3(soon.crt, "", ca.crt);
    int64_t t = 0;
    struct err e;

    assert_int_equal(pki_cert_not_after(bundle, "bundle", &t, &e), 0);
    assert_int_equal(t, NOW + 3 * DAY);
    assert_int_equal(pki_cert_not_after(reversed, "bundle", &t, &e), 0);
    assert_int_equal(t, NOW + 3 * DAY);
    free(reversed);
    free(bundle);
    pair_done(&soon);
    pair_done(&ca);
}

static void test_cert_validity__refuses_what_holds_no_certificate(void **state)
{
    struct pair ca = issue(NULL, "ca", PKI_KEY_ECDSA_P256, 10);
    int64_t t = 42;
    struct err e;

    assert_int_equal(pki_cert_not_after(ca.key, "tls.key", &t, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "tls.key"));
    assert_int_equal(pki_cert_not_after("", NULL, &t, &e), -EINVAL);
    assert_int_equal(pki_cert_not_after(NULL, NULL, &t, &e), -EINVAL);
    assert_int_equal(pki_cert_not_after("-----BEGIN CERTIFICATE-----\nAAAA\n-----END "
                                        "CERTIFICATE-----\n",
                                        NULL, &t, &e),
                     -EINVAL);
    assert_int_equal(t, 42); /* written only on success */
    pair_done(&ca);
}

static void test_cert_validity__refuses_more_than_the_pem_bound(void **state)
{
    char *big = malloc(PKI_PEM_MAX + 2);
    int64_t t;
    struct err e;

    assert_non_null(big);
    memset(big, 'A', PKI_PEM_MAX + 1);
    big[PKI_PEM_MAX + 1] = '\0';
    assert_int_equal(pki_cert_not_after(big, NULL, &t, &e), -ENOBUFS);
    free(big);
}

/* Every prefix of a certificate's PEM either fails or, once the END line is whole, reads
 * the full certificate; every prefix of its DER inside a well-formed PEM fails. */
static void test_cert_validity__split_at_every_byte_never_reads_garbage(void **state)
{
    struct pair ca = issue(NULL, "ca", PKI_KEY_ECDSA_P256, 30);
    size_t n = strlen(ca.crt);
    const char *end_line = strstr(ca.crt, "-----END");
    size_t whole = (size_t)(end_line - ca.crt) + strlen("-----END CERTIFICATE-----");
    X509 *x = pem_x509(ca.crt);
    unsigned char *der = NULL;
    int der_len = i2d_X509(x, &der);

    assert_true(der_len > 0);
    for (size_t i = 0; i <= n; i++) {
        char *prefix = strndup(ca.crt, i);
        int64_t t = 0;
        struct err e;
        int r = pki_cert_not_after(prefix, NULL, &t, &e);
        if (i >= whole) {
            assert_int_equal(r, 0);
            assert_int_equal(t, NOW + 30 * DAY);
        } else {
            assert_int_equal(r, -EINVAL);
        }
        free(prefix);
    }
    for (int i = 1; i < der_len; i++) {
        BIO *b = BIO_new(BIO_s_mem());
        char *pem = NULL;
        long len;
        int64_t t = 0;
        struct err e;
        assert_true(PEM_write_bio(b, PEM_STRING_X509, "", der, i) > 0);
        len = BIO_get_mem_data(b, &pem);
        char *copy = strndup(pem, (size_t)len);
        assert_int_equal(pki_cert_not_after(copy, NULL, &t, &e), -EINVAL);
        free(copy);
        BIO_free(b);
    }
    OPENSSL_free(der);
    X509_free(x);
    pair_done(&ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cert_validity__reads_not_after_as_openssl_does),
        cmocka_unit_test(test_cert_validity__takes_the_earliest_of_a_bundle_and_skips_keys),
        cmocka_unit_test(test_cert_validity__refuses_what_holds_no_certificate),
        cmocka_unit_test(test_cert_validity__refuses_more_than_the_pem_bound),
        cmocka_unit_test(test_cert_validity__split_at_every_byte_never_reads_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
