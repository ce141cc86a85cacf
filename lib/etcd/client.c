#include "lib/etcd/client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/kube/status.h"
#include "lib/kube/transport.h"
#include "lib/util/buf.h"
#include "lib/util/list.h"

/* The PEM text every call hands libcurl, shared by the client and its calls so that a call
 * cancelled from inside libcurl (see etcd_call_cancel) may outlive the client. */
struct tls_blobs {
    unsigned refs;
    struct curl_blob ca, cert, key;
    size_t size;
    char data[]; /* ca NUL cert NUL key NUL */
};

struct etcd_client {
    struct kube_transport *t;
    struct tls_blobs *tls;
    long timeout_ms;
    struct list_node calls; /* in flight */
    size_t pending;
    bool closing;
};

enum call_kind {
    CALL_MEMBERS, /* member list, add, promote, remove */
    CALL_STATUS,
    CALL_HEALTH,
};

struct etcd_call {
    struct kube_xfer x;
    struct etcd_client *c; /* NULL once the call left the client's list */
    struct list_node node; /* in c->calls */
    struct tls_blobs *tls;
    enum call_kind kind;
    etcd_done_fn done;
    void *userdata;
    char *url;
    char *body; /* NULL for GET */
    struct curl_slist *headers, *resolve;
    struct buf resp;
    bool too_big;
    char where[300]; /* "host:port", for messages */
    char errbuf[CURL_ERROR_SIZE];
};

/* ---- TLS material ---- */

static void tls_unref(struct tls_blobs *b)
{
    if (!b || --b->refs > 0)
        return;
    explicit_bzero(b->data, b->size);
    free(b);
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    return -1;
}

/* Checks that the PEM texts parse and that the key belongs to the certificate, so that a bad
 * configuration fails here rather than as an obscure TLS error on every call. */
static int tls_check(const struct etcd_tls *tls, struct err *e)
{
    BIO *bio = NULL;
    X509 *x = NULL, *cert = NULL;
    EVP_PKEY *key = NULL;
    int r = -EINVAL, n = 0;

    bio = BIO_new_mem_buf(tls->ca_pem, -1);
    if (!bio)
        goto oom;
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
        X509_free(x);
        n++;
    }
    BIO_free(bio);
    if (n == 0) {
        err_set(e, -EINVAL, "etcd client: the CA PEM holds no certificate");
        goto out;
    }
    bio = BIO_new_mem_buf(tls->cert_pem, -1);
    if (!bio)
        goto oom;
    cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (!cert) {
        err_set(e, -EINVAL, "etcd client: the client certificate PEM holds no certificate");
        goto out;
    }
    bio = BIO_new_mem_buf(tls->key_pem, -1);
    if (!bio)
        goto oom;
    key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
    BIO_free(bio);
    if (!key) {
        err_set(e, -EINVAL, "etcd client: the client key PEM holds no unencrypted private key");
        goto out;
    }
    if (X509_check_private_key(cert, key) != 1) {
        r = err_set(e, -EKEYREJECTED, "etcd client: the key does not match the certificate");
        goto out;
    }
    r = 0;
    goto out;
oom:
    r = -ENOMEM;
out:
    ERR_clear_error();
    EVP_PKEY_free(key);
    X509_free(cert);
    return r;
}

static struct tls_blobs *tls_new(const struct etcd_tls *tls)
{
    size_t la = strlen(tls->ca_pem), lc = strlen(tls->cert_pem), lk = strlen(tls->key_pem);
    size_t size = la + lc + lk + 3;
    struct tls_blobs *b = malloc(sizeof(*b) + size);
    char *p;

    if (!b)
        return NULL;
    b->refs = 1;
    b->size = size;
    p = b->data;
    memcpy(p, tls->ca_pem, la + 1);
    b->ca = (struct curl_blob){p, la, CURL_BLOB_NOCOPY};
    p += la + 1;
    memcpy(p, tls->cert_pem, lc + 1);
    b->cert = (struct curl_blob){p, lc, CURL_BLOB_NOCOPY};
    p += lc + 1;
    memcpy(p, tls->key_pem, lk + 1);
    b->key = (struct curl_blob){p, lk, CURL_BLOB_NOCOPY};
    return b;
}

/* ---- the client ---- */

int etcd_client_new(struct kube_transport *t, const struct etcd_tls *tls,
                    struct etcd_client **ret_client, struct err *e)
{
    struct etcd_client *c;
    int r;

    if (!t || !tls || !tls->ca_pem || !tls->cert_pem || !tls->key_pem)
        return err_set(e, -EINVAL, "etcd client: needs a transport, a CA, a certificate, a key");
    r = tls_check(tls, e);
    if (r < 0)
        return r;
    c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    list_init(&c->calls);
    c->tls = tls_new(tls);
    if (!c->tls) {
        free(c);
        return -ENOMEM;
    }
    c->t = t;
    c->timeout_ms = ETCD_TIMEOUT_DEFAULT_MS;
    *ret_client = c;
    return 0;
}

void etcd_client_set_timeout(struct etcd_client *c, long timeout_ms)
{
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : ETCD_TIMEOUT_DEFAULT_MS;
}

size_t etcd_client_pending(const struct etcd_client *c)
{
    return c->pending;
}

static void call_link(struct etcd_client *c, struct etcd_call *k)
{
    k->c = c;
    list_add_head(&c->calls, &k->node);
    c->pending++;
}

static void call_unlink(struct etcd_call *k)
{
    struct etcd_client *c = k->c;

    if (!c)
        return;
    list_remove(&k->node);
    k->c = NULL;
    c->pending--;
}

/* Frees a call that is off the client's list and off the transport. Touches nothing of the
 * client, which may be gone. */
static void call_free(struct etcd_call *k)
{
    if (k->x.easy)
        curl_easy_cleanup(k->x.easy);
    curl_slist_free_all(k->headers);
    curl_slist_free_all(k->resolve);
    buf_done(&k->resp);
    free(k->url);
    free(k->body);
    tls_unref(k->tls);
    free(k);
}

/* Delivers the result once and frees the call. */
static void call_finish(struct etcd_call *k, const struct etcd_result *res)
{
    call_unlink(k);
    k->done(k->userdata, res);
    call_free(k);
}

static void call_closed(struct kube_xfer *x)
{
    call_free(kube_container_of(x, struct etcd_call, x));
}

void etcd_call_cancel(struct etcd_call *k)
{
    struct err er;
    struct etcd_result res = {.code = -ECANCELED, .err = &er};

    if (!k || kube_xfer_closing(&k->x))
        return;
    err_set(&er, -ECANCELED, "%s: cancelled", k->where);
    call_unlink(k);
    k->done(k->userdata, &res);
    kube_transport_close(&k->x, call_closed);
}

void etcd_client_free(struct etcd_client *c)
{
    if (!c || c->closing)
        return;
    c->closing = true;
    while (!list_empty(&c->calls))
        etcd_call_cancel(list_entry(list_first(&c->calls), struct etcd_call, node));
    tls_unref(c->tls);
    free(c);
}

/* ---- one call ---- */

/* As lib/kube's codes, and a server that failed verification says so. */
static int curl_code(CURLcode rc)
{
    return rc == CURLE_PEER_FAILED_VERIFICATION ? -EKEYREJECTED : kube_curl_code(rc);
}

static size_t call_write(char *p, size_t size, size_t n, void *userdata)
{
    struct etcd_call *k = userdata;
    int r = buf_append(&k->resp, p, size * n);

    if (r < 0) {
        k->too_big = r == -ENOBUFS;
        return 0;
    }
    return size * n;
}

/* Reads the response of a finished transfer into res; *ret_list is set for member calls. */
static void call_result(struct etcd_call *k, CURLcode rc, struct etcd_result *res, struct err *er,
                        struct etcd_member_list **ret_list, struct etcd_status *status)
{
    const char *body = k->resp.data;
    size_t len = k->resp.len;
    long http = 0;

    if (rc != CURLE_OK) {
        res->code = rc == CURLE_WRITE_ERROR && k->too_big ? -EFBIG : curl_code(rc);
        err_set(er, res->code, "%s: %s", k->where,
                res->code == -EFBIG ? "response larger than its bound"
                : k->errbuf[0]      ? k->errbuf
                                    : curl_easy_strerror(rc));
        return;
    }
    curl_easy_getinfo(k->x.easy, CURLINFO_RESPONSE_CODE, &http);
    res->http_status = http;
    if (k->kind == CALL_HEALTH) {
        /* An unhealthy member answers 503 with the same document. */
        res->code = etcd_json_parse_health(body, len, er);
        if (res->code == -EBADMSG && (http < 200 || http > 299))
            res->code = etcd_json_parse_error(http, body, len, er);
        return;
    }
    if (http < 200 || http > 299) {
        res->code = etcd_json_parse_error(http, body, len, er);
        return;
    }
    if (k->kind == CALL_STATUS) {
        res->code = etcd_json_parse_status(body, len, status, er);
        if (res->code == 0)
            res->status = status;
    } else {
        res->code = etcd_json_parse_members(body, len, ret_list, er);
        if (res->code == 0)
            res->members = *ret_list;
    }
}

static void call_done(struct kube_xfer *x, CURLcode rc)
{
    struct etcd_call *k = kube_container_of(x, struct etcd_call, x);
    struct etcd_member_list *list = NULL;
    struct etcd_status status;
    struct err er;
    struct etcd_result res = {.err = &er};

    err_clear(&er);
    call_result(k, rc, &res, &er, &list, &status);
    if (res.code == 0)
        err_clear(&er);
    call_finish(k, &res);
    etcd_member_list_free(list);
}

static bool host_ok(const char *h)
{
    size_t n = strlen(h);

    if (n == 0 || n > 253 || h[0] == '.' || h[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = h[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '.'))
            return false;
    }
    return true;
}

static int check_endpoint(const struct etcd_endpoint *ep, bool *ret_v6, struct err *e)
{
    unsigned char addr[16];

    if (!ep || !ep->host || !host_ok(ep->host))
        return err_set(e, -EINVAL, "etcd endpoint: host %s%s%s is not a DNS name",
                       ep && ep->host ? "\"" : "", ep && ep->host ? ep->host : "(none)",
                       ep && ep->host ? "\"" : "");
    if (ep->port < 1 || ep->port > 65535)
        return err_set(e, -EINVAL, "etcd endpoint %s: port %d is out of range", ep->host, ep->port);
    *ret_v6 = false;
    if (ep->ip) {
        if (inet_pton(AF_INET6, ep->ip, addr) == 1)
            *ret_v6 = true;
        else if (inet_pton(AF_INET, ep->ip, addr) != 1)
            return err_set(e, -EINVAL, "etcd endpoint %s: \"%s\" is not an IP address", ep->host,
                           ep->ip);
    }
    return 0;
}

/* Configures the easy handle of k. Returns 0 or -ENOMEM. */
static int call_setup(struct etcd_call *k, long timeout_ms)
{
    static const char *const headers[] = {"Accept: application/json",
                                          "Content-Type: application/json",
                                          "Expect:", "User-Agent: nestcp"};
    CURL *easy = k->x.easy;

    for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
        struct curl_slist *n;

        if (!k->body && i == 1)
            continue;
        n = curl_slist_append(k->headers, headers[i]);
        if (!n)
            return -ENOMEM;
        k->headers = n;
    }
    curl_easy_setopt(easy, CURLOPT_URL, k->url);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "https");
    if (k->resolve)
        curl_easy_setopt(easy, CURLOPT_RESOLVE, k->resolve);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
    /* Only the given CA: no bundle or directory of the system's. */
    curl_easy_setopt(easy, CURLOPT_CAINFO, NULL);
    curl_easy_setopt(easy, CURLOPT_CAPATH, NULL);
    curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &k->tls->ca);
    curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &k->tls->cert);
    curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &k->tls->key);
    curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, k->headers);
    if (k->body) {
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(k->body));
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, k->body);
    } else {
        curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, call_write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, k);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, k->errbuf);
    return 0;
}

/* Queues a call of kind to path on ep. Takes ownership of body (NULL: a GET). */
static int call_start(struct etcd_client *c, const struct etcd_endpoint *ep, enum call_kind kind,
                      const char *path, char *body, etcd_done_fn done, void *userdata,
                      struct etcd_call **ret_call, struct err *e)
{
    struct etcd_call *k = NULL;
    struct buf b;
    bool v6;
    int r;

    buf_init(&b, 0);
    if (c->closing) {
        r = err_set(e, -ECANCELED, "etcd client: being freed");
        goto fail;
    }
    if (!done) {
        r = err_set(e, -EINVAL, "etcd client: no callback");
        goto fail;
    }
    r = check_endpoint(ep, &v6, e);
    if (r < 0)
        goto fail;
    r = -ENOMEM;
    k = calloc(1, sizeof(*k));
    if (!k)
        goto fail;
    list_init(&k->node);
    k->body = body;
    body = NULL;
    k->kind = kind;
    k->done = done;
    k->userdata = userdata;
    k->tls = c->tls;
    k->tls->refs++;
    buf_init(&k->resp, ETCD_JSON_MAX);
    snprintf(k->where, sizeof(k->where), "%s:%d", ep->host, ep->port);
    if (buf_printf(&b, "https://%s:%d%s", ep->host, ep->port, path) < 0)
        goto fail;
    k->url = buf_steal(&b);
    if (!k->url)
        goto fail;
    if (ep->ip) {
        struct curl_slist *n;

        if (buf_printf(&b, v6 ? "%s:%d:[%s]" : "%s:%d:%s", ep->host, ep->port, ep->ip) < 0)
            goto fail;
        n = curl_slist_append(NULL, b.data);
        if (!n)
            goto fail;
        k->resolve = n;
    }
    k->x.easy = curl_easy_init();
    if (!k->x.easy)
        goto fail;
    r = call_setup(k, ep->timeout_ms > 0 ? ep->timeout_ms : c->timeout_ms);
    if (r < 0)
        goto fail;
    k->x.done = call_done;
    r = kube_transport_add(c->t, &k->x);
    if (r < 0) {
        err_set(e, r, "etcd %s: the transport refused the transfer", k->where);
        goto fail;
    }
    call_link(c, k);
    if (ret_call)
        *ret_call = k;
    buf_done(&b);
    return 0;
fail:
    if (k)
        call_free(k);
    free(body);
    buf_done(&b);
    return r;
}

int etcd_member_list(struct etcd_client *c, const struct etcd_endpoint *ep, etcd_done_fn done,
                     void *userdata, struct etcd_call **ret_call, struct err *e)
{
    char *body = strdup("{\"linearizable\":true}");

    if (!body)
        return -ENOMEM;
    return call_start(c, ep, CALL_MEMBERS, "/v3/cluster/member/list", body, done, userdata,
                      ret_call, e);
}

int etcd_member_add(struct etcd_client *c, const struct etcd_endpoint *ep,
                    const char *const *peer_urls, size_t n_peer_urls, bool is_learner,
                    etcd_done_fn done, void *userdata, struct etcd_call **ret_call, struct err *e)
{
    char *body;
    int r = etcd_json_add_body(peer_urls, n_peer_urls, is_learner, &body, e);

    if (r < 0)
        return r;
    return call_start(c, ep, CALL_MEMBERS, "/v3/cluster/member/add", body, done, userdata, ret_call,
                      e);
}

static int id_call(struct etcd_client *c, const struct etcd_endpoint *ep, const char *path,
                   uint64_t id, etcd_done_fn done, void *userdata, struct etcd_call **ret_call,
                   struct err *e)
{
    char *body;
    int r;

    if (id == 0)
        return err_set(e, -EINVAL, "etcd %s: member ID 0", path);
    r = etcd_json_id_body(id, &body);
    if (r < 0)
        return r;
    return call_start(c, ep, CALL_MEMBERS, path, body, done, userdata, ret_call, e);
}

int etcd_member_promote(struct etcd_client *c, const struct etcd_endpoint *ep, uint64_t id,
                        etcd_done_fn done, void *userdata, struct etcd_call **ret_call,
                        struct err *e)
{
    return id_call(c, ep, "/v3/cluster/member/promote", id, done, userdata, ret_call, e);
}

int etcd_member_remove(struct etcd_client *c, const struct etcd_endpoint *ep, uint64_t id,
                       etcd_done_fn done, void *userdata, struct etcd_call **ret_call,
                       struct err *e)
{
    return id_call(c, ep, "/v3/cluster/member/remove", id, done, userdata, ret_call, e);
}

int etcd_status_get(struct etcd_client *c, const struct etcd_endpoint *ep, etcd_done_fn done,
                    void *userdata, struct etcd_call **ret_call, struct err *e)
{
    char *body = strdup("{}");

    if (!body)
        return -ENOMEM;
    return call_start(c, ep, CALL_STATUS, "/v3/maintenance/status", body, done, userdata, ret_call,
                      e);
}

int etcd_health_get(struct etcd_client *c, const struct etcd_endpoint *ep, etcd_done_fn done,
                    void *userdata, struct etcd_call **ret_call, struct err *e)
{
    return call_start(c, ep, CALL_HEALTH, "/health", NULL, done, userdata, ret_call, e);
}
