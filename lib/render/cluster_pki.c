/* The CAs of one tenant control plane (render_cluster_pki_*): loaded from their Secrets or
 * made, checked, and what each is trusted as while it rotates; the check memo and issuing
 * that lib/render/cluster_certs.c shares. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "lib/pki/cert.h"
#include "lib/pki/kubeadm.h"
#include "lib/pki/secret.h"
#include "lib/render/cluster.h"
#include "lib/render/cluster_internal.h"
#include "lib/render/cluster_pki_internal.h"
#include "lib/util/strutil.h"

#define DAY ((int64_t)24 * 3600)

_Static_assert(API_ETCD_MAX_MEMBERS <= PKI_MAX_ETCD_MEMBERS,
               "lib/pki makes etcd certificates for every ordinal a NestedEtcd may have");

static const struct {
    const char *purpose;
    enum pki_kubeadm_cert which; /* unused for CA_SA */
} cas[CA__COUNT] = {
    {PKI_PURPOSE_CA, PKI_KUBEADM_CA},
    {PKI_PURPOSE_ETCD, PKI_KUBEADM_ETCD_CA},
    {PKI_PURPOSE_PROXY, PKI_KUBEADM_FRONT_PROXY_CA},
    {PKI_PURPOSE_SA, PKI_KUBEADM__COUNT},
};

void render_pki_free_text(char *s)
{
    if (s)
        OPENSSL_clear_free(s, strlen(s));
}

enum pki_key_alg render_cluster_key_alg(const struct render_cluster *rc)
{
    switch (render_cluster_control_plane(rc)->spec.certificates.key_algorithm) {
    case API_KEY_ECDSA_P384:
        return PKI_KEY_ECDSA_P384;
    case API_KEY_RSA_2048:
        return PKI_KEY_RSA_2048;
    case API_KEY_RSA_3072:
        return PKI_KEY_RSA_3072;
    case API_KEY_RSA_4096:
        return PKI_KEY_RSA_4096;
    case API_KEY_ECDSA_P256:
    default:
        return PKI_KEY_ECDSA_P256;
    }
}

static int ca_of(enum pki_kubeadm_cert which)
{
    switch (pki_kubeadm_signer(which)) {
    case PKI_KUBEADM_ETCD_CA:
        return CA_ETCD;
    case PKI_KUBEADM_FRONT_PROXY_CA:
        return CA_PROXY;
    default:
        return CA_CLUSTER;
    }
}

/* ---- keys ---- */

void render_cluster_set_key_source(struct render_cluster *rc, render_key_fn fn, void *ctx)
{
    rc->key_fn = fn;
    rc->key_ctx = ctx;
}

void render_cluster_set_renew_before(struct render_cluster *rc, int64_t seconds)
{
    rc->renew_before = seconds > 0 ? seconds : 0;
}

void render_cluster_set_leaf_validity(struct render_cluster *rc, int64_t seconds)
{
    rc->leaf_validity = seconds > 0 ? seconds : 0;
}

void render_cluster_set_check_memo(struct render_cluster *rc, const struct render_check_memo *memo)
{
    rc->memo = memo;
}

/* ---- the check memo: digests of what a check reads ---- */

void render_pki_digest_str(struct digest *d, const char *s)
{
    static const char absent = 1;

    d->ok = d->ok && (s ? EVP_DigestUpdate(d->ctx, s, strlen(s) + 1)
                        : EVP_DigestUpdate(d->ctx, &absent, 1)) == 1;
}

void render_pki_digest_int(struct digest *d, long long v)
{
    char num[32];

    snprintf(num, sizeof(num), "%lld", v);
    render_pki_digest_str(d, num);
}

void render_pki_digest_strv(struct digest *d, const struct pki_strv *v)
{
    render_pki_digest_int(d, (long long)v->n);
    for (size_t i = 0; i < v->n; i++)
        render_pki_digest_str(d, v->v[i]);
}

/* Starts a digest when the cluster has a memo; false without one (or out of memory). */
bool render_digest_begin(const struct render_cluster *rc, struct digest *d, const char *tag)
{
    d->ctx = rc->memo ? EVP_MD_CTX_new() : NULL;
    d->ok = d->ctx && EVP_DigestInit_ex(d->ctx, EVP_sha256(), NULL) == 1;
    render_pki_digest_str(d, tag);
    if (!d->ok) {
        EVP_MD_CTX_free(d->ctx);
        d->ctx = NULL;
    }
    return d->ok;
}

bool render_pki_digest_begin(const struct render_cluster_pki *pki, struct digest *d,
                             const char *tag)
{
    if (!render_digest_begin(pki->rc, d, tag))
        return false;
    render_pki_digest_int(d, pki->renew_before);
    if (!d->ok) {
        EVP_MD_CTX_free(d->ctx);
        d->ctx = NULL;
    }
    return d->ok;
}

/* Writes the digest (hex) into out, or "" when it failed. */
void render_pki_digest_end(struct digest *d, char out[RENDER_CLUSTER_HASH_MAX])
{
    unsigned char md[32];
    unsigned int len = 0;

    out[0] = '\0';
    d->ok = d->ok && EVP_DigestFinal_ex(d->ctx, md, &len) == 1 && len == 32;
    EVP_MD_CTX_free(d->ctx);
    d->ctx = NULL;
    for (int i = 0; d->ok && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

bool render_pki_memo_passed(const struct render_cluster_pki *pki, const char *digest,
                            int64_t *ret_value)
{
    const struct render_check_memo *m = pki->rc->memo;

    return m && digest[0] && m->passed(m->ctx, digest, pki->now, ret_value);
}

/* Remembers a passed check. A leaf's or a kubeconfig's (`due`: the moment it enters its
 * renewal window) until then: its digest covers everything its check reads (the pair, the
 * signer, what the spec asks, the renewal window) and the clock can change its result only
 * at `due`. Anything else (due 0: a CA's check, which reads the clock for the CA's own
 * expiry) for RENDER_CHECK_MEMO_TTL. */
void render_pki_memo_remember(const struct render_cluster_pki *pki, const char *digest, int64_t due)
{
    const struct render_check_memo *m = pki->rc->memo;
    int64_t until = due ? due : pki->now + RENDER_CHECK_MEMO_TTL;

    if (m && digest[0])
        m->remember(m->ctx, digest, until, due);
}

/* Keeps the earlier of *at and t (*at 0: none yet). */
void render_pki_keep_earlier(int64_t *at, int64_t t)
{
    if (at && t && (!*at || t < *at))
        *at = t;
}

/* Leaves never outlive their CA (lib/pki caps them at its NotAfter): with less validity left
 * than the renewal window, every leaf it signs would be due the moment it is issued, and a new
 * one issued again at once, for ever. Such a CA is refused, by name, instead. */
static int check_ca_outlives_window(const struct render_cluster_pki *pki, const char *name,
                                    const char *cert_pem, struct err *e)
{
    int64_t not_after = 0;
    char when[32];

    if (pki_cert_not_after(cert_pem, "tls.crt", &not_after, e) < 0) {
        err_prefix(e, "Secret %s/%s: ", pki->rc->ns, name);
        return -EINVAL;
    }
    if (not_after - pki->renew_before > pki->now)
        return 0;
    time_format_rfc3339((double)not_after, when);
    return err_set(e, -EINVAL,
                   "Secret %s/%s: the CA expires at %s, within the renewal window (%g days): "
                   "every certificate it signs would be due for renewal at once; supply a CA "
                   "valid for longer than the renewal window",
                   pki->rc->ns, name, when, (double)pki->renew_before / DAY);
}

/* A new private key of the cluster's algorithm, from the key source. */
static int new_key(const struct render_cluster_pki *pki, char **ret_key_pem, struct err *e)
{
    const struct render_cluster *rc = pki->rc;

    if (rc->key_fn)
        return rc->key_fn(rc->key_ctx, pki->pc.key_alg, ret_key_pem, e);
    return pki_key_generate(pki->pc.key_alg, ret_key_pem, e);
}

/* pki_cert_issue with a key from the key source. */
int render_pki_issue_cert(const struct render_cluster_pki *pki, const char *ca_cert_pem,
                          const char *ca_key_pem, const struct pki_cert_spec *spec,
                          char **ret_cert_pem, char **ret_key_pem, struct err *e)
{
    char *key = NULL;
    int r;

    if (!pki->rc->key_fn)
        return pki_cert_issue(ca_cert_pem, ca_key_pem, spec, ret_cert_pem, ret_key_pem, e);
    if ((r = new_key(pki, &key, e)) < 0)
        return r;
    r = pki_cert_issue_for_key(ca_cert_pem, ca_key_pem, spec, key, ret_cert_pem, e);
    if (r < 0) {
        render_pki_free_text(key);
        return r;
    }
    *ret_key_pem = key;
    return 0;
}

/* ---- CAs ---- */

int render_cluster_pki_new_ca(const struct render_cluster_pki *pki, enum api_ca ca,
                              char **ret_cert_pem, char **ret_key_pem, struct err *e)
{
    /* enum api_ca and enum ca_index list the three CAs in the same order. */
    struct pki_cert_spec spec;
    int r;

    if ((unsigned)ca >= API_CA__COUNT)
        return err_set(e, -EINVAL, "no such CA");
    if ((r = pki_kubeadm_spec(&pki->pc, cas[ca].which, 0, &spec, e)) < 0)
        return r;
    r = render_pki_issue_cert(pki, NULL, NULL, &spec, ret_cert_pem, ret_key_pem, e);
    pki_cert_spec_done(&spec);
    return r;
}

static int generate_ca(struct render_cluster_pki *pki, int i, struct err *e)
{
    struct pki_pem_pair *p = &pki->ca[i];
    struct pki_cert_spec spec;
    int r;

    if (i == CA_SA) {
        if ((r = new_key(pki, &p->key_pem, e)) < 0)
            return r;
        return pki_key_public_pem(p->key_pem, &p->cert_pem, e);
    }
    if ((r = pki_kubeadm_spec(&pki->pc, cas[i].which, 0, &spec, e)) < 0)
        return r;
    r = render_pki_issue_cert(pki, NULL, NULL, &spec, &p->cert_pem, &p->key_pem, e);
    pki_cert_spec_done(&spec);
    return r;
}

/* trust[i]: the signing CA's certificate (the key's public half for CA_SA), then the next or
 * the previous one when there is another. kube-apiserver reads every PUBLIC KEY block of a
 * --service-account-key-file, and every CA file and certificate-authority-data is a bundle. */
static int trust_bundles(struct render_cluster_pki *pki)
{
    for (int i = 0; i < CA__COUNT; i++) {
        const char *sign = pki->ca[i].cert_pem, *other;
        size_t n;
        bool nl;

        if (!sign)
            continue;
        if (i == CA_SA)
            other = pki->sa_next_pub ? pki->sa_next_pub : pki->sa_previous_pub;
        else
            other = pki->rot[i].next_crt ? pki->rot[i].next_crt : pki->rot[i].previous_crt;
        if (!other || strcmp(other, sign) == 0) {
            if (!(pki->trust[i] = strdup(sign)))
                return -ENOMEM;
            continue;
        }
        nl = sign[0] && sign[strlen(sign) - 1] == '\n';
        n = strlen(sign) + strlen(other) + 2;
        if (!(pki->trust[i] = malloc(n)))
            return -ENOMEM;
        snprintf(pki->trust[i], n, "%s%s%s", sign, nl ? "" : "\n", other);
    }
    return 0;
}

/* The certificates clients outside the control plane verify (a kubeconfig a user kept from
 * before a rotation trusts the old cluster CA only): issued from the previous CA while it
 * still has its key, so that they switch only in the rotation's third phase. */
static bool is_serving(enum pki_kubeadm_cert which)
{
    return which == PKI_KUBEADM_APISERVER || which == PKI_KUBEADM_ETCD_SERVER;
}

/* The CA pair a leaf is issued from, and checked against. */
struct pki_pem_pair render_pki_signer_of(const struct render_cluster_pki *pki,
                                         enum pki_kubeadm_cert which)
{
    int i = ca_of(which);

    if (is_serving(which) && pki->rot[i].previous_key)
        return (struct pki_pem_pair){pki->rot[i].previous_crt, pki->rot[i].previous_key};
    return pki->ca[i];
}

void render_cluster_pki_free(struct render_cluster_pki *pki)
{
    if (!pki)
        return;
    for (int i = 0; i < CA__COUNT; i++)
        pki_pem_pair_done(&pki->ca[i]);
    free(pki->sa_next_pub);
    render_pki_free_text(pki->sa_next_key);
    free(pki->sa_previous_pub);
    for (int i = 0; i < CA__COUNT; i++) {
        if (i < CA_SA)
            pki_ca_rotation_done(&pki->rot[i]);
        free(pki->trust[i]);
    }
    cJSON_Delete(pki->created);
    free(pki);
}

int render_cluster_pki_load(const struct render_cluster *rc, const struct render_source *src,
                            int64_t now, bool generate_missing, struct render_cluster_pki **ret_pki,
                            struct api_errors *errs)
{
    const struct api_control_plane_spec *s = &rc->ncp->spec;
    struct render_cluster_pki *pki = calloc(1, sizeof(*pki));
    size_t before = errs ? api_errors_count(errs) : 0;
    int r = 0;

    if (!pki || !(pki->created = cJSON_CreateArray())) {
        free(pki);
        return -ENOMEM;
    }
    pki->rc = rc;
    pki->now = now ? now : (int64_t)time(NULL);
    pki->renew_before = (int64_t)s->certificates.renew_before_days * DAY;
    if (rc->leaf_validity) {
        /* Short-lived certificates: the admin's window, else a third, at most half. */
        int64_t cap = rc->leaf_validity / 2;
        pki->renew_before = rc->renew_before ? rc->renew_before : rc->leaf_validity / 3;
        if (pki->renew_before > cap)
            pki->renew_before = cap;
    } else if (rc->renew_before > pki->renew_before) {
        int64_t cap = (int64_t)s->certificates.validity_days * DAY - DAY;
        pki->renew_before = rc->renew_before < cap ? rc->renew_before : cap;
    }
    pki->pc = (struct pki_cluster){
        .name = rc->name,
        .ns = rc->ns,
        .service_domain = s->cluster_network.service_domain,
        .service_cidrs = (const char *const *)s->cluster_network.services.items,
        .n_service_cidrs = s->cluster_network.services.n,
        .endpoint_host = s->control_plane_endpoint.host,
        .extra_sans = (const char *const *)s->certificates.extra_sans.items,
        .n_extra_sans = s->certificates.extra_sans.n,
        .etcd_members = API_ETCD_MAX_MEMBERS, /* every ordinal a member may have (pieces_of) */
        .key_alg = render_cluster_key_alg(rc),
        .ca_validity = (int64_t)s->certificates.ca_validity_days * DAY,
        .leaf_validity =
            rc->leaf_validity ? rc->leaf_validity : (int64_t)s->certificates.validity_days * DAY,
        .now = pki->now,
    };
    /* Left "" when out of memory: leaf checks then run in full. */
    (void)pki_cluster_digest(&pki->pc, pki->pc_digest);
    for (int i = 0; i < CA__COUNT; i++) {
        char name[RENDER_CLUSTER_NAME_MAX];
        const cJSON *secret;
        struct err e = {0};
        int q;

        if (pki_secret_name(rc->name, cas[i].purpose, name, sizeof(name)) < 0) {
            r = -EINVAL;
            continue;
        }
        secret = src->get_secret(src->ctx, rc->ns, name);
        if (secret) {
            const cJSON *data = cJSON_GetObjectItemCaseSensitive(secret, "data");
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(data, PKI_SECRET_TLS_CRT);
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(data, PKI_SECRET_TLS_KEY);
            char digest[RENDER_CLUSTER_HASH_MAX] = "";
            struct digest d;
            if (render_pki_digest_begin(pki, &d, i == CA_SA ? "sa" : "ca")) {
                render_pki_digest_str(&d, cJSON_IsString(c) ? c->valuestring : NULL);
                render_pki_digest_str(&d, cJSON_IsString(k) ? k->valuestring : NULL);
                static const char *const rot[] = {
                    PKI_SECRET_SA_NEXT_PUB, PKI_SECRET_SA_NEXT_KEY,     PKI_SECRET_SA_PREVIOUS_PUB,
                    PKI_SECRET_CA_NEXT_CRT, PKI_SECRET_CA_PREVIOUS_CRT, PKI_SECRET_CA_PREVIOUS_KEY};
                for (size_t j = 0; j < sizeof(rot) / sizeof(rot[0]); j++) {
                    const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, rot[j]);
                    render_pki_digest_str(&d, cJSON_IsString(v) ? v->valuestring : NULL);
                }
                render_pki_digest_end(&d, digest);
            }
            q = 0;
            if (!render_pki_memo_passed(pki, digest, NULL)) {
                q = i == CA_SA ? pki_secret_check_sa(secret, &e)
                               : pki_secret_check_ca(secret, pki->now, &e);
                if (q == 0 && i == CA_SA)
                    q = pki_secret_check_sa_rotation(secret, &e);
                else if (q == 0)
                    q = pki_secret_check_ca_rotation(secret, pki->now, &e);
                if (q == 0)
                    render_pki_memo_remember(pki, digest, 0);
            }
            if (q == 0)
                q = pki_secret_read_tls(secret, &pki->ca[i].cert_pem, &pki->ca[i].key_pem, &e);
            if (q == 0 && i == CA_SA)
                q = pki_secret_read_sa_rotation(secret, &pki->sa_next_pub, &pki->sa_next_key,
                                                &pki->sa_previous_pub, &e);
            else if (q == 0)
                q = pki_secret_read_ca_rotation(secret, &pki->rot[i], &e);
            if (q == 0 && i != CA_SA)
                q = check_ca_outlives_window(pki, name, pki->ca[i].cert_pem, &e);
        } else if (generate_missing) {
            cJSON *obj = NULL;
            q = generate_ca(pki, i, &e);
            if (q == 0)
                q = pki_secret_tls_new(rc->name, rc->ns, cas[i].purpose, pki->ca[i].cert_pem,
                                       pki->ca[i].key_pem, &obj, &e);
            if (q == 0 &&
                (render_cluster_set_owner(obj, rc->ncp_api_version, API_KIND_NESTED_CONTROL_PLANE,
                                          &rc->ncp->meta) < 0 ||
                 !cJSON_AddItemToArray(pki->created, obj))) {
                cJSON_Delete(obj);
                q = -ENOMEM;
            }
            if (q < 0 && q != -ENOMEM && q != -EAGAIN)
                err_prefix(&e, "Secret %s/%s: ", rc->ns, name);
        } else {
            q = err_set(&e, -ENOENT, "Secret %s/%s does not exist", rc->ns, name);
        }
        if (q == -ENOMEM || q == -EAGAIN) {
            r = q;
            break;
        }
        if (q < 0) {
            if (errs)
                api_errors_add(errs, NULL, "%s", e.msg);
            if (r == 0 || q == -ENOENT)
                r = q == -ENOENT ? -ENOENT : -EINVAL;
        }
    }
    if (r == 0 && errs && api_errors_oom(errs))
        r = -ENOMEM;
    if (r == 0 && errs && api_errors_count(errs) > before)
        r = -EINVAL;
    if (r == 0)
        r = trust_bundles(pki);
    if (r < 0) {
        render_cluster_pki_free(pki);
        return r;
    }
    *ret_pki = pki;
    return 0;
}

const cJSON *render_cluster_pki_created(const struct render_cluster_pki *pki)
{
    return pki->created;
}

int64_t render_cluster_pki_now(const struct render_cluster_pki *pki)
{
    return pki->now;
}

int render_cluster_pki_earliest_ca(const struct render_cluster_pki *pki, char *ret_name,
                                   size_t size, const char **ret_which, int64_t *ret_not_after)
{
    static const char *const which[] = {"cluster", "etcd", "front-proxy"};
    int earliest = -1;
    int64_t t, at = 0;
    struct err e;

    for (int i = CA_CLUSTER; i <= CA_PROXY; i++) {
        err_clear(&e);
        if (!pki->ca[i].cert_pem || pki_cert_not_after(pki->ca[i].cert_pem, NULL, &t, &e) < 0)
            continue;
        if (earliest < 0 || t < at) {
            earliest = i;
            at = t;
        }
    }
    if (earliest < 0 || pki_secret_name(pki->rc->name, cas[earliest].purpose, ret_name, size) < 0)
        return -ENOENT;
    *ret_which = which[earliest];
    *ret_not_after = at;
    return 0;
}
