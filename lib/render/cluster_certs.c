/* The components' immutable certs Secrets and the admin kubeconfig Secret, from the CAs
 * lib/render/cluster_pki.c loads (render_cluster_certs*, render_cluster_kubeconfig). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/kubeadm.h"
#include "lib/pki/kubeconfig.h"
#include "lib/pki/secret.h"
#include "lib/render/cluster.h"
#include "lib/render/cluster_internal.h"
#include "lib/render/cluster_pki_internal.h"

#define CM_USER "system:kube-controller-manager"
#define MAX_PIECES (4 + 2 * PKI_MAX_ETCD_MEMBERS + 8)

/* How many ordinals the etcd server and peer certificates named before they named only those
 * a NestedEtcd may have (API_ETCD_MAX_MEMBERS): 0 to 15. */
#define LEGACY_ETCD_ORDINALS 16
_Static_assert(LEGACY_ETCD_ORDINALS <= PKI_MAX_ETCD_MEMBERS,
               "lib/pki can still make the legacy etcd certificate spec");

/* ---- pieces of a certs Secret ---- */

/* P_COPY_TRUST: what the CA's certificates are verified with (trust[]); P_COPY_CERT: the
 * signing CA's certificate alone (the controller manager's --cluster-signing-cert-file must
 * hold exactly one). */
enum piece_kind { P_COPY_TRUST, P_COPY_CERT, P_COPY_KEY, P_LEAF, P_KUBECONFIG };

struct piece {
    enum piece_kind kind;
    char key[96]; /* Secret key; for P_LEAF the stem (".crt" and ".key" are added) */
    int ca;       /* P_COPY_*: the CA copied */
    enum pki_kubeadm_cert which;
    int member;
};

struct pieces {
    struct piece v[MAX_PIECES];
    int n;
};

static void add_piece(struct pieces *ps, enum piece_kind kind, const char *key, int ca,
                      enum pki_kubeadm_cert which, int member)
{
    struct piece *p = &ps->v[ps->n++];

    p->kind = kind;
    snprintf(p->key, sizeof(p->key), "%s", key);
    p->ca = ca;
    p->which = which;
    p->member = member;
}

static void pieces_of(enum render_part part, struct pieces *ps)
{
    ps->n = 0;
    switch (part) {
    case RENDER_PART_ETCD:
        add_piece(ps, P_COPY_TRUST, "ca.crt", CA_ETCD, 0, 0);
        /* One server and one peer pair that every member may use (the members share the
         * Secret anyway), valid for the names of every ordinal etcd may have: adding or
         * removing a member changes no certificate and so restarts no member. */
        add_piece(ps, P_LEAF, "server", 0, PKI_KUBEADM_ETCD_SERVER, -1);
        add_piece(ps, P_LEAF, "peer", 0, PKI_KUBEADM_ETCD_PEER, -1);
        add_piece(ps, P_LEAF, "healthcheck-client", 0, PKI_KUBEADM_ETCD_HEALTHCHECK_CLIENT, 0);
        break;
    case RENDER_PART_APISERVER:
        add_piece(ps, P_COPY_TRUST, "ca.crt", CA_CLUSTER, 0, 0);
        add_piece(ps, P_COPY_TRUST, "etcd-ca.crt", CA_ETCD, 0, 0);
        add_piece(ps, P_COPY_TRUST, "front-proxy-ca.crt", CA_PROXY, 0, 0);
        add_piece(ps, P_LEAF, "apiserver", 0, PKI_KUBEADM_APISERVER, 0);
        add_piece(ps, P_LEAF, "apiserver-etcd-client", 0, PKI_KUBEADM_APISERVER_ETCD_CLIENT, 0);
        add_piece(ps, P_LEAF, "apiserver-kubelet-client", 0, PKI_KUBEADM_APISERVER_KUBELET_CLIENT,
                  0);
        add_piece(ps, P_LEAF, "front-proxy-client", 0, PKI_KUBEADM_FRONT_PROXY_CLIENT, 0);
        add_piece(ps, P_COPY_TRUST, "sa.pub", CA_SA, 0, 0);
        add_piece(ps, P_COPY_KEY, "sa.key", CA_SA, 0, 0);
        break;
    default:
        add_piece(ps, P_KUBECONFIG, "controller-manager.conf", 0, PKI_KUBEADM_CONTROLLER_MANAGER,
                  0);
        add_piece(ps, P_COPY_CERT, "ca.crt", CA_CLUSTER, 0, 0);
        add_piece(ps, P_COPY_KEY, "ca.key", CA_CLUSTER, 0, 0);
        add_piece(ps, P_COPY_TRUST, "ca-bundle.crt", CA_CLUSTER, 0, 0);
        add_piece(ps, P_COPY_TRUST, "front-proxy-ca.crt", CA_PROXY, 0, 0);
        add_piece(ps, P_COPY_KEY, "sa.key", CA_SA, 0, 0);
        break;
    }
}

/* data[key] of a Secret as it is there (base64; borrowed), or NULL. */
static const char *secret_text(const cJSON *secret, const char *key)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(secret, "data"), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A Secret's base64 text decoded (caller frees with render_pki_free_text), or NULL. */
static char *decoded(const char *text)
{
    unsigned char *out = NULL;
    size_t len;

    if (!text || pki_base64_decode(text, strlen(text), PKI_KUBECONFIG_MAX, &out, &len) < 0)
        return NULL;
    if (memchr(out, '\0', len)) {
        OPENSSL_clear_free(out, len + 1);
        return NULL;
    }
    return (char *)out;
}

/* data[key] of a Secret, decoded (caller frees with render_pki_free_text), or NULL. */
static char *secret_value(const cJSON *secret, const char *key)
{
    return decoded(secret_text(secret, key));
}

/* The kubeconfig server of a piece: the admin's endpoint, or the in-cluster Service. */
static int kubeconfig_server(const struct render_cluster *rc, enum pki_kubeadm_cert which,
                             char *out, size_t size)
{
    const struct api_endpoint *ep = &rc->ncp->spec.control_plane_endpoint;
    char host[RENDER_CLUSTER_NAME_MAX * 2];

    if (which == PKI_KUBEADM_ADMIN && ep->host)
        return pki_kubeconfig_server_url(ep->host, ep->port, out, size);
    snprintf(host, sizeof(host), "%s-apiserver.%s.svc", rc->name, rc->ns);
    return pki_kubeconfig_server_url(host, 6443, out, size);
}

/* The digest of a leaf check: the pair (as PEM, or as a Secret's base64 data when base64 is
 * set: decoding is a function of it), its signer, and what its spec is built from (the
 * cluster's parameters, the certificate, the member) rather than the spec itself, so that a
 * check the memo knows neither decodes the pair nor builds a spec. "" without a memo. */
static void leaf_digest(const struct render_cluster_pki *pki, enum pki_kubeadm_cert which,
                        int member, bool base64, const char *ca_crt, const char *crt,
                        const char *key, char digest[RENDER_CLUSTER_HASH_MAX])
{
    struct digest d;

    digest[0] = '\0';
    if (!pki->pc_digest[0] || !render_pki_digest_begin(pki, &d, base64 ? "leaf/2 data" : "leaf/2"))
        return;
    render_pki_digest_str(&d, pki->pc_digest);
    render_pki_digest_int(&d, which);
    render_pki_digest_int(&d, member);
    render_pki_digest_str(&d, crt);
    render_pki_digest_str(&d, key);
    render_pki_digest_str(&d, ca_crt);
    render_pki_digest_end(&d, digest);
}

/* A leaf nestcp has just issued from the spec of (which, member) and its signer passes its
 * check by construction: it is remembered as checked (due once it enters the renewal window,
 * which is returned), so that the next reconcile does not parse it back. base64: it goes into
 * a certs Secret, whose check reads its data as a Secret holds it. Returns 0 when it could
 * not be remembered. */
static int64_t remember_issued(const struct render_cluster_pki *pki, enum pki_kubeadm_cert which,
                               int member, bool base64, const char *ca_crt, const char *crt,
                               const char *key)
{
    char digest[RENDER_CLUSTER_HASH_MAX], *crt64 = NULL, *key64 = NULL;
    int64_t not_after = 0;

    digest[0] = '\0';
    if (!base64)
        leaf_digest(pki, which, member, false, ca_crt, crt, key, digest);
    else if (pki_base64_encode(crt, strlen(crt), &crt64) == 0 &&
             pki_base64_encode(key, strlen(key), &key64) == 0)
        leaf_digest(pki, which, member, true, ca_crt, crt64, key64, digest);
    free(crt64);
    render_pki_free_text(key64);
    if (!digest[0] || pki_cert_not_after(crt, NULL, &not_after, NULL) < 0)
        return 0;
    render_pki_memo_remember(pki, digest, not_after - pki->renew_before);
    return not_after - pki->renew_before;
}

/* An etcd server or peer certificate shared by every member, issued when they named the 16
 * ordinals 0 to 15, is kept until it is due: its names are a superset of today's, and issuing
 * it again would restart every member. It must be exactly what that spec asked (the names of
 * 16 ordinals, nothing else) and good in every other way. Its renewal names the ordinals
 * below API_ETCD_MAX_MEMBERS. Returns 0 or -ESTALE. */
static int check_legacy_etcd(const struct render_cluster_pki *pki, enum pki_kubeadm_cert which,
                             int member, const char *crt, const char *ca_crt)
{
    struct pki_cluster legacy = pki->pc;
    struct pki_cert_spec spec;
    struct err ignored;
    int r;

    if ((which != PKI_KUBEADM_ETCD_SERVER && which != PKI_KUBEADM_ETCD_PEER) || member != -1)
        return -ESTALE;
    legacy.etcd_members = LEGACY_ETCD_ORDINALS;
    if (pki_kubeadm_spec(&legacy, which, member, &spec, &ignored) < 0)
        return -ESTALE;
    r = pki_cert_check_leaf(crt, ca_crt, &spec, pki->now, pki->renew_before, &ignored);
    pki_cert_spec_done(&spec);
    return r < 0 ? -ESTALE : 0;
}

/* Checks a leaf pair against what is needed now: PEM texts, or with base64 set a Secret's
 * data values, decoded only when the memo does not know them (nor is the spec built then).
 * Returns 0 (and keeps in *renew_at, which may be NULL, the moment it enters the renewal
 * window when that is earlier) or -ESTALE (reason in e). */
static int check_leaf(const struct render_cluster_pki *pki, enum pki_kubeadm_cert which, int member,
                      bool base64, const char *crt, const char *key, int64_t *renew_at,
                      struct err *e)
{
    struct pki_cert_spec spec;
    const struct pki_pem_pair ca = render_pki_signer_of(pki, which);
    char digest[RENDER_CLUSTER_HASH_MAX], *crt_pem = NULL, *key_pem = NULL;
    int64_t not_after = 0, due = 0;
    struct err ne;
    int r;

    if (!crt || !key)
        return err_set(e, -ESTALE, "missing");
    leaf_digest(pki, which, member, base64, ca.cert_pem, crt, key, digest);
    if (render_pki_memo_passed(pki, digest, &due)) {
        render_pki_keep_earlier(renew_at, due);
        return 0;
    }
    if (base64) {
        crt = crt_pem = decoded(crt);
        key = key_pem = decoded(key);
        if (!crt || !key) {
            r = err_set(e, -ESTALE, "missing");
            goto out;
        }
    }
    if ((r = pki_kubeadm_spec(&pki->pc, which, member, &spec, e)) < 0)
        goto out;
    r = pki_cert_check_leaf(crt, ca.cert_pem, &spec, pki->now, pki->renew_before, e);
    pki_cert_spec_done(&spec);
    if (r == -ESTALE && check_legacy_etcd(pki, which, member, crt, ca.cert_pem) == 0)
        r = 0;
    if (r == 0 && pki_key_check_match(key, crt, "key", "certificate", e) < 0)
        r = -ESTALE;
    if (r < 0) {
        r = -ESTALE;
        goto out;
    }
    /* Due from the moment pki_cert_check_leaf would refuse it. */
    if (pki_cert_not_after(crt, NULL, &not_after, &ne) == 0)
        due = not_after - pki->renew_before;
    render_pki_memo_remember(pki, digest, due);
    render_pki_keep_earlier(renew_at, due);
out:
    render_pki_free_text(crt_pem);
    render_pki_free_text(key_pem);
    return r;
}

/* The digest of a kubeconfig check. "" without a memo. */
static void kubeconfig_digest(const struct render_cluster_pki *pki, enum pki_kubeadm_cert which,
                              const char *text, char digest[RENDER_CLUSTER_HASH_MAX])
{
    char server[RENDER_CLUSTER_NAME_MAX * 2];
    struct digest d;

    digest[0] = '\0';
    if (!render_pki_digest_begin(pki, &d, "kubeconfig"))
        return;
    render_pki_digest_str(&d, text);
    render_pki_digest_int(&d, which);
    render_pki_digest_str(&d, pki->trust[CA_CLUSTER]);
    if (kubeconfig_server(pki->rc, which, server, sizeof(server)) == 0)
        render_pki_digest_str(&d, server);
    render_pki_digest_end(&d, digest);
}

static int check_kubeconfig(const struct render_cluster_pki *pki, enum pki_kubeadm_cert which,
                            const char *text, int64_t *renew_at, struct err *e)
{
    struct pki_kubeconfig_creds *kc = NULL;
    char server[RENDER_CLUSTER_NAME_MAX * 2], digest[RENDER_CLUSTER_HASH_MAX];
    int64_t due = 0;
    int r;

    if (!text)
        return err_set(e, -ESTALE, "missing");
    /* Reading the kubeconfig decodes its key: the whole check is remembered. */
    kubeconfig_digest(pki, which, text, digest);
    if (render_pki_memo_passed(pki, digest, &due)) {
        render_pki_keep_earlier(renew_at, due);
        return 0;
    }
    if (pki_kubeconfig_read(text, strlen(text), "kubeconfig", &kc, e) < 0)
        return -ESTALE;
    if (kubeconfig_server(pki->rc, which, server, sizeof(server)) < 0 || !kc->server ||
        strcmp(kc->server, server) != 0)
        r = err_set(e, -ESTALE, "server is not %s", server);
    else if (!kc->ca_cert_pem || strcmp(kc->ca_cert_pem, pki->trust[CA_CLUSTER]) != 0)
        r = err_set(e, -ESTALE, "certificate-authority-data is not the current CA");
    else
        r = check_leaf(pki, which, 0, false, kc->client_cert_pem, kc->client_key_pem, &due, e);
    pki_kubeconfig_creds_free(kc);
    if (r == 0) {
        render_pki_memo_remember(pki, digest, due);
        render_pki_keep_earlier(renew_at, due);
    }
    return r;
}

/* What a P_COPY_* piece copies: what a CA's certificates are verified with, its certificate
 * or its key. */
static const char *copied(const struct render_cluster_pki *pki, const struct piece *p)
{
    switch (p->kind) {
    case P_COPY_TRUST:
        return pki->trust[p->ca] ? pki->trust[p->ca] : pki->ca[p->ca].cert_pem;
    case P_COPY_CERT:
        return pki->ca[p->ca].cert_pem;
    default:
        return pki->ca[p->ca].key_pem;
    }
}

/* Checks one piece against an existing Secret; 0 when it can be kept. */
static int check_piece(const struct render_cluster_pki *pki, const struct piece *p,
                       const cJSON *secret, int64_t *renew_at, struct err *e)
{
    char k[128], kk[128];
    char *a = NULL;
    int r;

    switch (p->kind) {
    case P_COPY_TRUST:
    case P_COPY_CERT:
    case P_COPY_KEY:
        a = secret_value(secret, p->key);
        r = a && strcmp(a, copied(pki, p)) == 0 ? 0
                                                : err_set(e, -ESTALE, "not the current %s", p->key);
        break;
    case P_LEAF:
        snprintf(k, sizeof(k), "%s.crt", p->key);
        snprintf(kk, sizeof(kk), "%s.key", p->key);
        r = check_leaf(pki, p->which, p->member, true, secret_text(secret, k),
                       secret_text(secret, kk), renew_at, e);
        break;
    default:
        a = secret_value(secret, p->key);
        r = check_kubeconfig(pki, p->which, a, renew_at, e);
        break;
    }
    render_pki_free_text(a);
    if (r < 0)
        err_prefix(e, "%s%s: ", p->key, p->kind == P_LEAF ? ".crt" : "");
    return r;
}

/* ---- the data of a new certs Secret ---- */

struct entry {
    char key[128];
    char *value; /* owned, wiped on free */
};

struct entries {
    struct entry v[MAX_PIECES * 2];
    int n;
};

static void entries_done(struct entries *es)
{
    for (int i = 0; i < es->n; i++)
        render_pki_free_text(es->v[i].value);
    es->n = 0;
}

static int entries_add(struct entries *es, const char *key, char *value)
{
    if (!value)
        return -ENOMEM;
    snprintf(es->v[es->n].key, sizeof(es->v[es->n].key), "%s", key);
    es->v[es->n++].value = value;
    return 0;
}

static char *dup_text(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Takes the piece from old when it is good there, else issues it. */
static int fill_piece(const struct render_cluster_pki *pki, const struct piece *p, const cJSON *old,
                      struct entries *es, struct err *e)
{
    const struct render_cluster *rc = pki->rc;
    struct err ignored;
    char k[128];
    int r;

    if (old && check_piece(pki, p, old, NULL, &ignored) == 0) {
        if (p->kind != P_LEAF)
            return entries_add(es, p->key, secret_value(old, p->key));
        snprintf(k, sizeof(k), "%s.crt", p->key);
        if ((r = entries_add(es, k, secret_value(old, k))) < 0)
            return r;
        snprintf(k, sizeof(k), "%s.key", p->key);
        return entries_add(es, k, secret_value(old, k));
    }
    switch (p->kind) {
    case P_COPY_TRUST:
    case P_COPY_CERT:
    case P_COPY_KEY:
        return entries_add(es, p->key, dup_text(copied(pki, p)));
    default:
        break;
    }
    {
        struct pki_cert_spec spec;
        const struct pki_pem_pair signer = render_pki_signer_of(pki, p->which), *ca = &signer;
        char *crt = NULL, *key = NULL, *yaml = NULL, server[RENDER_CLUSTER_NAME_MAX * 2];

        int64_t due;

        if ((r = pki_kubeadm_spec(&pki->pc, p->which, p->member, &spec, e)) < 0)
            return r;
        r = render_pki_issue_cert(pki, ca->cert_pem, ca->key_pem, &spec, &crt, &key, e);
        due = r == 0 ? remember_issued(pki, p->which, p->member, p->kind == P_LEAF, ca->cert_pem,
                                       crt, key)
                     : 0;
        pki_cert_spec_done(&spec);
        if (r < 0)
            return r;
        if (p->kind == P_LEAF) {
            snprintf(k, sizeof(k), "%s.crt", p->key);
            if ((r = entries_add(es, k, crt)) < 0) {
                render_pki_free_text(key);
                return r;
            }
            snprintf(k, sizeof(k), "%s.key", p->key);
            return entries_add(es, k, key);
        }
        r = kubeconfig_server(rc, p->which, server, sizeof(server));
        if (r == 0) {
            struct pki_kubeconfig kc = {
                .cluster_name = rc->name,
                .user_name = p->which == PKI_KUBEADM_CONTROLLER_MANAGER ? CM_USER : NULL,
                .server = server,
                .ca_cert_pem = pki->trust[CA_CLUSTER],
                .client_cert_pem = crt,
                .client_key_pem = key,
            };
            r = pki_kubeconfig_render(&kc, &yaml, e);
            if (r == 0 && due) {
                char digest[RENDER_CLUSTER_HASH_MAX];
                kubeconfig_digest(pki, p->which, yaml, digest);
                render_pki_memo_remember(pki, digest, due);
            }
        } else {
            r = err_set(e, -EINVAL, "the API server's address does not fit a URL");
        }
        free(crt);
        render_pki_free_text(key);
        if (r < 0)
            return r;
        return entries_add(es, p->key, yaml);
    }
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->key, ((const struct entry *)b)->key);
}

/* sha256 over the sorted data, in hex; the first RENDER_CLUSTER_SECRET_HASH_LEN characters
 * name the Secret. */
static int data_hash(const cJSON *data, char out[RENDER_CLUSTER_HASH_MAX])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[32];
    unsigned int mdlen = 0;
    const cJSON *it;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;

    cJSON_ArrayForEach(it, data) {
        ok = ok && EVP_DigestUpdate(ctx, it->string, strlen(it->string) + 1) == 1 &&
             EVP_DigestUpdate(ctx, it->valuestring, strlen(it->valuestring) + 1) == 1;
    }
    ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return -ENOMEM;
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}

static int build_certs_secret(const struct render_cluster *rc, enum render_part part,
                              struct entries *es, cJSON **ret_secret)
{
    const struct render_cluster_part *p = &rc->parts[part];
    char hash[RENDER_CLUSTER_HASH_MAX], name[RENDER_CLUSTER_NAME_MAX];
    cJSON *s = cJSON_CreateObject(), *md, *labels, *data;

    qsort(es->v, (size_t)es->n, sizeof(es->v[0]), cmp_entry);
    if (!s || !cJSON_AddStringToObject(s, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(s, "kind", "Secret") ||
        !(md = cJSON_AddObjectToObject(s, "metadata")) || !cJSON_AddNullToObject(md, "name") ||
        !cJSON_AddStringToObject(md, "namespace", rc->ns) ||
        !(labels = cJSON_AddObjectToObject(md, "labels")) ||
        !cJSON_AddStringToObject(labels, PKI_CLUSTER_NAME_LABEL, rc->name) ||
        !cJSON_AddStringToObject(labels, RENDER_CLUSTER_COMPONENT_LABEL, render_part_short(part)) ||
        !cJSON_AddStringToObject(labels, "app.kubernetes.io/managed-by", "nestcp") ||
        !cJSON_AddStringToObject(s, "type", "Opaque") || !cJSON_AddTrueToObject(s, "immutable") ||
        !(data = cJSON_AddObjectToObject(s, "data")))
        goto oom;
    for (int i = 0; i < es->n; i++) {
        char *b64 = NULL;
        cJSON *v;
        if (pki_base64_encode(es->v[i].value, strlen(es->v[i].value), &b64) < 0)
            goto oom;
        v = cJSON_CreateString(b64);
        OPENSSL_clear_free(b64, strlen(b64));
        if (!v || !cJSON_AddItemToObject(data, es->v[i].key, v)) {
            cJSON_Delete(v);
            goto oom;
        }
    }
    if (data_hash(data, hash) < 0)
        goto oom;
    snprintf(name, sizeof(name), "%s-%s-certs-%.*s", rc->name, render_part_short(part),
             RENDER_CLUSTER_SECRET_HASH_LEN, hash);
    if (!cJSON_ReplaceItemInObjectCaseSensitive(md, "name", cJSON_CreateString(name)) ||
        render_cluster_set_owner(s, p->api_version, render_part_kind(part), &p->obj->meta) < 0)
        goto oom;
    *ret_secret = s;
    return 0;
oom:
    cJSON_Delete(s);
    return -ENOMEM;
}

/* ---- picking an existing certs Secret ---- */

struct candidates {
    const struct render_cluster *rc;
    const char *short_name;
    char prefix[RENDER_CLUSTER_NAME_MAX];
    const cJSON *v[64];
    int n;
};

static bool collect(void *ud, const cJSON *obj)
{
    struct candidates *c = ud;
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels");
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(labels, PKI_CLUSTER_NAME_LABEL),
                *comp = cJSON_GetObjectItemCaseSensitive(labels, RENDER_CLUSTER_COMPONENT_LABEL);
    const char *name = render_cluster_meta_str(obj, "name");

    if (name && strncmp(name, c->prefix, strlen(c->prefix)) == 0 && cJSON_IsString(cl) &&
        strcmp(cl->valuestring, c->rc->name) == 0 && cJSON_IsString(comp) &&
        strcmp(comp->valuestring, c->short_name) == 0 && c->n < 64)
        c->v[c->n++] = obj;
    return true;
}

/* Newer first: creationTimestamp (RFC 3339 sorts as text), then name. */
static int newer(const cJSON *a, const cJSON *b)
{
    const char *ta = render_cluster_meta_str(a, "creationTimestamp"),
               *tb = render_cluster_meta_str(b, "creationTimestamp");
    int c = strcmp(ta ? ta : "", tb ? tb : "");

    return c ? c > 0
             : strcmp(render_cluster_meta_str(a, "name"), render_cluster_meta_str(b, "name")) > 0;
}

static void candidates_of(const struct render_cluster *rc, const struct render_source *src,
                          enum render_part part, struct candidates *c)
{
    const struct api_component *obj = rc->parts[part].obj;
    const char *uid = obj ? obj->meta.uid : NULL;

    c->rc = rc;
    c->short_name = render_part_short(part);
    c->n = 0;
    snprintf(c->prefix, sizeof(c->prefix), "%s-%s-certs-", rc->name, c->short_name);
    /* The component controls its certificates Secrets; without a uid (objects read from
     * files) every Secret of the namespace is a candidate. */
    src->each_secret(src->ctx, rc->ns, uid && *uid ? uid : NULL, collect, c);
}

static int check_secret(const struct render_cluster_pki *pki, const struct pieces *ps,
                        const cJSON *secret, int64_t *renew_at, struct err *e)
{
    for (int i = 0; i < ps->n; i++) {
        int r = check_piece(pki, &ps->v[i], secret, renew_at, e);
        if (r < 0) {
            err_prefix(e, "Secret %s/%s: ", pki->rc->ns, render_cluster_meta_str(secret, "name"));
            return r == -ENOMEM ? r : -ESTALE;
        }
    }
    return 0;
}

int render_cluster_certs_find(const struct render_cluster *rc, const struct render_cluster_pki *pki,
                              const struct render_source *src, enum render_part part,
                              const char *prefer, char ret_name[static RENDER_CLUSTER_NAME_MAX],
                              int64_t *ret_renew_at, struct err *e)
{
    struct candidates *c = malloc(sizeof(*c));
    struct pieces *ps = malloc(sizeof(*ps));
    const cJSON *best = NULL;
    struct err why = {0};
    int64_t best_at = 0;
    int r = -ENOENT;

    if (!c || !ps) {
        r = -ENOMEM;
        goto out;
    }
    candidates_of(rc, src, part, c);
    pieces_of(part, ps);
    for (int i = 0; i < c->n; i++) {
        const char *name = render_cluster_meta_str(c->v[i], "name");
        struct err ce = {0};
        int64_t at = 0;
        int q = check_secret(pki, ps, c->v[i], &at, &ce);
        if (q == -ENOMEM) {
            r = q;
            goto out;
        }
        if (q < 0) {
            if (!why.msg[0] || (prefer && strcmp(name, prefer) == 0))
                why = ce;
            continue;
        }
        if (prefer && strcmp(name, prefer) == 0) {
            best = c->v[i];
            best_at = at;
            break;
        }
        if (!best || newer(c->v[i], best)) {
            best = c->v[i];
            best_at = at;
        }
    }
    if (best) {
        snprintf(ret_name, RENDER_CLUSTER_NAME_MAX, "%s", render_cluster_meta_str(best, "name"));
        if (ret_renew_at)
            *ret_renew_at = best_at;
        r = 0;
    } else if (why.msg[0]) {
        r = err_set(e, -ENOENT, "%s", why.msg);
    } else {
        r = err_set(e, -ENOENT, "no %s certs Secret in %s yet", render_part_short(part), rc->ns);
    }
out:
    free(c);
    free(ps);
    return r;
}

int render_cluster_certs_issue(const struct render_cluster *rc,
                               const struct render_cluster_pki *pki,
                               const struct render_source *src, enum render_part part,
                               const char *prefer, cJSON **ret_secret, struct err *e)
{
    struct candidates *c = malloc(sizeof(*c));
    struct pieces *ps = malloc(sizeof(*ps));
    struct entries *es = calloc(1, sizeof(*es));
    const cJSON *base = NULL;
    char what[600];
    int r = 0;

    if (!c || !ps || !es) {
        r = -ENOMEM;
        goto out;
    }
    if (part >= RENDER_PART__COUNT || !rc->parts[part].obj) {
        r = err_set(e, -ENOENT, "%s",
                    part < RENDER_PART__COUNT && rc->parts[part].missing ? rc->parts[part].missing
                                                                         : "no such component");
        goto out;
    }
    candidates_of(rc, src, part, c);
    pieces_of(part, ps);
    for (int i = 0; i < c->n; i++) {
        if (prefer && strcmp(render_cluster_meta_str(c->v[i], "name"), prefer) == 0) {
            base = c->v[i];
            break;
        }
        if (!base || newer(c->v[i], base))
            base = c->v[i];
    }
    for (int i = 0; i < ps->n && r == 0; i++)
        r = fill_piece(pki, &ps->v[i], base, es, e);
    if (r == 0 && (r = build_certs_secret(rc, part, es, ret_secret)) < 0)
        err_set(e, r, "out of memory");
    if (r < 0 && r != -ENOMEM) {
        render_cluster_what(render_part_kind(part), rc->ns, rc->parts[part].obj->meta.name, what,
                            sizeof(what));
        err_prefix(e, "%s: certificates: ", what);
    }
out:
    if (es)
        entries_done(es);
    free(es);
    free(c);
    free(ps);
    return r;
}

int render_cluster_certs(const struct render_cluster *rc, const struct render_cluster_pki *pki,
                         const struct render_source *src, enum render_part part, const char *prefer,
                         cJSON **ret_secret, char ret_name[static RENDER_CLUSTER_NAME_MAX],
                         struct err *e)
{
    cJSON *s = NULL;
    int r = render_cluster_certs_find(rc, pki, src, part, prefer, ret_name, NULL, e);

    if (r != -ENOENT) {
        if (r == 0)
            *ret_secret = NULL;
        return r;
    }
    err_clear(e);
    if ((r = render_cluster_certs_issue(rc, pki, src, part, prefer, &s, e)) < 0)
        return r;
    snprintf(ret_name, RENDER_CLUSTER_NAME_MAX, "%s", render_cluster_meta_str(s, "name"));
    *ret_secret = s;
    return 0;
}

const char *render_cluster_certs_mounted(const cJSON *statefulset)
{
    const cJSON *vols = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(statefulset, "spec"),
                                             "template"),
            "spec"),
        "volumes");
    const cJSON *v;

    cJSON_ArrayForEach(v, vols) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(v, "name");
        const cJSON *sn = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(v, "secret"), "secretName");
        if (cJSON_IsString(n) && strcmp(n->valuestring, "certs") == 0 && cJSON_IsString(sn))
            return sn->valuestring;
    }
    return NULL;
}

/* ---- the admin kubeconfig ---- */

int render_cluster_kubeconfig(const struct render_cluster *rc, const struct render_cluster_pki *pki,
                              const struct render_source *src, cJSON **ret_secret,
                              int64_t *ret_renew_at, struct err *e)
{
    static const struct piece admin = {P_KUBECONFIG, "value", 0, PKI_KUBEADM_ADMIN, 0};
    char name[RENDER_CLUSTER_NAME_MAX];
    const cJSON *old;
    struct entries *es;
    cJSON *s = NULL;
    int r;

    if (pki_secret_name(rc->name, PKI_PURPOSE_KUBECONFIG, name, sizeof(name)) < 0)
        return err_set(e, -EINVAL, "cluster name %s is too long", rc->name);
    old = src->get_secret(src->ctx, rc->ns, name);
    if (ret_renew_at)
        *ret_renew_at = 0;
    if (old) {
        struct err why;
        if (check_piece(pki, &admin, old, ret_renew_at, &why) == 0) {
            *ret_secret = NULL;
            return 0;
        }
        if (ret_renew_at)
            *ret_renew_at = 0;
    }
    if (!(es = calloc(1, sizeof(*es))))
        return -ENOMEM;
    r = fill_piece(pki, &admin, NULL, es, e);
    if (r == 0)
        r = pki_secret_kubeconfig_new(rc->name, rc->ns, es->v[0].value, &s, e);
    if (r == 0 && render_cluster_set_owner(s, rc->ncp_api_version, API_KIND_NESTED_CONTROL_PLANE,
                                           &rc->ncp->meta) < 0)
        r = -ENOMEM;
    entries_done(es);
    free(es);
    if (r < 0) {
        cJSON_Delete(s);
        if (r != -ENOMEM)
            err_prefix(e, "Secret %s/%s: ", rc->ns, name);
        return r;
    }
    *ret_secret = s;
    return 0;
}
