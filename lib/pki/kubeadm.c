/* The kubeadm certificate set of one tenant control plane (pki_kubeadm_*, pki_cluster_*). */

#include "lib/pki/kubeadm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "lib/util/strutil.h"

struct cert_def {
    const char *file;    /* kubeadm's file name */
    const char *purpose; /* Secret name suffix */
    const char *cn;      /* NULL: derived from the cluster */
    const char *org;
    unsigned ext_usage;
    enum pki_kubeadm_cert signer;
};

#define SERVER PKI_EKU_SERVER_AUTH
#define CLIENT PKI_EKU_CLIENT_AUTH

static const struct cert_def defs[PKI_KUBEADM__COUNT] = {
    [PKI_KUBEADM_CA] = {"ca", "ca", "kubernetes", NULL, 0, PKI_KUBEADM_CA},
    [PKI_KUBEADM_ETCD_CA] = {"etcd/ca", "etcd", "etcd-ca", NULL, 0, PKI_KUBEADM_ETCD_CA},
    [PKI_KUBEADM_FRONT_PROXY_CA] = {"front-proxy-ca", "proxy", "front-proxy-ca", NULL, 0,
                                    PKI_KUBEADM_FRONT_PROXY_CA},
    [PKI_KUBEADM_APISERVER] = {"apiserver", "apiserver", "kube-apiserver", NULL, SERVER,
                               PKI_KUBEADM_CA},
    [PKI_KUBEADM_APISERVER_KUBELET_CLIENT] = {"apiserver-kubelet-client",
                                              "apiserver-kubelet-client",
                                              "kube-apiserver-kubelet-client", "system:masters",
                                              CLIENT, PKI_KUBEADM_CA},
    [PKI_KUBEADM_APISERVER_ETCD_CLIENT] = {"apiserver-etcd-client", "apiserver-etcd-client",
                                           "kube-apiserver-etcd-client", NULL, CLIENT,
                                           PKI_KUBEADM_ETCD_CA},
    [PKI_KUBEADM_FRONT_PROXY_CLIENT] = {"front-proxy-client", "front-proxy-client",
                                        "front-proxy-client", NULL, CLIENT,
                                        PKI_KUBEADM_FRONT_PROXY_CA},
    [PKI_KUBEADM_ETCD_SERVER] = {"etcd/server", "etcd-server", NULL, NULL, SERVER | CLIENT,
                                 PKI_KUBEADM_ETCD_CA},
    [PKI_KUBEADM_ETCD_PEER] = {"etcd/peer", "etcd-peer", NULL, NULL, SERVER | CLIENT,
                               PKI_KUBEADM_ETCD_CA},
    [PKI_KUBEADM_ETCD_HEALTHCHECK_CLIENT] = {"etcd/healthcheck-client", "etcd-healthcheck-client",
                                             "kube-etcd-healthcheck-client", NULL, CLIENT,
                                             PKI_KUBEADM_ETCD_CA},
    [PKI_KUBEADM_CONTROLLER_MANAGER] = {"controller-manager", "controller-manager",
                                        "system:kube-controller-manager", NULL, CLIENT,
                                        PKI_KUBEADM_CA},
    [PKI_KUBEADM_ADMIN] = {"admin", "admin", "kubernetes-admin", "system:masters", CLIENT,
                           PKI_KUBEADM_CA},
};

static bool valid_which(enum pki_kubeadm_cert which)
{
    return (unsigned)which < PKI_KUBEADM__COUNT;
}

const char *pki_kubeadm_name(enum pki_kubeadm_cert which)
{
    return valid_which(which) ? defs[which].file : "unknown";
}

const char *pki_kubeadm_purpose(enum pki_kubeadm_cert which)
{
    return valid_which(which) ? defs[which].purpose : "unknown";
}

enum pki_kubeadm_cert pki_kubeadm_signer(enum pki_kubeadm_cert which)
{
    return valid_which(which) ? defs[which].signer : PKI_KUBEADM_CA;
}

static bool is_ca(enum pki_kubeadm_cert which)
{
    return defs[which].signer == which;
}

/* ---- cluster parameters ---- */

static bool dns_label(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > max || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

static bool dns_domain(const char *s)
{
    struct pki_cert_spec probe;
    bool ok;

    pki_cert_spec_init(&probe);
    ok = pki_cert_spec_add_dns(&probe, s, NULL) == 0 && !strchr(s, '*');
    pki_cert_spec_done(&probe);
    return ok;
}

/* Writes the first usable address of a CIDR ("10.96.0.0/12" -> "10.96.0.1"). */
static int cidr_first_ip(const char *cidr, char out[static INET6_ADDRSTRLEN])
{
    char addr[INET6_ADDRSTRLEN];
    unsigned char bin[16];
    const char *slash = strchr(cidr, '/');
    int family, bits, prefix;
    size_t n = slash ? (size_t)(slash - cidr) : 0;

    if (!slash || n == 0 || n >= sizeof(addr))
        return -EINVAL;
    memcpy(addr, cidr, n);
    addr[n] = '\0';
    if (inet_pton(AF_INET, addr, bin) == 1) {
        family = AF_INET;
        bits = 32;
    } else if (inet_pton(AF_INET6, addr, bin) == 1) {
        family = AF_INET6;
        bits = 128;
    } else {
        return -EINVAL;
    }
    /* Leave room for at least the network address and one more. */
    if (str_to_int(slash + 1, 0, bits - 2, &prefix) < 0)
        return -EINVAL;
    for (int i = prefix; i < bits; i++)
        bin[i / 8] &= (unsigned char)~(0x80u >> (i % 8));
    for (int i = bits / 8 - 1; i >= 0 && ++bin[i] == 0; i--)
        ;
    return inet_ntop(family, bin, out, INET6_ADDRSTRLEN) ? 0 : -EINVAL;
}

int pki_cluster_validate(const struct pki_cluster *c, struct err *e)
{
    char ip[INET6_ADDRSTRLEN];
    struct pki_cert_spec probe;
    int r = 0;

    /* "<name>-controller-manager" must stay a DNS label of at most 63 characters. */
    if (!dns_label(c->name, 63 - strlen("-controller-manager")))
        return err_set(e, -EINVAL,
                       "cluster name: \"%.80s\" must be a DNS label of at most %zu characters",
                       c->name ? c->name : "", 63 - strlen("-controller-manager"));
    if (!dns_label(c->ns, 63))
        return err_set(e, -EINVAL, "namespace: \"%.80s\" must be a DNS label", c->ns ? c->ns : "");
    if (c->service_domain && !dns_domain(c->service_domain))
        return err_set(e, -EINVAL, "serviceDomain: \"%.80s\" is not a DNS domain",
                       c->service_domain);
    if (c->super_domain && !dns_domain(c->super_domain))
        return err_set(e, -EINVAL, "super cluster domain: \"%.80s\" is not a DNS domain",
                       c->super_domain);
    for (size_t i = 0; i < c->n_service_cidrs; i++)
        if (!c->service_cidrs[i] || cidr_first_ip(c->service_cidrs[i], ip) < 0)
            return err_set(e, -EINVAL,
                           "service CIDR %zu: \"%.80s\" is not a CIDR with room for addresses", i,
                           c->service_cidrs[i] ? c->service_cidrs[i] : "");
    if (c->etcd_members < 0 || c->etcd_members > PKI_MAX_ETCD_MEMBERS)
        return err_set(e, -EINVAL, "etcd members: %d is not within 1..%d", c->etcd_members,
                       PKI_MAX_ETCD_MEMBERS);
    if (c->ca_validity < 0 || c->leaf_validity < 0)
        return err_set(e, -EINVAL, "validity: must not be negative");
    pki_cert_spec_init(&probe);
    if (c->endpoint_host && *c->endpoint_host)
        r = pki_cert_spec_add_san(&probe, c->endpoint_host, e);
    if (r < 0)
        err_prefix(e, "controlPlaneEndpoint.host: ");
    for (size_t i = 0; r == 0 && i < c->n_extra_sans; i++) {
        r = pki_cert_spec_add_san(&probe, c->extra_sans[i], e);
        if (r < 0)
            err_prefix(e, "extra SAN %zu: ", i);
    }
    pki_cert_spec_done(&probe);
    return r;
}

/* ---- specs ---- */

static const char *service_domain(const struct pki_cluster *c)
{
    return c->service_domain ? c->service_domain : PKI_DEFAULT_SERVICE_DOMAIN;
}

static const char *super_domain(const struct pki_cluster *c)
{
    return c->super_domain ? c->super_domain : PKI_DEFAULT_SERVICE_DOMAIN;
}

static int add_dnsf(struct pki_cert_spec *s, struct err *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int add_dnsf(struct pki_cert_spec *s, struct err *e, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(name))
        return err_set(e, -EINVAL, "a DNS name is longer than 253 characters");
    return pki_cert_spec_add_dns(s, name, e);
}

/* The four names of a Service seen from inside the super cluster. */
static int add_service_names(struct pki_cert_spec *s, const char *svc, const char *ns,
                             const char *domain, struct err *e)
{
    int r = add_dnsf(s, e, "%s", svc);
    if (r == 0)
        r = add_dnsf(s, e, "%s.%s", svc, ns);
    if (r == 0)
        r = add_dnsf(s, e, "%s.%s.svc", svc, ns);
    if (r == 0)
        r = add_dnsf(s, e, "%s.%s.svc.%s", svc, ns, domain);
    return r;
}

static int apiserver_sans(const struct pki_cluster *c, struct pki_cert_spec *s, struct err *e)
{
    char svc[128], ip[INET6_ADDRSTRLEN];
    int r;

    if (c->n_service_cidrs == 0) {
        r = cidr_first_ip(PKI_DEFAULT_SERVICE_CIDR, ip);
        if (r == 0)
            r = pki_cert_spec_add_ip(s, ip, e);
    }
    for (size_t i = 0; i < c->n_service_cidrs; i++) {
        if (cidr_first_ip(c->service_cidrs[i], ip) < 0)
            return err_set(e, -EINVAL, "service CIDR %zu is not a CIDR", i);
        r = pki_cert_spec_add_ip(s, ip, e);
        if (r < 0)
            return r;
    }
    r = pki_cert_spec_add_ip(s, "127.0.0.1", e);
    if (r == 0)
        r = add_dnsf(s, e, "kubernetes");
    if (r == 0)
        r = add_dnsf(s, e, "kubernetes.default");
    if (r == 0)
        r = add_dnsf(s, e, "kubernetes.default.svc");
    if (r == 0)
        r = add_dnsf(s, e, "kubernetes.default.svc.%s", service_domain(c));
    snprintf(svc, sizeof(svc), "%s-apiserver", c->name);
    if (r == 0)
        r = add_service_names(s, svc, c->ns, super_domain(c), e);
    if (r == 0)
        r = add_dnsf(s, e, "localhost");
    if (r == 0 && c->endpoint_host && *c->endpoint_host)
        r = pki_cert_spec_add_san(s, c->endpoint_host, e);
    for (size_t i = 0; r == 0 && i < c->n_extra_sans; i++)
        r = pki_cert_spec_add_san(s, c->extra_sans[i], e);
    return r;
}

static int etcd_member_names(const struct pki_cluster *c, struct pki_cert_spec *s, int member,
                             struct err *e)
{
    int r = add_dnsf(s, e, "%s-etcd-%d", c->name, member);
    if (r == 0)
        r = add_dnsf(s, e, "%s-etcd-%d.%s-etcd", c->name, member, c->name);
    if (r == 0)
        r = add_dnsf(s, e, "%s-etcd-%d.%s-etcd.%s", c->name, member, c->name, c->ns);
    if (r == 0)
        r = add_dnsf(s, e, "%s-etcd-%d.%s-etcd.%s.svc", c->name, member, c->name, c->ns);
    if (r == 0)
        r = add_dnsf(s, e, "%s-etcd-%d.%s-etcd.%s.svc.%s", c->name, member, c->name, c->ns,
                     super_domain(c));
    return r;
}

static int etcd_sans(const struct pki_cluster *c, struct pki_cert_spec *s, int member,
                     struct err *e)
{
    char svc[128];
    int members = c->etcd_members ? c->etcd_members : 1;
    int r = 0;

    if (member >= 0) {
        r = etcd_member_names(c, s, member, e);
    } else {
        for (int i = 0; r == 0 && i < members; i++)
            r = etcd_member_names(c, s, i, e);
    }
    snprintf(svc, sizeof(svc), "%s-etcd", c->name);
    if (r == 0)
        r = add_service_names(s, svc, c->ns, super_domain(c), e);
    if (r == 0)
        r = add_dnsf(s, e, "localhost");
    if (r == 0)
        r = pki_cert_spec_add_ip(s, "127.0.0.1", e);
    if (r == 0)
        r = pki_cert_spec_add_ip(s, "::1", e);
    return r;
}

int pki_kubeadm_spec(const struct pki_cluster *c, enum pki_kubeadm_cert which, int member,
                     struct pki_cert_spec *ret_spec, struct err *e)
{
    struct pki_cert_spec s;
    const struct cert_def *d;
    int members = c->etcd_members ? c->etcd_members : 1;
    char cn[PKI_CN_MAX + 16];
    bool etcd_member = which == PKI_KUBEADM_ETCD_SERVER || which == PKI_KUBEADM_ETCD_PEER;
    int r;

    if (!valid_which(which))
        return err_set(e, -EINVAL, "unknown certificate %d", (int)which);
    r = pki_cluster_validate(c, e);
    if (r < 0)
        return r;
    if (etcd_member && (member < -1 || member >= members))
        return err_set(e, -EINVAL, "%s: member %d is not within 0..%d", defs[which].file, member,
                       members - 1);
    d = &defs[which];
    pki_cert_spec_init(&s);
    s.key_alg = c->key_alg;
    s.now = c->now;
    s.is_ca = is_ca(which);
    s.ext_usage = d->ext_usage;
    s.validity = s.is_ca ? c->ca_validity : c->leaf_validity;
    if (d->cn)
        snprintf(cn, sizeof(cn), "%s", d->cn);
    else if (member >= 0)
        snprintf(cn, sizeof(cn), "%s-etcd-%d", c->name, member);
    else
        snprintf(cn, sizeof(cn), "%s-etcd", c->name);
    r = pki_cert_spec_set_cn(&s, cn, e);
    if (r == 0 && d->org)
        r = pki_cert_spec_add_org(&s, d->org, e);
    if (r == 0 && which == PKI_KUBEADM_APISERVER)
        r = apiserver_sans(c, &s, e);
    if (r == 0 && etcd_member)
        r = etcd_sans(c, &s, member, e);
    if (r < 0) {
        err_prefix(e, "%s: ", d->file);
        pki_cert_spec_done(&s);
        return r;
    }
    *ret_spec = s;
    return 0;
}

/* ---- what a spec is made of ---- */

struct feed {
    EVP_MD_CTX *ctx;
    bool ok;
};

/* Each string with its NUL, so that no two lists of strings feed the same bytes; NULL as one
 * byte no string of a spec holds. */
static void feed_str(struct feed *f, const char *s)
{
    static const char absent = 1;

    f->ok = f->ok && (s ? EVP_DigestUpdate(f->ctx, s, strlen(s) + 1)
                        : EVP_DigestUpdate(f->ctx, &absent, 1)) == 1;
}

static void feed_int(struct feed *f, long long v)
{
    char num[32];

    snprintf(num, sizeof(num), "%lld", v);
    feed_str(f, num);
}

static void feed_strs(struct feed *f, const char *const *v, size_t n)
{
    feed_int(f, (long long)n);
    for (size_t i = 0; i < n; i++)
        feed_str(f, v[i]);
}

int pki_cluster_digest(const struct pki_cluster *c, char ret_digest[static PKI_CLUSTER_DIGEST_MAX])
{
    struct feed f = {EVP_MD_CTX_new(), false};
    unsigned char md[32];
    unsigned int len = 0;

    /* Every field of struct pki_cluster but now; a change to what pki_kubeadm_spec makes of
     * them changes the tag. */
    f.ok = f.ctx && EVP_DigestInit_ex(f.ctx, EVP_sha256(), NULL) == 1;
    feed_str(&f, "pki_cluster/1");
    feed_str(&f, c->name);
    feed_str(&f, c->ns);
    feed_str(&f, c->service_domain);
    feed_str(&f, c->super_domain);
    feed_strs(&f, c->service_cidrs, c->n_service_cidrs);
    feed_str(&f, c->endpoint_host);
    feed_strs(&f, c->extra_sans, c->n_extra_sans);
    feed_int(&f, c->etcd_members);
    feed_int(&f, c->key_alg);
    feed_int(&f, c->ca_validity);
    feed_int(&f, c->leaf_validity);
    f.ok = f.ok && EVP_DigestFinal_ex(f.ctx, md, &len) == 1 && len == sizeof(md);
    EVP_MD_CTX_free(f.ctx);
    if (!f.ok)
        return -ENOMEM;
    for (size_t i = 0; i < sizeof(md); i++)
        snprintf(ret_digest + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* ---- the whole set ---- */

void pki_pem_pair_done(struct pki_pem_pair *pair)
{
    if (!pair)
        return;
    free(pair->cert_pem);
    if (pair->key_pem)
        OPENSSL_clear_free(pair->key_pem, strlen(pair->key_pem));
    pair->cert_pem = NULL;
    pair->key_pem = NULL;
}

int pki_kubeadm_set_new(int etcd_members, struct pki_kubeadm_set **ret_set)
{
    struct pki_kubeadm_set *set;

    if (etcd_members < 1 || etcd_members > PKI_MAX_ETCD_MEMBERS)
        return -EINVAL;
    set = calloc(1, sizeof(*set));
    if (!set)
        return -ENOMEM;
    set->etcd_members = etcd_members;
    set->etcd_server = calloc((size_t)etcd_members, sizeof(*set->etcd_server));
    set->etcd_peer = calloc((size_t)etcd_members, sizeof(*set->etcd_peer));
    if (!set->etcd_server || !set->etcd_peer) {
        pki_kubeadm_set_free(set);
        return -ENOMEM;
    }
    *ret_set = set;
    return 0;
}

void pki_kubeadm_set_free(struct pki_kubeadm_set *set)
{
    if (!set)
        return;
    for (int i = 0; i < PKI_KUBEADM__COUNT; i++)
        pki_pem_pair_done(&set->pairs[i]);
    pki_pem_pair_done(&set->sa);
    for (int i = 0; i < set->etcd_members; i++) {
        if (set->etcd_server)
            pki_pem_pair_done(&set->etcd_server[i]);
        if (set->etcd_peer)
            pki_pem_pair_done(&set->etcd_peer[i]);
    }
    free(set->etcd_server);
    free(set->etcd_peer);
    free(set);
}

static int fill_one(const struct pki_cluster *c, struct pki_kubeadm_set *set,
                    enum pki_kubeadm_cert which, int member, struct pki_pem_pair *out,
                    struct err *e)
{
    struct pki_cert_spec spec;
    const struct pki_pem_pair *ca = is_ca(which) ? NULL : &set->pairs[defs[which].signer];
    int r;

    if (out->cert_pem)
        return 0;
    if (ca && (!ca->cert_pem || !ca->key_pem))
        return err_set(e, -EINVAL, "%s: its CA %s has no %s", defs[which].file,
                       defs[defs[which].signer].file, ca->cert_pem ? "key" : "certificate");
    r = pki_kubeadm_spec(c, which, member, &spec, e);
    if (r < 0)
        return r;
    r = pki_cert_issue(ca ? ca->cert_pem : NULL, ca ? ca->key_pem : NULL, &spec, &out->cert_pem,
                       &out->key_pem, e);
    if (r < 0)
        err_prefix(e, "%s: ", defs[which].file);
    pki_cert_spec_done(&spec);
    return r;
}

int pki_kubeadm_set_fill(const struct pki_cluster *c, struct pki_kubeadm_set *set, struct err *e)
{
    int members = c->etcd_members ? c->etcd_members : 1;
    int r;

    if (members != set->etcd_members)
        return err_set(e, -EINVAL, "the set holds %d etcd members, the cluster %d",
                       set->etcd_members, members);
    /* CAs first, leaves after; the enum lists them in that order. */
    for (int w = 0; w < PKI_KUBEADM__COUNT; w++) {
        if (w == PKI_KUBEADM_ETCD_SERVER || w == PKI_KUBEADM_ETCD_PEER)
            continue;
        r = fill_one(c, set, (enum pki_kubeadm_cert)w, 0, &set->pairs[w], e);
        if (r < 0)
            return r;
    }
    for (int i = 0; i < members; i++) {
        r = fill_one(c, set, PKI_KUBEADM_ETCD_SERVER, i, &set->etcd_server[i], e);
        if (r == 0)
            r = fill_one(c, set, PKI_KUBEADM_ETCD_PEER, i, &set->etcd_peer[i], e);
        if (r < 0)
            return r;
    }
    if (!set->sa.key_pem) {
        r = pki_key_generate(c->key_alg, &set->sa.key_pem, e);
        if (r < 0)
            return err_prefix(e, "sa: ");
    }
    if (!set->sa.cert_pem) {
        r = pki_key_public_pem(set->sa.key_pem, &set->sa.cert_pem, e);
        if (r < 0)
            return err_prefix(e, "sa: ");
    }
    return 0;
}
