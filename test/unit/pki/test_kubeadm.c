#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/pki/kubeadm.h"
#include "test/unit/pki/pki_check.h"
#include "test/support/proc.h"

#define DAY ((int64_t)86400)

static const char *const dual_stack[] = {"10.96.0.0/12", "fd00:10:96::/108"};
static const char *const extra[] = {"api.example.com", "192.0.2.10"};

static struct pki_cluster cluster(enum pki_key_alg alg)
{
    struct pki_cluster c = {
        .name = "foo",
        .ns = "tenants",
        .service_domain = "tenant.local",
        .service_cidrs = dual_stack,
        .n_service_cidrs = 2,
        .endpoint_host = "foo.example.net",
        .extra_sans = extra,
        .n_extra_sans = 2,
        .etcd_members = 3,
        .key_alg = alg,
    };
    return c;
}

static struct pki_kubeadm_set *full_set(enum pki_key_alg alg)
{
    struct pki_cluster c = cluster(alg);
    struct pki_kubeadm_set *set = NULL;
    struct err e;

    assert_int_equal(pki_kubeadm_set_new(3, &set), 0);
    assert_int_equal(pki_kubeadm_set_fill(&c, set, &e), 0);
    return set;
}

static void assert_strv(const struct pki_strv *sv, const char *const *want, size_t n)
{
    for (size_t i = 0; i < sv->n && i < n; i++)
        assert_string_equal(sv->v[i], want[i]);
    assert_int_equal(sv->n, n);
}

static struct pki_cert_info *info_of(const char *pem)
{
    struct pki_cert_info *info = NULL;

    assert_int_equal(pki_cert_info_read(pem, NULL, &info, NULL), 0);
    return info;
}

/* Which purpose OpenSSL must accept each certificate for. */
static int purpose_of(enum pki_kubeadm_cert w)
{
    switch (w) {
    case PKI_KUBEADM_APISERVER:
    case PKI_KUBEADM_ETCD_SERVER:
    case PKI_KUBEADM_ETCD_PEER:
        return X509_PURPOSE_SSL_SERVER;
    default:
        return X509_PURPOSE_SSL_CLIENT;
    }
}

/* Every leaf chains to its own CA (with a store holding only that CA) for its purpose, and to
 * no other CA of the set. */
static void test_kubeadm__every_leaf_chains_to_the_right_ca(void **state)
{
    struct pki_kubeadm_set *set = full_set(PKI_KEY_ECDSA_P256);
    const enum pki_kubeadm_cert cas[] = {PKI_KUBEADM_CA, PKI_KUBEADM_ETCD_CA,
                                         PKI_KUBEADM_FRONT_PROXY_CA};

    for (int w = 0; w < PKI_KUBEADM__COUNT; w++) {
        const char *crt[2 * 16];
        size_t n = 0;
        if (w == PKI_KUBEADM_ETCD_SERVER || w == PKI_KUBEADM_ETCD_PEER) {
            for (int i = 0; i < set->etcd_members; i++)
                crt[n++] = w == PKI_KUBEADM_ETCD_SERVER ? set->etcd_server[i].cert_pem
                                                        : set->etcd_peer[i].cert_pem;
        } else {
            crt[n++] = set->pairs[w].cert_pem;
        }
        for (size_t k = 0; k < n; k++) {
            for (size_t c = 0; c < 3; c++) {
                int r = verify_chain(set->pairs[cas[c]].cert_pem, crt[k],
                                     purpose_of((enum pki_kubeadm_cert)w));
                if (cas[c] == pki_kubeadm_signer((enum pki_kubeadm_cert)w))
                    assert_int_equal(r, X509_V_OK);
                else
                    assert_int_not_equal(r, X509_V_OK);
            }
            assert_true(serial_ok(crt[k], 64));
        }
    }
    /* Server certificates of etcd are also its client certificates (kubeadm, etcd 3.2+). */
    assert_int_equal(verify_chain(set->pairs[PKI_KUBEADM_ETCD_CA].cert_pem,
                                  set->etcd_peer[1].cert_pem, X509_PURPOSE_SSL_CLIENT),
                     X509_V_OK);
    /* ... and client certificates are not server certificates. */
    assert_int_equal(verify_chain(set->pairs[PKI_KUBEADM_CA].cert_pem,
                                  set->pairs[PKI_KUBEADM_ADMIN].cert_pem, X509_PURPOSE_SSL_SERVER),
                     X509_V_ERR_INVALID_PURPOSE);
    pki_kubeadm_set_free(set);
}

static void test_kubeadm__subjects_match_kubeadm(void **state)
{
    struct pki_kubeadm_set *set = full_set(PKI_KEY_ECDSA_P256);
    struct {
        enum pki_kubeadm_cert w;
        const char *cn;
        const char *org;
        unsigned eku;
    } want[] = {
        {PKI_KUBEADM_CA, "kubernetes", NULL, 0},
        {PKI_KUBEADM_ETCD_CA, "etcd-ca", NULL, 0},
        {PKI_KUBEADM_FRONT_PROXY_CA, "front-proxy-ca", NULL, 0},
        {PKI_KUBEADM_APISERVER, "kube-apiserver", NULL, PKI_EKU_SERVER_AUTH},
        {PKI_KUBEADM_APISERVER_KUBELET_CLIENT, "kube-apiserver-kubelet-client", "system:masters",
         PKI_EKU_CLIENT_AUTH},
        {PKI_KUBEADM_APISERVER_ETCD_CLIENT, "kube-apiserver-etcd-client", NULL,
         PKI_EKU_CLIENT_AUTH},
        {PKI_KUBEADM_FRONT_PROXY_CLIENT, "front-proxy-client", NULL, PKI_EKU_CLIENT_AUTH},
        {PKI_KUBEADM_ETCD_HEALTHCHECK_CLIENT, "kube-etcd-healthcheck-client", NULL,
         PKI_EKU_CLIENT_AUTH},
        {PKI_KUBEADM_CONTROLLER_MANAGER, "system:kube-controller-manager", NULL,
         PKI_EKU_CLIENT_AUTH},
        {PKI_KUBEADM_ADMIN, "kubernetes-admin", "system:masters", PKI_EKU_CLIENT_AUTH},
    };

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct pki_cert_info *info = info_of(set->pairs[want[i].w].cert_pem);
        bool ca = want[i].w <= PKI_KUBEADM_FRONT_PROXY_CA;
        int64_t lifetime, nb;

        assert_string_equal(info->common_name, want[i].cn);
        assert_int_equal(info->orgs.n, want[i].org ? 1 : 0);
        if (want[i].org)
            assert_string_equal(info->orgs.v[0], want[i].org);
        assert_int_equal(info->is_ca, ca);
        assert_int_equal(info->ext_usage, want[i].eku);
        assert_int_equal(info->key_alg, PKI_KEY_ECDSA_P256);
        cert_times(set->pairs[want[i].w].cert_pem, &lifetime, &nb);
        assert_int_equal(lifetime, (ca ? 3650 : 365) * DAY + 300);
        assert_true(nb < 0);
        pki_cert_info_free(info);
    }
    struct pki_cert_info *info = info_of(set->etcd_server[2].cert_pem);
    assert_string_equal(info->common_name, "foo-etcd-2");
    assert_int_equal(info->ext_usage, PKI_EKU_SERVER_AUTH | PKI_EKU_CLIENT_AUTH);
    pki_cert_info_free(info);
    pki_kubeadm_set_free(set);
}

static void test_kubeadm__apiserver_sans_cover_every_name(void **state)
{
    struct pki_kubeadm_set *set = full_set(PKI_KEY_ECDSA_P256);
    struct pki_cert_info *info = info_of(set->pairs[PKI_KUBEADM_APISERVER].cert_pem);
    const char *const dns[] = {"kubernetes",
                               "kubernetes.default",
                               "kubernetes.default.svc",
                               "kubernetes.default.svc.tenant.local",
                               "foo-apiserver",
                               "foo-apiserver.tenants",
                               "foo-apiserver.tenants.svc",
                               "foo-apiserver.tenants.svc.cluster.local",
                               "localhost",
                               "foo.example.net",
                               "api.example.com"};
    const char *const ips[] = {"10.96.0.1", "fd00:10:96::1", "127.0.0.1", "192.0.2.10"};

    assert_strv(&info->dns_names, dns, 11);
    assert_strv(&info->ips, ips, 4);
    pki_cert_info_free(info);
    pki_kubeadm_set_free(set);
}

static void test_kubeadm__etcd_sans_name_the_member_and_services(void **state)
{
    struct pki_cluster c = cluster(PKI_KEY_ECDSA_P256);
    struct pki_cert_spec s;
    struct err e;
    const char *const member1[] = {"foo-etcd-1",
                                   "foo-etcd-1.foo-etcd",
                                   "foo-etcd-1.foo-etcd.tenants",
                                   "foo-etcd-1.foo-etcd.tenants.svc",
                                   "foo-etcd-1.foo-etcd.tenants.svc.cluster.local",
                                   "foo-etcd",
                                   "foo-etcd.tenants",
                                   "foo-etcd.tenants.svc",
                                   "foo-etcd.tenants.svc.cluster.local",
                                   "localhost"};
    const char *const ips[] = {"127.0.0.1", "::1"};

    assert_int_equal(pki_kubeadm_spec(&c, PKI_KUBEADM_ETCD_PEER, 1, &s, &e), 0);
    assert_string_equal(s.common_name, "foo-etcd-1");
    assert_strv(&s.dns_names, member1, 10);
    assert_strv(&s.ips, ips, 2);
    pki_cert_spec_done(&s);

    /* One certificate for all members, for StatefulSets whose pods share a Secret. */
    assert_int_equal(pki_kubeadm_spec(&c, PKI_KUBEADM_ETCD_SERVER, -1, &s, &e), 0);
    assert_string_equal(s.common_name, "foo-etcd");
    assert_int_equal(s.dns_names.n, 3 * 5 + 5);
    assert_string_equal(s.dns_names.v[14], "foo-etcd-2.foo-etcd.tenants.svc.cluster.local");
    pki_cert_spec_done(&s);

    assert_int_equal(pki_kubeadm_spec(&c, PKI_KUBEADM_ETCD_SERVER, 3, &s, &e), -EINVAL);
    assert_string_equal(e.msg, "etcd/server: member 3 is not within 0..2");
}

static void test_kubeadm__defaults_and_bad_parameters(void **state)
{
    struct pki_cluster c = {.name = "bar", .ns = "default"};
    struct pki_cert_spec s;
    struct err e;
    const char *const ips[] = {"10.96.0.1", "127.0.0.1"};

    assert_int_equal(pki_kubeadm_spec(&c, PKI_KUBEADM_APISERVER, 0, &s, &e), 0);
    assert_strv(&s.ips, ips, 2);
    assert_string_equal(s.dns_names.v[3], "kubernetes.default.svc.cluster.local");
    assert_int_equal(s.key_alg, PKI_KEY_ECDSA_P256);
    pki_cert_spec_done(&s);

    const char *const bad_cidr[] = {"10.0.0.1/32"};
    c.service_cidrs = bad_cidr;
    c.n_service_cidrs = 1;
    assert_int_equal(pki_kubeadm_spec(&c, PKI_KUBEADM_APISERVER, 0, &s, &e), -EINVAL);
    assert_string_equal(e.msg,
                        "service CIDR 0: \"10.0.0.1/32\" is not a CIDR with room for addresses");
    /* Host bits are masked off before the first address is taken. */
    const char *const odd_cidr[] = {"10.1.2.3/16"};
    c.service_cidrs = odd_cidr;
    assert_int_equal(pki_kubeadm_spec(&c, PKI_KUBEADM_APISERVER, 0, &s, &e), 0);
    assert_string_equal(s.ips.v[0], "10.1.0.1");
    pki_cert_spec_done(&s);
    c.n_service_cidrs = 0;

    c.name = "Foo";
    assert_int_equal(pki_kubeadm_spec(&c, PKI_KUBEADM_CA, 0, &s, &e), -EINVAL);
    assert_string_equal(e.msg,
                        "cluster name: \"Foo\" must be a DNS label of at most 44 characters");
    c.name = "foo";
    const char *const bad_san[] = {"ok.example", "bad name"};
    c.extra_sans = bad_san;
    c.n_extra_sans = 2;
    assert_int_equal(pki_kubeadm_spec(&c, PKI_KUBEADM_ADMIN, 0, &s, &e), -EINVAL);
    assert_string_equal(e.msg, "extra SAN 1: \"bad name\" is not a valid DNS name");
    c.n_extra_sans = 0;
    c.etcd_members = 17;
    assert_int_equal(pki_kubeadm_spec(&c, PKI_KUBEADM_ADMIN, 0, &s, &e), -EINVAL);
    assert_string_equal(e.msg, "etcd members: 17 is not within 1..16");
}

/* The digest of a cluster's parameters changes with each field a spec is built from, and with
 * nothing else: equal parameters from other strings give the same digest, the clock none. */
static void test_kubeadm__the_cluster_digest_covers_what_a_spec_reads(void **state)
{
    static const char *const one_cidr[] = {"10.96.0.0/12"};
    static const char *const other_extra[] = {"api.example.com", "192.0.2.11"};
    static const char *const fewer_extra[] = {"api.example.com"};
    struct pki_cluster base = cluster(PKI_KEY_ECDSA_P256), c;
    char want[PKI_CLUSTER_DIGEST_MAX], got[PKI_CLUSTER_DIGEST_MAX];
    char name[] = "foo";
    enum { N_CHANGES = 14 };
    char seen[N_CHANGES][PKI_CLUSTER_DIGEST_MAX];

    (void)state;
    assert_int_equal(pki_cluster_digest(&base, want), 0);
    assert_int_equal(strlen(want), 64);
    c = base;
    c.name = name; /* the same text elsewhere */
    c.now = 1234567890;
    assert_int_equal(pki_cluster_digest(&c, got), 0);
    assert_string_equal(got, want);

    for (int i = 0; i < N_CHANGES; i++) {
        c = base;
        switch (i) {
        case 0:
            c.name = "bar";
            break;
        case 1:
            c.ns = "others";
            break;
        case 2:
            c.service_domain = NULL;
            break;
        case 3:
            c.super_domain = "super.local";
            break;
        case 4:
            c.service_cidrs = one_cidr;
            c.n_service_cidrs = 1;
            break;
        case 5:
            c.n_service_cidrs = 0;
            break;
        case 6:
            c.endpoint_host = "bar.example.net";
            break;
        case 7:
            c.endpoint_host = NULL;
            break;
        case 8:
            c.extra_sans = other_extra;
            break;
        case 9:
            c.extra_sans = fewer_extra;
            c.n_extra_sans = 1;
            break;
        case 10:
            c.etcd_members = 5;
            break;
        case 11:
            c.key_alg = PKI_KEY_RSA_2048;
            break;
        case 12:
            c.ca_validity = 100 * DAY;
            break;
        default:
            c.leaf_validity = 10 * DAY;
            break;
        }
        assert_int_equal(pki_cluster_digest(&c, seen[i]), 0);
        assert_string_not_equal(seen[i], want);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(seen[i], seen[j]);
    }
}

static void test_kubeadm__names_and_signers(void **state)
{
    assert_string_equal(pki_kubeadm_purpose(PKI_KUBEADM_CA), "ca");
    assert_string_equal(pki_kubeadm_purpose(PKI_KUBEADM_ETCD_CA), "etcd");
    assert_string_equal(pki_kubeadm_purpose(PKI_KUBEADM_FRONT_PROXY_CA), "proxy");
    assert_string_equal(pki_kubeadm_purpose(PKI_KUBEADM_APISERVER_ETCD_CLIENT),
                        "apiserver-etcd-client");
    assert_string_equal(pki_kubeadm_name(PKI_KUBEADM_ETCD_HEALTHCHECK_CLIENT),
                        "etcd/healthcheck-client");
    assert_int_equal(pki_kubeadm_signer(PKI_KUBEADM_FRONT_PROXY_CLIENT),
                     PKI_KUBEADM_FRONT_PROXY_CA);
    assert_int_equal(pki_kubeadm_signer(PKI_KUBEADM_APISERVER_ETCD_CLIENT), PKI_KUBEADM_ETCD_CA);
    assert_int_equal(pki_kubeadm_signer(PKI_KUBEADM_ADMIN), PKI_KUBEADM_CA);
}

/* A set that already holds a (user-supplied) CA keeps it and signs with it; the service-account
 * pair is a public key PEM matching its private key. */
static void test_kubeadm__fill_keeps_supplied_cas(void **state)
{
    struct pki_cluster c = cluster(PKI_KEY_ECDSA_P256);
    struct pki_kubeadm_set *first = full_set(PKI_KEY_ECDSA_P256), *second = NULL;
    struct err e;

    c.etcd_members = 1;
    assert_int_equal(pki_kubeadm_set_new(1, &second), 0);
    second->pairs[PKI_KUBEADM_CA].cert_pem = strdup(first->pairs[PKI_KUBEADM_CA].cert_pem);
    second->pairs[PKI_KUBEADM_CA].key_pem = strdup(first->pairs[PKI_KUBEADM_CA].key_pem);
    assert_int_equal(pki_kubeadm_set_fill(&c, second, &e), 0);
    assert_string_equal(second->pairs[PKI_KUBEADM_CA].cert_pem,
                        first->pairs[PKI_KUBEADM_CA].cert_pem);
    assert_int_equal(verify_chain(first->pairs[PKI_KUBEADM_CA].cert_pem,
                                  second->pairs[PKI_KUBEADM_APISERVER].cert_pem,
                                  X509_PURPOSE_SSL_SERVER),
                     X509_V_OK);
    assert_true(strncmp(second->sa.cert_pem, "-----BEGIN PUBLIC KEY-----", 26) == 0);
    assert_int_equal(pki_key_check_match(second->sa.key_pem, second->sa.cert_pem, NULL, NULL, &e),
                     0);
    pki_kubeadm_set_free(second);

    /* A CA certificate without its key cannot sign. */
    assert_int_equal(pki_kubeadm_set_new(1, &second), 0);
    second->pairs[PKI_KUBEADM_ETCD_CA].cert_pem =
        strdup(first->pairs[PKI_KUBEADM_ETCD_CA].cert_pem);
    assert_int_equal(pki_kubeadm_set_fill(&c, second, &e), -EINVAL);
    assert_string_equal(e.msg, "apiserver-etcd-client: its CA etcd/ca has no key");
    pki_kubeadm_set_free(second);
    pki_kubeadm_set_free(first);
    pki_kubeadm_set_free(NULL);
}

/* The RSA set has RSA keys of the requested size everywhere, keyEncipherment on leaves. */
static void test_kubeadm__rsa_set_uses_rsa_everywhere(void **state)
{
    struct pki_kubeadm_set *set = full_set(PKI_KEY_RSA_2048);
    enum pki_key_alg alg;

    for (int w = 0; w < PKI_KUBEADM__COUNT; w++) {
        if (w == PKI_KUBEADM_ETCD_SERVER || w == PKI_KUBEADM_ETCD_PEER)
            continue;
        struct pki_cert_info *info = info_of(set->pairs[w].cert_pem);
        assert_int_equal(info->key_alg, PKI_KEY_RSA_2048);
        if (!info->is_ca)
            assert_int_equal(info->key_usage, PKI_KU_DIGITAL_SIGNATURE | PKI_KU_KEY_ENCIPHERMENT);
        pki_cert_info_free(info);
    }
    assert_int_equal(pki_key_alg_of(set->sa.key_pem, &alg, NULL), 0);
    assert_int_equal(alg, PKI_KEY_RSA_2048);
    assert_int_equal(verify_chain(set->pairs[PKI_KUBEADM_ETCD_CA].cert_pem,
                                  set->etcd_server[0].cert_pem, X509_PURPOSE_SSL_SERVER),
                     X509_V_OK);
    pki_kubeadm_set_free(set);
}

/* ---- the same, proved with the openssl command-line tool ---- */

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* A temporary directory for the files, removed even when an assertion fails. */
static int make_dir(void **state)
{
    static char dir[64];

    snprintf(dir, sizeof(dir), "/tmp/nestcp-pki-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    *state = dir;
    return 0;
}

static int remove_dir(void **state)
{
    char out[64];

    proc_run(out, sizeof(out), "rm -rf %s", (const char *)*state);
    return 0;
}

static void test_kubeadm__openssl_cli_verifies_the_set(void **state)
{
    struct pki_kubeadm_set *set = full_set(PKI_KEY_ECDSA_P256);
    const char *dir = *state;
    char out[8192];

    write_file(dir, "ca.crt", set->pairs[PKI_KUBEADM_CA].cert_pem);
    write_file(dir, "etcd-ca.crt", set->pairs[PKI_KUBEADM_ETCD_CA].cert_pem);
    write_file(dir, "proxy-ca.crt", set->pairs[PKI_KUBEADM_FRONT_PROXY_CA].cert_pem);
    write_file(dir, "apiserver.crt", set->pairs[PKI_KUBEADM_APISERVER].cert_pem);
    write_file(dir, "apiserver.key", set->pairs[PKI_KUBEADM_APISERVER].key_pem);
    write_file(dir, "admin.crt", set->pairs[PKI_KUBEADM_ADMIN].cert_pem);
    write_file(dir, "proxy-client.crt", set->pairs[PKI_KUBEADM_FRONT_PROXY_CLIENT].cert_pem);
    write_file(dir, "etcd-peer-0.crt", set->etcd_peer[0].cert_pem);
    write_file(dir, "sa.pub", set->sa.cert_pem);
    write_file(dir, "sa.key", set->sa.key_pem);

    assert_int_equal(
        proc_run(out, sizeof(out),
                 "cd %s && openssl verify -CAfile ca.crt -purpose sslserver apiserver.crt "
                 "2>&1 && openssl verify -CAfile ca.crt -purpose sslclient admin.crt 2>&1 "
                 "&& openssl verify -CAfile proxy-ca.crt -purpose sslclient "
                 "proxy-client.crt 2>&1 && openssl verify -CAfile etcd-ca.crt -purpose "
                 "sslserver etcd-peer-0.crt 2>&1",
                 dir),
        0);
    assert_string_equal(out, "apiserver.crt: OK\nadmin.crt: OK\nproxy-client.crt: OK\n"
                             "etcd-peer-0.crt: OK\n");
    /* The wrong CA and the wrong purpose are refused by the tool too. */
    assert_int_not_equal(proc_run(out, sizeof(out),
                                  "openssl verify -CAfile %s/etcd-ca.crt %s/apiserver.crt 2>&1",
                                  dir, dir),
                         0);
    assert_int_not_equal(
        proc_run(out, sizeof(out),
                 "openssl verify -CAfile %s/ca.crt -purpose sslserver %s/admin.crt "
                 "2>&1",
                 dir, dir),
        0);
    assert_int_equal(proc_run(out, sizeof(out),
                              "openssl x509 -in %s/apiserver.crt -noout -ext "
                              "subjectAltName,basicConstraints,extendedKeyUsage",
                              dir),
                     0);
    assert_non_null(strstr(out, "DNS:kubernetes.default.svc.tenant.local"));
    assert_non_null(strstr(out, "IP Address:FD00:10:96:0:0:0:0:1"));
    assert_non_null(strstr(out, "CA:FALSE"));
    assert_non_null(strstr(out, "TLS Web Server Authentication"));
    /* The key on disk belongs to the certificate, and sa.pub to sa.key. */
    assert_int_equal(
        proc_run(out, sizeof(out),
                 "cd %s && a=$(openssl x509 -in apiserver.crt -noout -pubkey) && "
                 "b=$(openssl pkey -in apiserver.key -pubout) && [ \"$a\" = \"$b\" ] && "
                 "c=$(openssl pkey -in sa.key -pubout) && [ \"$c\" = \"$(cat sa.pub)\" ] "
                 "&& echo same",
                 dir),
        0);
    assert_string_equal(out, "same\n");
    pki_kubeadm_set_free(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubeadm__every_leaf_chains_to_the_right_ca),
        cmocka_unit_test(test_kubeadm__subjects_match_kubeadm),
        cmocka_unit_test(test_kubeadm__apiserver_sans_cover_every_name),
        cmocka_unit_test(test_kubeadm__etcd_sans_name_the_member_and_services),
        cmocka_unit_test(test_kubeadm__defaults_and_bad_parameters),
        cmocka_unit_test(test_kubeadm__names_and_signers),
        cmocka_unit_test(test_kubeadm__the_cluster_digest_covers_what_a_spec_reads),
        cmocka_unit_test(test_kubeadm__fill_keeps_supplied_cas),
        cmocka_unit_test(test_kubeadm__rsa_set_uses_rsa_everywhere),
        cmocka_unit_test_setup_teardown(test_kubeadm__openssl_cli_verifies_the_set, make_dir,
                                        remove_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
