#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/pki/cert.h"
#include "lib/pki/internal.h"
#include "test/unit/pki/pki_check.h"

#define DAY ((int64_t)86400)

struct pair {
    char *crt;
    char *key;
};

static void pair_done(struct pair *p)
{
    free(p->crt);
    free(p->key);
}

static struct pair make_ca(const char *cn, enum pki_key_alg alg, int64_t now, int64_t validity)
{
    struct pki_cert_spec s;
    struct pair p = {NULL, NULL};
    struct err e;

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, cn, &e), 0);
    s.is_ca = true;
    s.key_alg = alg;
    s.now = now;
    s.validity = validity;
    assert_int_equal(pki_cert_issue(NULL, NULL, &s, &p.crt, &p.key, &e), 0);
    pki_cert_spec_done(&s);
    return p;
}

static struct pair make_leaf(const struct pair *ca, enum pki_key_alg alg, unsigned eku)
{
    struct pki_cert_spec s;
    struct pair p = {NULL, NULL};
    struct err e;

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, "kube-apiserver", &e), 0);
    assert_int_equal(pki_cert_spec_add_dns(&s, "kubernetes.default.svc", &e), 0);
    assert_int_equal(pki_cert_spec_add_ip(&s, "10.96.0.1", &e), 0);
    assert_int_equal(pki_cert_spec_add_ip(&s, "fd00::1", &e), 0);
    s.key_alg = alg;
    s.ext_usage = eku;
    assert_int_equal(pki_cert_issue(ca->crt, ca->key, &s, &p.crt, &p.key, &e), 0);
    pki_cert_spec_done(&s);
    return p;
}

/* A CA is self-signed, lives 10 years from 5 minutes ago, and carries the CA extensions. */
static void test_cert__ca_has_kubeadm_shape(void **state)
{
    struct pair ca = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    char text[512];
    bool critical = false;
    int64_t lifetime, nb;

    assert_int_equal(verify_chain(ca.crt, ca.crt, X509_PURPOSE_ANY), X509_V_OK);
    cert_times(ca.crt, &lifetime, &nb);
    assert_int_equal(lifetime, 3650 * DAY + 300);
    assert_true(nb <= -299 && nb >= -310);
    assert_true(serial_ok(ca.crt, 64));

    assert_true(ext_text(ca.crt, NID_basic_constraints, text, sizeof(text), &critical));
    assert_string_equal(text, "CA:TRUE, pathlen:0");
    assert_true(critical);
    assert_true(ext_text(ca.crt, NID_key_usage, text, sizeof(text), &critical));
    assert_string_equal(text, "Digital Signature, Certificate Sign, CRL Sign");
    assert_true(critical);
    assert_true(ext_text(ca.crt, NID_subject_key_identifier, text, sizeof(text), NULL));
    assert_false(ext_text(ca.crt, NID_ext_key_usage, text, sizeof(text), NULL));

    struct pki_cert_info *info = NULL;
    assert_int_equal(pki_cert_info_read(ca.crt, NULL, &info, NULL), 0);
    assert_string_equal(info->common_name, "kubernetes");
    assert_string_equal(info->issuer_common_name, "kubernetes");
    assert_true(info->is_ca);
    assert_int_equal(info->key_usage,
                     PKI_KU_DIGITAL_SIGNATURE | PKI_KU_CERT_SIGN | PKI_KU_CRL_SIGN);
    assert_true(info->key_alg_known);
    assert_int_equal(info->key_alg, PKI_KEY_ECDSA_P256);
    assert_true(strlen(info->serial) >= 16);
    pki_cert_info_free(info);
    pair_done(&ca);
}

/* A leaf chains to its CA for its purpose only, with SANs, AKI = CA's SKI, one year. */
static void test_cert__leaf_chains_to_its_ca_only(void **state)
{
    struct pair ca = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    struct pair other = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    struct pair leaf = make_leaf(&ca, PKI_KEY_ECDSA_P256, PKI_EKU_SERVER_AUTH);
    char text[512], ski[256];
    bool critical = false;
    int64_t lifetime, nb;

    assert_int_equal(verify_chain(ca.crt, leaf.crt, X509_PURPOSE_SSL_SERVER), X509_V_OK);
    assert_int_equal(verify_chain(ca.crt, leaf.crt, X509_PURPOSE_SSL_CLIENT),
                     X509_V_ERR_INVALID_PURPOSE);
    assert_int_not_equal(verify_chain(other.crt, leaf.crt, X509_PURPOSE_SSL_SERVER), X509_V_OK);

    cert_times(leaf.crt, &lifetime, &nb);
    assert_int_equal(lifetime, 365 * DAY + 300);
    assert_true(nb < 0);
    assert_true(serial_ok(leaf.crt, 64));

    assert_true(ext_text(leaf.crt, NID_basic_constraints, text, sizeof(text), &critical));
    assert_string_equal(text, "CA:FALSE");
    assert_true(critical);
    assert_true(ext_text(leaf.crt, NID_key_usage, text, sizeof(text), &critical));
    assert_string_equal(text, "Digital Signature");
    assert_true(ext_text(leaf.crt, NID_ext_key_usage, text, sizeof(text), NULL));
    assert_string_equal(text, "TLS Web Server Authentication");
    assert_true(ext_text(leaf.crt, NID_subject_alt_name, text, sizeof(text), NULL));
    assert_string_equal(text, "DNS:kubernetes.default.svc, IP Address:10.96.0.1, "
                              "IP Address:FD00:0:0:0:0:0:0:1");
    assert_true(ext_text(ca.crt, NID_subject_key_identifier, ski, sizeof(ski), NULL));
    assert_true(ext_text(leaf.crt, NID_authority_key_identifier, text, sizeof(text), NULL));
    assert_non_null(strstr(text, ski));

    struct pki_cert_info *info = NULL;
    assert_int_equal(pki_cert_info_read(leaf.crt, NULL, &info, NULL), 0);
    assert_false(info->is_ca);
    assert_int_equal(info->ext_usage, PKI_EKU_SERVER_AUTH);
    assert_int_equal(info->dns_names.n, 1);
    assert_string_equal(info->dns_names.v[0], "kubernetes.default.svc");
    assert_int_equal(info->ips.n, 2);
    assert_string_equal(info->ips.v[0], "10.96.0.1");
    assert_string_equal(info->ips.v[1], "fd00::1");
    pki_cert_info_free(info);
    pair_done(&ca);
    pair_done(&other);
    pair_done(&leaf);
}

/* A CA signing many leaves parses its key and certificate once (the memo of parsed objects),
 * and each leaf is still its own: a new serial and key, chained to the CA. */
static void test_cert__a_ca_signing_again_is_read_from_the_memo(void **state)
{
    struct pair ca = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    struct pair a, b;
    unsigned long hits;

    pki_ossl_parsed_clear();
    a = make_leaf(&ca, PKI_KEY_ECDSA_P256, PKI_EKU_SERVER_AUTH);
    hits = pki_ossl_parsed_hits();
    b = make_leaf(&ca, PKI_KEY_ECDSA_P256, PKI_EKU_SERVER_AUTH);
    assert_true(pki_ossl_parsed_hits() >= hits + 2); /* the CA's key and certificate */
    assert_string_not_equal(a.crt, b.crt);
    assert_string_not_equal(a.key, b.key);
    assert_int_equal(verify_chain(ca.crt, b.crt, X509_PURPOSE_SSL_SERVER), X509_V_OK);
    pki_ossl_parsed_clear();
    pair_done(&ca);
    pair_done(&a);
    pair_done(&b);
}

/* RSA leaves also allow keyEncipherment; a P-384 CA signs with SHA-384; mixed algorithms
 * chain. */
static void test_cert__usage_and_digest_follow_key_type(void **state)
{
    struct pair ca = make_ca("etcd-ca", PKI_KEY_ECDSA_P384, 0, 0);
    struct pair leaf = make_leaf(&ca, PKI_KEY_RSA_2048, PKI_EKU_SERVER_AUTH | PKI_EKU_CLIENT_AUTH);
    char text[256];

    assert_int_equal(verify_chain(ca.crt, leaf.crt, X509_PURPOSE_SSL_SERVER), X509_V_OK);
    assert_int_equal(verify_chain(ca.crt, leaf.crt, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
    assert_true(ext_text(leaf.crt, NID_key_usage, text, sizeof(text), NULL));
    assert_string_equal(text, "Digital Signature, Key Encipherment");
    assert_true(ext_text(leaf.crt, NID_ext_key_usage, text, sizeof(text), NULL));
    assert_string_equal(text, "TLS Web Server Authentication, TLS Web Client Authentication");
    X509 *x = pem_x509(leaf.crt);
    assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA384);
    X509_free(x);
    x = pem_x509(ca.crt);
    assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA384);
    X509_free(x);
    pair_done(&ca);
    pair_done(&leaf);
}

/* Subjects list O before CN, as Go writes them, in spec order. */
static void test_cert__subject_orders_organizations_then_cn(void **state)
{
    struct pair ca = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    struct pki_cert_spec s;
    char *crt = NULL, *key = NULL, line[256];

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, "kubernetes-admin", NULL), 0);
    assert_int_equal(pki_cert_spec_add_org(&s, "system:masters", NULL), 0);
    assert_int_equal(pki_cert_spec_add_org(&s, "tenants", NULL), 0);
    assert_int_equal(pki_cert_spec_add_org(&s, "system:masters", NULL), 0); /* deduplicated */
    s.ext_usage = PKI_EKU_CLIENT_AUTH;
    assert_int_equal(pki_cert_issue(ca.crt, ca.key, &s, &crt, &key, NULL), 0);
    X509 *x = pem_x509(crt);
    X509_NAME_oneline(X509_get_subject_name(x), line, sizeof(line));
    assert_string_equal(line, "/O=system:masters/O=tenants/CN=kubernetes-admin");
    X509_free(x);
    assert_int_equal(verify_chain(ca.crt, crt, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
    free(crt);
    free(key);
    pki_cert_spec_done(&s);
    pair_done(&ca);
}

/* A leaf never outlives its CA; an expired CA or a CA whose key does not match refuses to
 * sign; a leaf cannot be self-signed and a non-CA cannot sign. */
static void test_cert__issuing_refuses_unusable_cas(void **state)
{
    int64_t now = (int64_t)time(NULL);
    struct pair short_ca = make_ca("short", PKI_KEY_ECDSA_P256, 0, 30 * DAY);
    struct pair old_ca = make_ca("old", PKI_KEY_ECDSA_P256, now - 400 * DAY, 100 * DAY);
    struct pair ca = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    struct pair leaf = make_leaf(&short_ca, PKI_KEY_ECDSA_P256, PKI_EKU_CLIENT_AUTH);
    struct pki_cert_spec s;
    char *crt = NULL, *key = NULL;
    struct err e;
    int64_t lifetime, nb;

    cert_times(leaf.crt, &lifetime, &nb);
    assert_true(lifetime <= 30 * DAY + 300 && lifetime > 29 * DAY);

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, "x", NULL), 0);
    assert_int_equal(pki_cert_issue(old_ca.crt, old_ca.key, &s, &crt, &key, &e), -EKEYEXPIRED);
    assert_string_equal(e.msg, "CA certificate has expired");
    assert_int_equal(pki_cert_issue(ca.crt, old_ca.key, &s, &crt, &key, &e), -EKEYREJECTED);
    assert_string_equal(e.msg, "CA key does not match CA certificate");
    assert_int_equal(pki_cert_issue(leaf.crt, leaf.key, &s, &crt, &key, &e), -EINVAL);
    assert_string_equal(e.msg, "CA certificate is not a CA (basicConstraints CA:TRUE)");
    assert_int_equal(pki_cert_issue(NULL, NULL, &s, &crt, &key, &e), -EINVAL);
    assert_string_equal(e.msg, "x: only a CA may be self-signed");
    assert_int_equal(pki_cert_issue(ca.crt, NULL, &s, &crt, &key, &e), -EINVAL);
    assert_string_equal(e.msg, "a CA needs both its certificate and its key");
    assert_int_equal(pki_cert_issue("garbage", ca.key, &s, &crt, &key, &e), -EINVAL);
    assert_true(strncmp(e.msg, "CA certificate: no readable PEM certificate", 43) == 0);
    assert_null(crt);
    assert_null(key);
    pki_cert_spec_done(&s);
    pair_done(&short_ca);
    pair_done(&old_ca);
    pair_done(&ca);
    pair_done(&leaf);
}

static void test_cert__spec_checks_and_normalises_names(void **state)
{
    struct pki_cert_spec s;
    struct err e;
    char long_cn[80];

    pki_cert_spec_init(&s);
    memset(long_cn, 'a', sizeof(long_cn) - 1);
    long_cn[sizeof(long_cn) - 1] = '\0';
    assert_int_equal(pki_cert_spec_set_cn(&s, long_cn, &e), -EINVAL);
    assert_string_equal(e.msg, "commonName must be 1 to 64 printable ASCII characters");
    assert_int_equal(pki_cert_spec_set_cn(&s, "", &e), -EINVAL);
    assert_int_equal(pki_cert_spec_add_san(&s, "API.Example.com", &e), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "api.example.com", &e), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "*.example.com", &e), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "2001:db8:0::0:1", &e), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "2001:db8::1", &e), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "192.168.0.1", &e), 0);
    assert_int_equal(s.dns_names.n, 2);
    assert_string_equal(s.dns_names.v[0], "api.example.com");
    assert_string_equal(s.dns_names.v[1], "*.example.com");
    assert_int_equal(s.ips.n, 2);
    assert_string_equal(s.ips.v[0], "2001:db8::1");
    assert_string_equal(s.ips.v[1], "192.168.0.1");
    assert_int_equal(pki_cert_spec_add_san(&s, "a,DNS:evil.com", &e), -EINVAL);
    assert_string_equal(e.msg, "\"a,DNS:evil.com\" is not a valid DNS name");
    assert_int_equal(pki_cert_spec_add_dns(&s, "a..b", &e), -EINVAL);
    assert_int_equal(pki_cert_spec_add_dns(&s, "a.*.b", &e), -EINVAL);
    assert_int_equal(pki_cert_spec_add_ip(&s, "10.0.0.256", &e), -EINVAL);
    assert_string_equal(e.msg, "\"10.0.0.256\" is not an IP address");
    assert_int_equal(pki_cert_spec_add_org(&s, "bad\norg", &e), -EINVAL);
    for (int i = 0; i < PKI_SPEC_MAX_NAMES - 2; i++) {
        char name[32];
        snprintf(name, sizeof(name), "n%d.example", i);
        assert_int_equal(pki_cert_spec_add_dns(&s, name, &e), 0);
    }
    assert_int_equal(pki_cert_spec_add_dns(&s, "one-more.example", &e), -E2BIG);
    pki_cert_spec_done(&s);
    pki_cert_spec_done(NULL);
}

/* Two certificates from one spec differ only in serial, key and signature. */
static void test_cert__same_spec_gives_same_fields(void **state)
{
    struct pair ca = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    struct pki_cert_spec s;
    char *crt[2] = {NULL, NULL}, *key[2] = {NULL, NULL};
    unsigned char *der[2][4];
    int len[2][4];
    int nids[] = {NID_subject_alt_name, NID_basic_constraints, NID_key_usage,
                  NID_authority_key_identifier};

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, "kube-apiserver", NULL), 0);
    assert_int_equal(pki_cert_spec_add_org(&s, "o", NULL), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "b.example", NULL), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "a.example", NULL), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "10.0.0.1", NULL), 0);
    s.ext_usage = PKI_EKU_SERVER_AUTH;
    s.now = 1700000000;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pki_cert_issue(ca.crt, ca.key, &s, &crt[i], &key[i], NULL), 0);
        X509 *x = pem_x509(crt[i]);
        for (int j = 0; j < 4; j++) {
            X509_EXTENSION *ext = X509_get_ext(x, X509_get_ext_by_NID(x, nids[j], -1));
            der[i][j] = NULL;
            len[i][j] = i2d_X509_EXTENSION(ext, &der[i][j]);
        }
        X509_free(x);
    }
    X509 *a = pem_x509(crt[0]), *b = pem_x509(crt[1]);
    assert_int_equal(X509_NAME_cmp(X509_get_subject_name(a), X509_get_subject_name(b)), 0);
    assert_int_equal(ASN1_TIME_compare(X509_get0_notBefore(a), X509_get0_notBefore(b)), 0);
    assert_int_equal(ASN1_TIME_compare(X509_get0_notAfter(a), X509_get0_notAfter(b)), 0);
    assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(a), X509_get0_serialNumber(b)), 0);
    for (int j = 0; j < 4; j++) {
        assert_int_equal(len[0][j], len[1][j]);
        assert_memory_equal(der[0][j], der[1][j], (size_t)len[0][j]);
        OPENSSL_free(der[0][j]);
        OPENSSL_free(der[1][j]);
    }
    X509_free(a);
    X509_free(b);
    for (int i = 0; i < 2; i++) {
        free(crt[i]);
        free(key[i]);
    }
    pki_cert_spec_done(&s);
    pair_done(&ca);
}

/* The checks a user-supplied CA goes through, each with its own message. */
static void test_cert__check_ca_names_each_fault(void **state)
{
    int64_t now = (int64_t)time(NULL);
    struct pair ca = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    struct pair other = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    struct pair leaf = make_leaf(&ca, PKI_KEY_ECDSA_P256, PKI_EKU_SERVER_AUTH);
    struct pair old = make_ca("old", PKI_KEY_ECDSA_P256, now - 400 * DAY, 100 * DAY);
    struct err e;

    assert_int_equal(pki_cert_check_ca(ca.crt, ca.key, 0, NULL, NULL, &e), 0);
    assert_int_equal(pki_cert_check_ca(ca.crt, other.key, 0, NULL, NULL, &e), -EKEYREJECTED);
    assert_string_equal(e.msg, "tls.key does not match tls.crt");
    assert_int_equal(pki_cert_check_ca(leaf.crt, leaf.key, 0, NULL, NULL, &e), -EINVAL);
    assert_string_equal(e.msg, "tls.crt is not a CA certificate (basicConstraints CA:TRUE is "
                               "missing)");
    assert_int_equal(pki_cert_check_ca(old.crt, old.key, 0, NULL, NULL, &e), -EKEYEXPIRED);
    assert_true(strncmp(e.msg, "tls.crt expired at ", 19) == 0);
    assert_int_equal(pki_cert_check_ca(ca.crt, ca.key, now - 3600, NULL, NULL, &e), -EKEYEXPIRED);
    assert_true(strncmp(e.msg, "tls.crt is not valid before ", 28) == 0);
    assert_int_equal(pki_cert_check_ca("-----BEGIN CERTIFICATE-----\nAAAA\n-----END "
                                       "CERTIFICATE-----\n",
                                       ca.key, 0, NULL, NULL, &e),
                     -EINVAL);
    assert_true(strncmp(e.msg, "tls.crt: no readable PEM certificate", 36) == 0);
    assert_int_equal(pki_cert_check_ca(ca.crt, "junk", 0, "ca.crt", "ca.key", &e), -EINVAL);
    assert_true(strncmp(e.msg, "ca.key: no readable PEM private key", 35) == 0);
    pair_done(&ca);
    pair_done(&other);
    pair_done(&leaf);
    pair_done(&old);
}

/* An issued leaf is kept while it matches its spec and has time left; anything else asks for a
 * new one, with the reason. */
static void test_cert__check_leaf_asks_for_renewal(void **state)
{
    struct pair ca = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    struct pair other = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    struct pki_cert_spec s;
    char *crt = NULL, *key = NULL;
    int64_t now = (int64_t)time(NULL);
    struct err e;

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, "kube-apiserver", NULL), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "a.example", NULL), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "10.0.0.1", NULL), 0);
    s.ext_usage = PKI_EKU_SERVER_AUTH;
    assert_int_equal(pki_cert_issue(ca.crt, ca.key, &s, &crt, &key, NULL), 0);

    assert_int_equal(pki_cert_check_leaf(crt, ca.crt, &s, 0, 180 * DAY, &e), 0);
    assert_int_equal(pki_cert_check_leaf(crt, other.crt, &s, 0, 180 * DAY, &e), -ESTALE);
    assert_string_equal(e.msg, "kube-apiserver: not signed by the current CA");
    assert_int_equal(pki_cert_check_leaf(crt, ca.crt, &s, now + 200 * DAY, 180 * DAY, &e), -ESTALE);
    assert_true(strncmp(e.msg, "kube-apiserver: expires at ", 27) == 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "b.example", NULL), 0);
    assert_int_equal(pki_cert_check_leaf(crt, ca.crt, &s, 0, 180 * DAY, &e), -ESTALE);
    assert_string_equal(e.msg, "kube-apiserver: subject alternative names differ");
    pki_cert_spec_done(&s);

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, "kube-apiserver", NULL), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "10.0.0.1", NULL), 0);
    assert_int_equal(pki_cert_spec_add_san(&s, "A.example", NULL), 0);
    s.ext_usage = PKI_EKU_SERVER_AUTH;
    assert_int_equal(pki_cert_check_leaf(crt, ca.crt, &s, 0, 180 * DAY, &e), 0);
    s.ext_usage |= PKI_EKU_CLIENT_AUTH;
    assert_int_equal(pki_cert_check_leaf(crt, ca.crt, &s, 0, 180 * DAY, &e), -ESTALE);
    assert_string_equal(e.msg, "kube-apiserver: usages differ");
    s.ext_usage = PKI_EKU_SERVER_AUTH;
    s.key_alg = PKI_KEY_RSA_2048;
    assert_int_equal(pki_cert_check_leaf(crt, ca.crt, &s, 0, 180 * DAY, &e), -ESTALE);
    assert_string_equal(e.msg, "kube-apiserver: key algorithm differs from RSA-2048");
    assert_int_equal(pki_cert_check_leaf("junk", ca.crt, &s, 0, 0, &e), -EINVAL);
    pki_cert_spec_done(&s);
    free(crt);
    free(key);
    pair_done(&ca);
    pair_done(&other);
}

/* Reading a certificate cut at any byte fails cleanly (a PEM reader must not need the whole
 * END line to be there, but it must never read a different certificate). */
static void test_cert__truncated_pem_at_every_byte_is_refused(void **state)
{
    struct pair ca = make_ca("kubernetes", PKI_KEY_ECDSA_P256, 0, 0);
    size_t n = strlen(ca.crt);
    size_t needed = n - strlen("-----\n");

    for (size_t cut = 0; cut < n; cut++) {
        char *part = strndup(ca.crt, cut);
        struct pki_cert_info *info = NULL;
        int r = pki_cert_info_read(part, NULL, &info, NULL);
        if (cut < needed)
            assert_int_equal(r, -EINVAL);
        else if (r == 0)
            assert_string_equal(info->common_name, "kubernetes");
        pki_cert_info_free(info);
        free(part);
    }
    pair_done(&ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cert__ca_has_kubeadm_shape),
        cmocka_unit_test(test_cert__leaf_chains_to_its_ca_only),
        cmocka_unit_test(test_cert__a_ca_signing_again_is_read_from_the_memo),
        cmocka_unit_test(test_cert__usage_and_digest_follow_key_type),
        cmocka_unit_test(test_cert__subject_orders_organizations_then_cn),
        cmocka_unit_test(test_cert__issuing_refuses_unusable_cas),
        cmocka_unit_test(test_cert__spec_checks_and_normalises_names),
        cmocka_unit_test(test_cert__same_spec_gives_same_fields),
        cmocka_unit_test(test_cert__check_ca_names_each_fault),
        cmocka_unit_test(test_cert__check_leaf_asks_for_renewal),
        cmocka_unit_test(test_cert__truncated_pem_at_every_byte_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
