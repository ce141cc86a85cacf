/* nestcp-fake-etcd's server (fakeetcd.h): TLS chosen by SNI from the Pod's certs Secret,
 * minimal HTTP/1.1, and the membership of each StatefulSet in memory. */

#include "test/nodeagent/fakeetcd.h"

#include <errno.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <ev.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "lib/kube/object.h"
#include "lib/kube/store.h"
#include "lib/pki/base64.h"
#include "lib/util/buf.h"
#include "lib/util/httpd.h"
#include "lib/util/list.h"
#include "lib/util/strmap.h"

#define FE_MEMBERS_MAX 16
#define FE_NAME_MAX 64 /* a DNS label and its terminator */
#define FE_URL_MAX 256
#define FE_REQUEST_MAX ((size_t)64 << 10)
#define FE_PEM_MAX ((size_t)64 << 10)
#define FE_IDLE_SECONDS 60.0
#define FE_ANN_INITIAL_CLUSTER "etcd.nestcp.x-k8s.io/initial-cluster"
#define FE_ANN_INITIAL_STATE "etcd.nestcp.x-k8s.io/initial-cluster-state"

struct fe_member {
    uint64_t id;
    char pod[FE_NAME_MAX]; /* the Pod its peer URL names */
    char peer_url[FE_URL_MAX];
    bool learner;
};

/* One StatefulSet's etcd cluster. */
struct fe_cluster {
    char key[2 * FE_NAME_MAX]; /* "ns/sts" */
    uint64_t id;
    uint64_t raft_term, raft_index;
    struct fe_member m[FE_MEMBERS_MAX];
    int n;
};

/* A server context per certs Secret, rebuilt when the Secret changes. */
struct fe_tls {
    char key[2 * FE_NAME_MAX + 256]; /* "ns/secret" */
    char rv[64];
    SSL_CTX *ctx;
};

struct fake_etcd {
    struct ev_loop *loop;
    const struct kube_store *pods, *secrets;
    int fd, port;
    ev_io accept_io;
    SSL_CTX *ctx; /* until SNI picks the Pod's */
    struct strmap clusters, tls;
    struct list_node conns;
    struct fake_etcd_stats stats;
};

struct fe_conn {
    struct fake_etcd *fe;
    struct list_node node;
    int fd;
    SSL *ssl;
    ev_io io;
    ev_timer idle;
    bool established;
    bool close_after; /* once out is written */
    struct buf in, out;
    size_t out_off;
    char pod[FE_NAME_MAX], sts[FE_NAME_MAX], ns[FE_NAME_MAX]; /* from SNI */
};

/* ---- Pods and Secrets ---- */

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Its etcd would run: not gated, not deleting, with an IP. */
static bool pod_running(const cJSON *pod)
{
    const char *ip = str(get(pod, "status"), "podIP");

    return pod && !get(get(pod, "metadata"), "deletionTimestamp") &&
           cJSON_GetArraySize(get(get(pod, "spec"), "schedulingGates")) == 0 && ip && ip[0];
}

static const char *pod_certs_secret(const cJSON *pod)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, get(get(pod, "spec"), "volumes")) {
        const char *name = str(v, "name");
        if (name && strcmp(name, "certs") == 0)
            return str(get(v, "secret"), "secretName");
    }
    return NULL;
}

static const cJSON *pod_container(const cJSON *pod)
{
    return cJSON_GetArrayItem(get(get(pod, "spec"), "containers"), 0);
}

/* The value after prefix of the container's first argument that starts with it. */
static const char *pod_arg(const cJSON *pod, const char *prefix)
{
    const cJSON *a;
    size_t n = strlen(prefix);

    cJSON_ArrayForEach(a, get(pod_container(pod), "args")) {
        if (cJSON_IsString(a) && strncmp(a->valuestring, prefix, n) == 0)
            return a->valuestring + n;
    }
    return NULL;
}

/* A literal env value of the container (the raw manifests of the benchmark set them). */
static const char *pod_env(const cJSON *pod, const char *name)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, get(pod_container(pod), "env")) {
        const char *n = str(v, "name");
        if (n && strcmp(n, name) == 0)
            return str(v, "value");
    }
    return NULL;
}

/* "registry.k8s.io/etcd:3.6.17-0" -> "3.6.17". */
static void pod_version(const cJSON *pod, char *out, size_t size)
{
    const char *image = str(pod_container(pod), "image"), *tag;
    size_t n;

    snprintf(out, size, "3.6.0");
    if (!image || !(tag = strrchr(image, ':')) || strchr(tag, '/'))
        return;
    tag += 1 + (tag[1] == 'v');
    n = strcspn(tag, "-");
    if (n > 0 && n < size)
        snprintf(out, size, "%.*s", (int)n, tag);
}

/* Decodes data[key] of a Secret into a PEM string the caller frees; NULL when absent or bad. */
static char *secret_pem(const cJSON *secret, const char *key)
{
    const char *b64 = str(get(secret, "data"), key);
    unsigned char *data = NULL;
    size_t len;

    if (!b64 || pki_base64_decode(b64, strlen(b64), FE_PEM_MAX, &data, &len) < 0)
        return NULL;
    return (char *)data;
}

/* ---- TLS ---- */

static int select_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                         const unsigned char *in, unsigned int inlen, void *arg)
{
    static const unsigned char http11[] = "\x08http/1.1";

    if (SSL_select_next_proto((unsigned char **)out, outlen, http11, sizeof(http11) - 1, in,
                              inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    return SSL_TLSEXT_ERR_OK;
}

/* What every context shares: TLS 1.2 and up, no session resumption (a session must not carry
 * one Pod's identity to another), http/1.1 by ALPN. */
static SSL_CTX *ctx_base(void)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    if (!ctx)
        return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    SSL_CTX_set_alpn_select_cb(ctx, select_http11, NULL);
    return ctx;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    return -1;
}

/* A server context from the Secret's server.crt (with any chain after it), server.key, and
 * ca.crt as the only trust for client certificates. NULL when a key is missing or bad. */
static SSL_CTX *ctx_from_secret(const cJSON *secret)
{
    char *ca = secret_pem(secret, "ca.crt"), *crt = secret_pem(secret, "server.crt");
    char *key = secret_pem(secret, "server.key");
    SSL_CTX *ctx = NULL;
    BIO *bio = NULL;
    X509 *x = NULL;
    EVP_PKEY *pkey = NULL;
    int n = 0;

    if (!ca || !crt || !key || !(ctx = ctx_base()))
        goto fail;
    if (!(bio = BIO_new_mem_buf(crt, -1)) || !(x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) ||
        SSL_CTX_use_certificate(ctx, x) != 1)
        goto fail;
    X509_free(x);
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)))
        if (SSL_CTX_add0_chain_cert(ctx, x) != 1)
            goto fail;
    BIO_free(bio);
    if (!(bio = BIO_new_mem_buf(key, -1)) ||
        !(pkey = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL)) ||
        SSL_CTX_use_PrivateKey(ctx, pkey) != 1 || SSL_CTX_check_private_key(ctx) != 1)
        goto fail;
    BIO_free(bio);
    if (!(bio = BIO_new_mem_buf(ca, -1)))
        goto fail;
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
        if (X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), x) != 1)
            goto fail;
        X509_free(x);
        n++;
    }
    if (n == 0)
        goto fail;
    x = NULL;
    goto out;
fail:
    SSL_CTX_free(ctx);
    ctx = NULL;
out:
    X509_free(x);
    EVP_PKEY_free(pkey);
    BIO_free(bio);
    ERR_clear_error();
    if (key) {
        OPENSSL_cleanse(key, strlen(key));
        free(key);
    }
    free(crt);
    free(ca);
    return ctx;
}

static void tls_free(void *v)
{
    struct fe_tls *t = v;

    SSL_CTX_free(t->ctx);
    free(t);
}

/* The context of the Secret ns/name as it is now; NULL when it cannot serve. */
static SSL_CTX *tls_for(struct fake_etcd *fe, const char *ns, const char *name)
{
    const cJSON *secret = kube_store_get(fe->secrets, ns, name);
    const char *rv = kube_obj_resource_version(secret);
    struct fe_tls *t;
    char key[sizeof(t->key)];

    if (!secret || !rv)
        return NULL;
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    t = strmap_get(&fe->tls, key);
    if (t && strcmp(t->rv, rv) == 0)
        return t->ctx;
    if (!t) {
        if (!(t = calloc(1, sizeof(*t))))
            return NULL;
        snprintf(t->key, sizeof(t->key), "%s", key);
        if (strmap_put(&fe->tls, t->key, t) < 0) {
            free(t);
            return NULL;
        }
    }
    SSL_CTX_free(t->ctx);
    t->ctx = ctx_from_secret(secret);
    snprintf(t->rv, sizeof(t->rv), "%s", t->ctx ? rv : "");
    return t->ctx;
}

/* Splits "<pod>.<sts>.<ns>.svc[.<domain>]" into c's names. */
static bool parse_host(const char *host, struct fe_conn *c)
{
    char *out[3] = {c->pod, c->sts, c->ns};
    const char *p = host;

    for (int i = 0; i < 3; i++) {
        size_t n = strcspn(p, ".");
        if (n == 0 || n >= FE_NAME_MAX || p[n] != '.')
            return false;
        memcpy(out[i], p, n);
        out[i][n] = '\0';
        p += n + 1;
    }
    return strcmp(p, "svc") == 0 || strncmp(p, "svc.", 4) == 0;
}

/* Picks the Pod's certificate, and its CA for the client's, or refuses the handshake. */
static int on_servername(SSL *ssl, int *alert, void *arg)
{
    struct fe_conn *c = SSL_get_app_data(ssl);
    struct fake_etcd *fe = arg;
    const char *host = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name), *secret, *sub;
    const cJSON *pod;
    SSL_CTX *ctx;

    *alert = SSL_AD_UNRECOGNIZED_NAME;
    if (!host || !parse_host(host, c) || !(pod = kube_store_get(fe->pods, c->ns, c->pod)))
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    sub = str(get(pod, "spec"), "subdomain");
    if (!sub || strcmp(sub, c->sts) != 0)
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    *alert = SSL_AD_HANDSHAKE_FAILURE;
    if (!pod_running(pod) || !(secret = pod_certs_secret(pod)) ||
        !(ctx = tls_for(fe, c->ns, secret)) || !SSL_set_SSL_CTX(ssl, ctx))
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    /* What the new context verifies with, explicitly: not every setting follows the switch. */
    SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    if (!SSL_set1_verify_cert_store(ssl, SSL_CTX_get_cert_store(ctx)))
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    return SSL_TLSEXT_ERR_OK;
}

/* ---- membership ---- */

static uint64_t digest64(const void *data, size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    uint64_t v = 0;

    if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1)
        return 1;
    for (int i = 0; i < 8; i++)
        v = v << 8 | md[i];
    return v ? v : 1;
}

static uint64_t member_id_of(const char *peer_url, const char *token)
{
    char b[FE_URL_MAX + 256];
    int n = snprintf(b, sizeof(b), "%s|%s", peer_url, token ? token : "");

    return digest64(b, (size_t)n < sizeof(b) ? (size_t)n : sizeof(b) - 1);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The Pod a peer URL https://<pod>.<sts>.<ns>.svc:2380 names. */
static void url_pod(const char *url, char out[FE_NAME_MAX])
{
    const char *p = strstr(url, "://");
    size_t n;

    p = p ? p + 3 : url;
    n = strcspn(p, ".:/");
    snprintf(out, FE_NAME_MAX, "%.*s", (int)(n < FE_NAME_MAX ? n : FE_NAME_MAX - 1), p);
}

/* Forms the cluster of c's Pod from its initial cluster ("name=url,..."), as etcd does with
 * --initial-cluster; without one, the Pod alone. */
static struct fe_cluster *cluster_form(struct fake_etcd *fe, const struct fe_conn *c,
                                       const cJSON *pod, const char *key)
{
    const char *init = kube_obj_annotation(pod, FE_ANN_INITIAL_CLUSTER);
    const char *token = pod_arg(pod, "--initial-cluster-token=");
    uint64_t ids[FE_MEMBERS_MAX];
    struct fe_cluster *cl = calloc(1, sizeof(*cl));
    char own[4 * FE_NAME_MAX + 32];

    if (!cl)
        return NULL;
    if (!init || !init[0])
        init = pod_env(pod, "NESTCP_INITIAL_CLUSTER");
    snprintf(own, sizeof(own), "%s=https://%s.%s.%s.svc:2380", c->pod, c->pod, c->sts, c->ns);
    if (!init || !init[0])
        init = own;
    snprintf(cl->key, sizeof(cl->key), "%s", key);
    for (const char *p = init; *p && cl->n < FE_MEMBERS_MAX;) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n);
        struct fe_member *m = &cl->m[cl->n];

        if (eq && (size_t)(p + n - eq - 1) < FE_URL_MAX) {
            snprintf(m->peer_url, sizeof(m->peer_url), "%.*s", (int)(p + n - eq - 1), eq + 1);
            url_pod(m->peer_url, m->pod);
            m->id = member_id_of(m->peer_url, token);
            ids[cl->n++] = m->id;
        }
        p += n + (p[n] == ',');
    }
    qsort(ids, (size_t)cl->n, sizeof(ids[0]), cmp_u64);
    cl->id = digest64(ids, (size_t)cl->n * sizeof(ids[0]));
    cl->raft_term = 2;
    cl->raft_index = (uint64_t)cl->n + 4;
    if (strmap_put(&fe->clusters, cl->key, cl) < 0) {
        free(cl);
        return NULL;
    }
    return cl;
}

static struct fe_member *member_by_pod(struct fe_cluster *cl, const char *pod)
{
    for (int i = 0; i < cl->n; i++)
        if (strcmp(cl->m[i].pod, pod) == 0)
            return &cl->m[i];
    return NULL;
}

static struct fe_member *member_by_id(struct fe_cluster *cl, uint64_t id)
{
    for (int i = 0; i < cl->n; i++)
        if (cl->m[i].id == id)
            return &cl->m[i];
    return NULL;
}

static bool member_started(const struct fake_etcd *fe, const struct fe_conn *c,
                           const struct fe_member *m)
{
    return pod_running(kube_store_get(fe->pods, c->ns, m->pod));
}

static const struct fe_member *leader(const struct fe_cluster *cl)
{
    for (int i = 0; i < cl->n; i++)
        if (!cl->m[i].learner)
            return &cl->m[i];
    return NULL;
}

/* ---- JSON ---- */

static bool add_id(cJSON *o, const char *key, uint64_t v)
{
    char s[24];

    snprintf(s, sizeof(s), "%" PRIu64, v);
    return cJSON_AddStringToObject(o, key, s) != NULL;
}

static bool add_header(cJSON *root, const struct fe_cluster *cl, const struct fe_member *self)
{
    cJSON *h = cJSON_AddObjectToObject(root, "header");

    return h && add_id(h, "cluster_id", cl->id) && add_id(h, "member_id", self->id) &&
           add_id(h, "revision", 1) && add_id(h, "raft_term", cl->raft_term);
}

/* A member as the gateway writes it: fields at their zero value left out. */
static cJSON *member_json(const struct fake_etcd *fe, const struct fe_conn *c,
                          const struct fe_member *m)
{
    cJSON *o = cJSON_CreateObject(), *a;
    char url[FE_URL_MAX + 16];

    if (!o || !add_id(o, "ID", m->id))
        goto fail;
    if (member_started(fe, c, m)) {
        snprintf(url, sizeof(url), "https://%s.%s.%s.svc:2379", m->pod, c->sts, c->ns);
        if (!cJSON_AddStringToObject(o, "name", m->pod) ||
            !(a = cJSON_AddArrayToObject(o, "clientURLs")) ||
            !cJSON_AddItemToArray(a, cJSON_CreateString(url)))
            goto fail;
    }
    if (!(a = cJSON_AddArrayToObject(o, "peerURLs")) ||
        !cJSON_AddItemToArray(a, cJSON_CreateString(m->peer_url)))
        goto fail;
    if (m->learner && !cJSON_AddTrueToObject(o, "isLearner"))
        goto fail;
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

static bool add_members(cJSON *root, const struct fake_etcd *fe, const struct fe_conn *c,
                        const struct fe_cluster *cl)
{
    cJSON *a = cJSON_AddArrayToObject(root, "members");

    for (int i = 0; a && i < cl->n; i++)
        if (!cJSON_AddItemToArray(a, member_json(fe, c, &cl->m[i])))
            return false;
    return a != NULL;
}

/* ---- requests ---- */

struct fe_reply {
    int http;
    cJSON *body;
};

/* An error as the gateway answers it: gRPC code and etcd's message. */
static void reply_error(struct fe_reply *r, int http, int grpc, const char *message)
{
    cJSON_Delete(r->body);
    r->http = http;
    r->body = cJSON_CreateObject();
    if (r->body) {
        cJSON_AddStringToObject(r->body, "error", message);
        cJSON_AddNumberToObject(r->body, "code", grpc);
        cJSON_AddStringToObject(r->body, "message", message);
    }
}

static uint64_t body_id(const cJSON *req)
{
    const char *s = str(req, "ID");
    uint64_t v = 0;

    for (; s && *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (uint64_t)(*s - '0');
    return v;
}

static void do_add(struct fake_etcd *fe, struct fe_cluster *cl, const cJSON *req,
                   struct fe_reply *r, struct fe_conn *c)
{
    const cJSON *urls = get(req, "peerURLs");
    const char *url =
        cJSON_IsArray(urls) ? cJSON_GetStringValue(cJSON_GetArrayItem(urls, 0)) : NULL;
    bool learner = cJSON_IsTrue(get(req, "isLearner"));
    struct fe_member *m;

    if (!url || strncmp(url, "https://", 8) != 0 || strlen(url) >= FE_URL_MAX)
        return reply_error(r, 400, 3, "etcdserver: given member URLs are invalid");
    for (int i = 0; i < cl->n; i++) {
        if (strcmp(cl->m[i].peer_url, url) == 0)
            return reply_error(r, 400, 9, "etcdserver: Peer URLs already exists");
        if (learner && cl->m[i].learner)
            return reply_error(r, 400, 9, "etcdserver: too many learner members in cluster");
    }
    if (cl->n == FE_MEMBERS_MAX)
        return reply_error(r, 400, 9, "etcdserver: too many members");
    m = &cl->m[cl->n];
    memset(m, 0, sizeof(*m));
    do
        RAND_bytes((unsigned char *)&m->id, sizeof(m->id));
    while (m->id == 0 || member_by_id(cl, m->id));
    snprintf(m->peer_url, sizeof(m->peer_url), "%s", url);
    url_pod(url, m->pod);
    m->learner = learner;
    cl->n++;
    fe->stats.changes++;
    cJSON_AddItemToObject(r->body, "member", member_json(fe, c, m));
}

static void do_promote(struct fake_etcd *fe, struct fe_cluster *cl, uint64_t id, struct fe_reply *r,
                       struct fe_conn *c)
{
    struct fe_member *m = member_by_id(cl, id);

    if (!m)
        return reply_error(r, 404, 5, "etcdserver: member not found");
    if (!m->learner)
        return reply_error(r, 400, 9, "etcdserver: can only promote a learner member");
    if (!member_started(fe, c, m))
        return reply_error(r, 400, 9,
                           "etcdserver: can only promote a learner member which is in sync with "
                           "leader");
    m->learner = false;
    fe->stats.changes++;
}

static void do_remove(struct fake_etcd *fe, struct fe_cluster *cl, uint64_t id, struct fe_reply *r)
{
    struct fe_member *m = member_by_id(cl, id);

    if (!m)
        return reply_error(r, 404, 5, "etcdserver: member not found");
    memmove(m, m + 1, (size_t)(cl->m + cl->n - m - 1) * sizeof(*m));
    cl->n--;
    fe->stats.changes++;
}

static void do_status(const struct fe_cluster *cl, const struct fe_member *self, const cJSON *pod,
                      struct fe_reply *r)
{
    const struct fe_member *l = leader(cl);
    char version[32];

    pod_version(pod, version, sizeof(version));
    cJSON_AddStringToObject(r->body, "version", version);
    add_id(r->body, "dbSize", 20480);
    add_id(r->body, "leader", l ? l->id : 0);
    add_id(r->body, "raftIndex", cl->raft_index);
    add_id(r->body, "raftTerm", cl->raft_term);
    add_id(r->body, "raftAppliedIndex", cl->raft_index);
    add_id(r->body, "dbSizeInUse", 16384);
    if (self->learner)
        cJSON_AddTrueToObject(r->body, "isLearner");
    cJSON_AddStringToObject(r->body, "storageVersion", "3.6.0");
    add_id(r->body, "dbSizeQuota", (uint64_t)2 << 30);
}

/* Answers method path with body (NUL-terminated) for c's member. */
static void handle(struct fake_etcd *fe, struct fe_conn *c, const char *method, const char *path,
                   const char *body, struct fe_reply *r)
{
    const cJSON *pod = kube_store_get(fe->pods, c->ns, c->pod);
    struct fe_cluster *cl;
    struct fe_member *self;
    cJSON *req = NULL;
    char key[sizeof(cl->key)];
    bool post = strcmp(method, "POST") == 0;

    fe->stats.requests++;
    r->http = 200;
    if (!(r->body = cJSON_CreateObject()))
        return;
    if (strcmp(path, "/health") == 0 && strcmp(method, "GET") == 0) {
        cJSON_AddStringToObject(r->body, "health", "true");
        cJSON_AddStringToObject(r->body, "reason", "");
        return;
    }
    if (!pod_running(pod))
        return reply_error(r, 503, 14, "etcdserver: server stopped");
    snprintf(key, sizeof(key), "%s/%s", c->ns, c->sts);
    if (!(cl = strmap_get(&fe->clusters, key)) && !(cl = cluster_form(fe, c, pod, key)))
        return reply_error(r, 500, 13, "out of memory");
    if (!(self = member_by_pod(cl, c->pod)))
        return reply_error(r, 503, 14, "etcdserver: server stopped");
    req = cJSON_Parse(body && body[0] ? body : "{}");
    if (!post || !cJSON_IsObject(req)) {
        reply_error(r, post ? 400 : 404, post ? 3 : 5, post ? "malformed request" : "Not Found");
        goto out;
    }
    if (strcmp(path, "/v3/cluster/member/add") == 0)
        do_add(fe, cl, req, r, c);
    else if (strcmp(path, "/v3/cluster/member/promote") == 0)
        do_promote(fe, cl, body_id(req), r, c);
    else if (strcmp(path, "/v3/cluster/member/remove") == 0)
        do_remove(fe, cl, body_id(req), r);
    else if (strcmp(path, "/v3/maintenance/status") == 0)
        do_status(cl, self, pod, r);
    else if (strcmp(path, "/v3/cluster/member/list") != 0)
        reply_error(r, 404, 5, "Not Found");
    if (r->http != 200)
        goto out;
    /* self may have moved or gone with a removal. */
    self = member_by_pod(cl, c->pod);
    if (!add_header(r->body, cl, self ? self : &cl->m[0]) ||
        (strncmp(path, "/v3/cluster/", 12) == 0 && !add_members(r->body, fe, c, cl)))
        reply_error(r, 500, 13, "out of memory");
out:
    cJSON_Delete(req);
}

/* ---- HTTP/1.1 ---- */

static const char *reason_of(int http)
{
    switch (http) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 503:
        return "Service Unavailable";
    default:
        return "Internal Server Error";
    }
}

/* The value of header name in the header block hdr (lines after the request line), or NULL;
 * its length in *ret_len. */
static const char *header_value(const char *hdr, const char *end, const char *name, size_t *ret_len)
{
    size_t n = strlen(name);

    for (const char *p = hdr; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *e = eol ? eol : end;

        if ((size_t)(e - p) > n && strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1;
            while (v < e && (*v == ' ' || *v == '\t'))
                v++;
            while (e > v && (e[-1] == '\r' || e[-1] == ' '))
                e--;
            *ret_len = (size_t)(e - v);
            return v;
        }
        p = e + 1;
    }
    return NULL;
}

/* Takes one complete request off c->in and queues its response. Returns 1 when one was taken,
 * 0 when more is needed, -1 for a request to refuse (the connection closes after the answer). */
static int serve_one(struct fe_conn *c)
{
    char *data = c->in.data, *hend, *sp1, *sp2, *q, *text = NULL;
    size_t hlen, clen = 0, vlen, total;
    const char *v;
    struct fe_reply r = {0};
    char method[8], path[128];
    bool close_conn = false;
    int ret = 1;

    if (!data || !(hend = strstr(data, "\r\n\r\n")))
        return 0;
    hlen = (size_t)(hend - data) + 4;
    sp1 = memchr(data, ' ', hlen);
    sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(hend - sp1 - 1)) : NULL;
    if (!sp1 || !sp2 || sp1 - data >= (long)sizeof(method) || sp2 - sp1 - 1 >= (long)sizeof(path))
        return -1;
    snprintf(method, sizeof(method), "%.*s", (int)(sp1 - data), data);
    snprintf(path, sizeof(path), "%.*s", (int)(sp2 - sp1 - 1), sp1 + 1);
    if ((q = strchr(path, '?')))
        *q = '\0';
    if ((v = header_value(data, hend, "Transfer-Encoding", &vlen)))
        return -1; /* libcurl sends a Content-Length with every body */
    if ((v = header_value(data, hend, "Content-Length", &vlen))) {
        for (size_t i = 0; i < vlen; i++) {
            if (v[i] < '0' || v[i] > '9' || clen > FE_REQUEST_MAX)
                return -1;
            clen = clen * 10 + (size_t)(v[i] - '0');
        }
    }
    if (hlen + clen > FE_REQUEST_MAX)
        return -1;
    if (c->in.len < hlen + clen)
        return 0;
    if ((v = header_value(data, hend, "Connection", &vlen)) && vlen == 5 &&
        strncasecmp(v, "close", 5) == 0)
        close_conn = true;
    if (!(text = strndup(data + hlen, clen)))
        return -1;
    handle(c->fe, c, method, path, text, &r);
    free(text);
    text = r.body ? cJSON_PrintUnformatted(r.body) : NULL;
    cJSON_Delete(r.body);
    total = hlen + clen;
    buf_consume(&c->in, total);
    if (!text) {
        r.http = 500;
        close_conn = true;
    }
    if (buf_printf(&c->out,
                   "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                   "%s\r\n%s",
                   r.http, reason_of(r.http), text ? strlen(text) : 0,
                   close_conn ? "Connection: close\r\n" : "", text ? text : "") < 0)
        ret = -1;
    c->close_after = close_conn;
    free(text);
    return ret;
}

/* ---- connections ---- */

static void conn_free(struct fe_conn *c)
{
    ev_io_stop(c->fe->loop, &c->io);
    ev_timer_stop(c->fe->loop, &c->idle);
    list_remove(&c->node);
    SSL_free(c->ssl);
    close(c->fd);
    buf_done(&c->in);
    buf_done(&c->out);
    free(c);
}

static void conn_wait(struct fe_conn *c, int events)
{
    if ((c->io.events & (EV_READ | EV_WRITE)) == events)
        return;
    ev_io_stop(c->fe->loop, &c->io);
    ev_io_set(&c->io, c->fd, events);
    ev_io_start(c->fe->loop, &c->io);
}

/* Waits as OpenSSL asks after a call returned r; false when the connection is done for. */
static bool conn_retry(struct fe_conn *c, int r)
{
    switch (SSL_get_error(c->ssl, r)) {
    case SSL_ERROR_WANT_READ:
        conn_wait(c, EV_READ);
        return true;
    case SSL_ERROR_WANT_WRITE:
        conn_wait(c, EV_WRITE);
        return true;
    default:
        ERR_clear_error();
        return false;
    }
}

static void conn_run(struct fe_conn *c)
{
    char tmp[16384];
    int r;

    ev_timer_again(c->fe->loop, &c->idle);
    if (!c->established) {
        r = SSL_accept(c->ssl);
        if (r != 1) {
            if (!conn_retry(c, r)) {
                c->fe->stats.refused++;
                conn_free(c);
            }
            return;
        }
        c->established = true;
        c->fe->stats.handshakes++;
    }
    for (;;) {
        if (c->out_off < c->out.len) {
            r = SSL_write(c->ssl, c->out.data + c->out_off, (int)(c->out.len - c->out_off));
            if (r <= 0) {
                if (!conn_retry(c, r))
                    conn_free(c);
                return;
            }
            c->out_off += (size_t)r;
            if (c->out_off < c->out.len)
                continue;
            buf_reset(&c->out);
            c->out_off = 0;
            if (c->close_after) {
                SSL_shutdown(c->ssl);
                conn_free(c);
                return;
            }
        }
        r = serve_one(c);
        if (r < 0) {
            conn_free(c);
            return;
        }
        if (r > 0)
            continue;
        r = SSL_read(c->ssl, tmp, sizeof(tmp));
        if (r <= 0) {
            if (!conn_retry(c, r))
                conn_free(c);
            return;
        }
        if (buf_append(&c->in, tmp, (size_t)r) < 0) {
            conn_free(c);
            return;
        }
    }
}

static void on_conn_io(struct ev_loop *loop, ev_io *w, int revents)
{
    conn_run(w->data);
}

static void on_conn_idle(struct ev_loop *loop, ev_timer *w, int revents)
{
    conn_free(w->data);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    struct fake_etcd *fe = w->data;

    for (;;) {
        int fd = accept4(fe->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct fe_conn *c;

        if (fd < 0)
            return;
        if (!(c = calloc(1, sizeof(*c))) || !(c->ssl = SSL_new(fe->ctx))) {
            free(c);
            close(fd);
            continue;
        }
        c->fe = fe;
        c->fd = fd;
        buf_init(&c->in, FE_REQUEST_MAX);
        buf_init(&c->out, 0);
        SSL_set_app_data(c->ssl, c);
        SSL_set_fd(c->ssl, fd);
        list_add_head(&fe->conns, &c->node);
        ev_io_init(&c->io, on_conn_io, fd, EV_READ);
        c->io.data = c;
        ev_io_start(loop, &c->io);
        ev_init(&c->idle, on_conn_idle);
        c->idle.repeat = FE_IDLE_SECONDS;
        c->idle.data = c;
        conn_run(c);
    }
}

/* ---- the server ---- */

int fake_etcd_new(struct ev_loop *loop, const char *address, const struct kube_store *pods,
                  const struct kube_store *secrets, struct fake_etcd **ret, struct err *e)
{
    struct sockaddr_storage addr;
    socklen_t len;
    struct fake_etcd *fe;
    int one = 1, r;

    r = httpd_parse_address(address, &addr, &len, e);
    if (r < 0)
        return r;
    if (!(fe = calloc(1, sizeof(*fe))))
        return -ENOMEM;
    fe->loop = loop;
    fe->pods = pods;
    fe->secrets = secrets;
    list_init(&fe->conns);
    fe->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fe->fd < 0) {
        r = err_set(e, -errno, "socket: %s", strerror(errno));
        free(fe);
        return r;
    }
    setsockopt(fe->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fe->fd, (struct sockaddr *)&addr, len) < 0 || listen(fe->fd, 512) < 0 ||
        getsockname(fe->fd, (struct sockaddr *)&addr, &len) < 0) {
        r = err_set(e, -errno, "listen on %s: %s", address, strerror(errno));
        goto fail;
    }
    fe->port = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                                : ((struct sockaddr_in *)&addr)->sin_port);
    r = -ENOMEM;
    if (!(fe->ctx = ctx_base()))
        goto fail;
    SSL_CTX_set_tlsext_servername_callback(fe->ctx, on_servername);
    SSL_CTX_set_tlsext_servername_arg(fe->ctx, fe);
    ev_io_init(&fe->accept_io, on_accept, fe->fd, EV_READ);
    fe->accept_io.data = fe;
    ev_io_start(loop, &fe->accept_io);
    *ret = fe;
    return 0;
fail:
    close(fe->fd);
    SSL_CTX_free(fe->ctx);
    free(fe);
    return r;
}

int fake_etcd_port(const struct fake_etcd *fe)
{
    return fe->port;
}

void fake_etcd_get_stats(const struct fake_etcd *fe, struct fake_etcd_stats *ret)
{
    *ret = fe->stats;
}

void fake_etcd_free(struct fake_etcd *fe)
{
    if (!fe)
        return;
    while (!list_empty(&fe->conns))
        conn_free(list_entry(list_first(&fe->conns), struct fe_conn, node));
    ev_io_stop(fe->loop, &fe->accept_io);
    close(fe->fd);
    SSL_CTX_free(fe->ctx);
    strmap_done(&fe->tls, tls_free);
    strmap_done(&fe->clusters, free);
    free(fe);
}
