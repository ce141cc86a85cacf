/* The fault-injecting TLS + HTTP/2 proxy of kube_faultproxy.h. Test code: it favours being
 * easy to follow over being fast. One acceptor thread; one thread per client connection, which
 * runs the connection's nghttp2 server session over non-blocking OpenSSL and forwards each
 * stream through a libcurl multi handle of its own, waiting on both with curl_multi_poll. */

#include "test/support/kube_faultproxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "lib/kube/config.h"
#include "lib/pki/cert.h"
#include "lib/util/buf.h"
#include "lib/util/strutil.h"

#define POLL_MS 50
#define HANDSHAKE_SECONDS 10.0
#define REQUEST_BODY_MAX (8u << 20)
#define LOG_MAX 100000

struct rule {
    struct kfp_rule r; /* strings point at the copies below */
    char *match[KFP_MATCH_MAX];
    char *retry_after, *body, *line;
    struct rule *next;
};

struct kconn;

struct kfp {
    struct kube_config *upstream;
    char *ca_pem;                   /* the CA clients trust */
    char *other_ca_pem;             /* the CA of KFP_CERT_UNKNOWN_CA */
    char *cert_pem[5], *key_pem[5]; /* by enum kfp_cert */
    int listen_fd;
    int port;
    atomic_bool stop;
    bool curl_ready; /* curl_global_init done */
    pthread_t acceptor;
    pthread_mutex_t lock; /* everything below */
    struct rule *rules;
    enum kfp_cert cert;
    bool blackhole;
    int next_conn_id;
    int stall_below; /* connections with a smaller id are stalled */
    int reset_below; /* connections with a smaller id are to be reset */
    struct kconn *conns;
    char **log;
    double *log_time; /* time_mono() of each request */
    int nlog;
    struct kfp_stats stats;
    char tls_error[256];
    char bookmark_rv[64];
};

struct kstream;

struct kconn {
    struct kfp *p;
    int id;
    int fd;
    SSL *ssl;
    nghttp2_session *h2;
    CURLM *multi;
    struct kstream *streams;
    struct buf out; /* bytes for the client not yet written */
    bool reset_now;
    bool served; /* counted in stats.open */
    pthread_t thread;
    struct kconn *next;
};

struct kstream {
    struct kconn *k;
    int32_t id;
    struct buf head; /* "METHOD path" */
    char method[16];
    char ctype[128];
    struct buf body; /* the request body */
    CURL *easy;
    struct curl_slist *hdrs;
    struct buf resp; /* response bytes not yet handed to nghttp2 */
    size_t resp_off;
    struct buf line; /* a watch line not yet complete */
    bool is_watch;
    bool submitted;     /* response headers submitted */
    bool upstream_done; /* no more response bytes will come */
    bool has_rule;
    struct kfp_rule rule; /* a streaming rule bound to this stream (match strings not kept) */
    char *rule_line;      /* the rule's line, copied */
    bool injected;        /* the rule's fault has been applied */
    bool resetting;       /* a reset is under way: forward nothing more */
    bool hold;            /* the response is rewritten once complete (KFP_FUTURE_RV) */
    unsigned long events;
    struct kstream *next;
};

/* ---- small helpers ---- */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void rule_free(struct rule *r)
{
    for (int i = 0; i < KFP_MATCH_MAX; i++)
        free(r->match[i]);
    free(r->retry_after);
    free(r->body);
    free(r->line);
    free(r);
}

int kfp_add_rule(struct kfp *p, const struct kfp_rule *in)
{
    struct rule *r = calloc(1, sizeof(*r)), **tail;

    if (!r)
        return -ENOMEM;
    r->r = *in;
    for (int i = 0; i < KFP_MATCH_MAX; i++) {
        r->match[i] = dup_or_null(in->match[i]);
        r->r.match[i] = r->match[i];
    }
    r->retry_after = dup_or_null(in->retry_after);
    r->body = dup_or_null(in->body);
    r->line = dup_or_null(in->line);
    r->r.retry_after = r->retry_after;
    r->r.body = r->body;
    r->r.line = r->line;
    pthread_mutex_lock(&p->lock);
    for (tail = &p->rules; *tail; tail = &(*tail)->next)
        ;
    *tail = r;
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void kfp_clear_rules(struct kfp *p)
{
    pthread_mutex_lock(&p->lock);
    while (p->rules) {
        struct rule *r = p->rules;

        p->rules = r->next;
        rule_free(r);
    }
    pthread_mutex_unlock(&p->lock);
}

int kfp_rules_armed(struct kfp *p)
{
    int n = 0;

    pthread_mutex_lock(&p->lock);
    for (struct rule *r = p->rules; r; r = r->next)
        n += r->r.count != 0;
    pthread_mutex_unlock(&p->lock);
    return n;
}

static bool rule_matches(const struct kfp_rule *r, const char *line)
{
    for (int i = 0; i < KFP_MATCH_MAX; i++)
        if (r->match[i] && !strstr(line, r->match[i]))
            return false;
    return true;
}

/* Logs the request and finds the rule for it (copied into ret, strings borrowed from the rule,
 * which stays allocated until kfp_clear_rules or kfp_stop: tests clear rules only between
 * scenarios, when no stream uses them). */
static bool take_rule(struct kfp *p, const char *line, struct kfp_rule *ret)
{
    bool found = false;

    pthread_mutex_lock(&p->lock);
    p->stats.requests++;
    if (p->nlog < LOG_MAX) {
        char **log = realloc(p->log, sizeof(*log) * (size_t)(p->nlog + 1));
        double *times = realloc(p->log_time, sizeof(*times) * (size_t)(p->nlog + 1));

        if (log)
            p->log = log;
        if (times)
            p->log_time = times;
        if (log && times) {
            p->log[p->nlog] = strdup(line);
            p->log_time[p->nlog] = time_mono();
            if (p->log[p->nlog])
                p->nlog++;
        }
    }
    for (struct rule *r = p->rules; r; r = r->next) {
        if (r->r.count == 0 || !rule_matches(&r->r, line))
            continue;
        if (r->r.count > 0)
            r->r.count--;
        *ret = r->r;
        found = true;
        break;
    }
    pthread_mutex_unlock(&p->lock);
    return found;
}

static void count_injected(struct kfp *p)
{
    pthread_mutex_lock(&p->lock);
    p->stats.injected++;
    pthread_mutex_unlock(&p->lock);
}

/* ---- TLS ---- */

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    /* h2 only: the client under test must speak what it speaks to a real API server. */
    for (unsigned int i = 0; i + 1 <= inlen; i += 1u + in[i]) {
        if (in[i] == 2 && i + 3 <= inlen && memcmp(in + i + 1, "h2", 2) == 0) {
            *out = in + i + 1;
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static SSL_CTX *make_ctx(const char *cert_pem, const char *key_pem)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
    X509 *cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
    bool ok = ctx && cert && key && SSL_CTX_use_certificate(ctx, cert) == 1 &&
              SSL_CTX_use_PrivateKey(ctx, key) == 1;

    if (ok) {
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cb);
    BIO_free(kb);
    if (!ok) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static int issue(const char *ca_cert, const char *ca_key, const char *cn, const char *san1,
                 const char *san2, bool is_ca, int64_t now, int64_t validity, char **ret_cert,
                 char **ret_key)
{
    struct pki_cert_spec spec;
    struct err e;
    int r;

    pki_cert_spec_init(&spec);
    spec.is_ca = is_ca;
    spec.ext_usage = PKI_EKU_SERVER_AUTH;
    spec.now = now;
    spec.validity = validity;
    r = pki_cert_spec_set_cn(&spec, cn, &e);
    if (r == 0 && san1)
        r = pki_cert_spec_add_san(&spec, san1, &e);
    if (r == 0 && san2)
        r = pki_cert_spec_add_san(&spec, san2, &e);
    if (r == 0)
        r = pki_cert_issue(ca_cert, ca_key, &spec, ret_cert, ret_key, &e);
    pki_cert_spec_done(&spec);
    return r;
}

/* The CA and one certificate of each kind. */
static int make_certs(struct kfp *p)
{
    char *ca_key = NULL, *other_ca = NULL, *other_key = NULL;
    int64_t day = 24 * 3600, now = (int64_t)time_wall();
    int r;

    r = issue(NULL, NULL, "kfp-ca", NULL, NULL, true, 0, 0, &p->ca_pem, &ca_key);
    if (r == 0)
        r = issue(NULL, NULL, "kfp-unknown-ca", NULL, NULL, true, 0, 0, &other_ca, &other_key);
    if (r == 0)
        r = issue(p->ca_pem, ca_key, "kfp", "127.0.0.1", "localhost", false, 0, 0,
                  &p->cert_pem[KFP_CERT_GOOD], &p->key_pem[KFP_CERT_GOOD]);
    if (r == 0)
        r = issue(p->ca_pem, ca_key, "kfp", "127.0.0.1", "localhost", false, 0, 0,
                  &p->cert_pem[KFP_CERT_REISSUED], &p->key_pem[KFP_CERT_REISSUED]);
    if (r == 0)
        r = issue(other_ca, other_key, "kfp", "127.0.0.1", "localhost", false, 0, 0,
                  &p->cert_pem[KFP_CERT_UNKNOWN_CA], &p->key_pem[KFP_CERT_UNKNOWN_CA]);
    if (r == 0)
        r = issue(p->ca_pem, ca_key, "kfp", "elsewhere.example", "127.0.0.2", false, 0, 0,
                  &p->cert_pem[KFP_CERT_WRONG_NAME], &p->key_pem[KFP_CERT_WRONG_NAME]);
    if (r == 0)
        r = issue(p->ca_pem, ca_key, "kfp", "127.0.0.1", "localhost", false, now - 2 * day, day,
                  &p->cert_pem[KFP_CERT_EXPIRED], &p->key_pem[KFP_CERT_EXPIRED]);
    free(ca_key);
    p->other_ca_pem = other_ca;
    free(other_key);
    return r;
}

/* Completes the server handshake on the non-blocking socket; false when it failed. */
static bool handshake(struct kconn *k, SSL_CTX *ctx)
{
    struct kfp *p = k->p;
    double end = time_mono() + HANDSHAKE_SECONDS;
    const unsigned char *alpn = NULL;
    unsigned int alpn_len = 0;
    unsigned long e;

    k->ssl = SSL_new(ctx);
    if (!k->ssl || SSL_set_fd(k->ssl, k->fd) != 1)
        return false;
    ERR_clear_error();
    for (;;) {
        int r = SSL_accept(k->ssl), err;
        struct pollfd pfd = {.fd = k->fd};

        if (r == 1)
            break;
        err = SSL_get_error(k->ssl, r);
        if (err == SSL_ERROR_WANT_READ)
            pfd.events = POLLIN;
        else if (err == SSL_ERROR_WANT_WRITE)
            pfd.events = POLLOUT;
        else
            goto fail;
        if (atomic_load(&p->stop) || time_mono() > end)
            goto fail;
        poll(&pfd, 1, POLL_MS);
    }
    SSL_get0_alpn_selected(k->ssl, &alpn, &alpn_len);
    if (alpn_len != 2 || memcmp(alpn, "h2", 2) != 0)
        goto fail;
    pthread_mutex_lock(&p->lock);
    p->stats.handshakes++;
    pthread_mutex_unlock(&p->lock);
    return true;
fail:
    e = ERR_peek_last_error();
    pthread_mutex_lock(&p->lock);
    p->stats.tls_failures++;
    if (e && ERR_reason_error_string(e))
        snprintf(p->tls_error, sizeof(p->tls_error), "%s", ERR_reason_error_string(e));
    else
        snprintf(p->tls_error, sizeof(p->tls_error), "handshake did not complete");
    pthread_mutex_unlock(&p->lock);
    return false;
}

/* ---- streams ---- */

static void stream_free(struct kstream *s)
{
    struct kstream **pp;

    for (pp = &s->k->streams; *pp && *pp != s; pp = &(*pp)->next)
        ;
    if (*pp)
        *pp = s->next;
    if (s->easy) {
        curl_multi_remove_handle(s->k->multi, s->easy);
        curl_easy_cleanup(s->easy);
    }
    curl_slist_free_all(s->hdrs);
    free(s->rule_line);
    buf_done(&s->head);
    buf_done(&s->body);
    buf_done(&s->resp);
    buf_done(&s->line);
    free(s);
}

static ssize_t data_read(nghttp2_session *h2, int32_t sid, uint8_t *out, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    struct kstream *s = src->ptr;
    size_t avail = s->resp.len - s->resp_off;

    if (s->hold && !s->upstream_done)
        return NGHTTP2_ERR_DEFERRED;
    if (avail == 0) {
        if (s->upstream_done) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            return 0;
        }
        return NGHTTP2_ERR_DEFERRED;
    }
    if (len > avail)
        len = avail;
    memcpy(out, s->resp.data + s->resp_off, len);
    s->resp_off += len;
    if (s->resp_off == s->resp.len) {
        buf_reset(&s->resp);
        s->resp_off = 0;
    }
    return (ssize_t)len;
}

static void submit(struct kstream *s, int status, const char *ctype, const char *retry_after)
{
    char code[8];
    nghttp2_nv nv[3];
    size_t n = 0;
    nghttp2_data_provider prd = {.source.ptr = s, .read_callback = data_read};

#define NV(name, value)                                                                            \
    (nghttp2_nv){(uint8_t *)(name), (uint8_t *)(value), strlen(name), strlen(value),               \
                 NGHTTP2_NV_FLAG_NONE}
    snprintf(code, sizeof(code), "%d", status);
    nv[n++] = NV(":status", code);
    nv[n++] = NV("content-type", ctype && ctype[0] ? ctype : "application/json");
    if (retry_after)
        nv[n++] = NV("retry-after", retry_after);
#undef NV
    nghttp2_submit_response(s->k->h2, s->id, nv, n, &prd);
    s->submitted = true;
}

static const char *reason_for(int status)
{
    switch (status) {
    case 410:
        return "Expired";
    case 429:
        return "TooManyRequests";
    case 500:
        return "InternalError";
    case 503:
        return "ServiceUnavailable";
    case 504:
        return "Timeout";
    default:
        return "BadRequest";
    }
}

static void reply(struct kstream *s, const struct kfp_rule *r)
{
    if (r->body) {
        buf_puts(&s->resp, r->body);
    } else {
        buf_printf(&s->resp,
                   "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                   "\"Failure\",\"message\":\"injected by the fault proxy\",\"reason\":\"%s\","
                   "\"code\":%d}",
                   reason_for(r->status), r->status);
    }
    s->upstream_done = true;
    submit(s, r->status, "application/json", r->retry_after);
    count_injected(s->k->p);
}

/* One complete watch line (without its newline) on its way to the client. */
static void watch_line(struct kstream *s, const char *line, size_t len)
{
    struct kfp *p = s->k->p;
    bool bookmark = false;
    cJSON *ev = cJSON_ParseWithLength(line, len);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");

    if (cJSON_IsString(type) && strcmp(type->valuestring, "BOOKMARK") == 0) {
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(ev, "object"), "metadata");
        const cJSON *rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");

        bookmark = true;
        if (cJSON_IsString(rv) && !(s->has_rule && s->rule.action == KFP_DROP_BOOKMARKS)) {
            pthread_mutex_lock(&p->lock);
            snprintf(p->bookmark_rv, sizeof(p->bookmark_rv), "%s", rv->valuestring);
            pthread_mutex_unlock(&p->lock);
        }
    }
    cJSON_Delete(ev);
    if (s->has_rule && s->rule.action == KFP_INJECT_LINE && !s->injected &&
        s->events == s->rule.after) {
        buf_printf(&s->resp, "%s\n", s->rule_line ? s->rule_line : "");
        s->injected = true;
        count_injected(p);
    }
    if (bookmark && s->has_rule && s->rule.action == KFP_DROP_BOOKMARKS) {
        count_injected(p);
        return;
    }
    buf_append(&s->resp, line, len);
    buf_puts(&s->resp, "\n");
    s->events++;
}

/* The reset rules, once enough events passed. */
static void watch_faults(struct kstream *s)
{
    if (!s->has_rule || s->injected || s->events < s->rule.after)
        return;
    if (s->rule.action == KFP_RESET_STREAM) {
        s->injected = s->resetting = true;
        count_injected(s->k->p);
        nghttp2_submit_rst_stream(s->k->h2, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
    } else if (s->rule.action == KFP_RESET_CONNECTION) {
        s->injected = s->resetting = true;
        count_injected(s->k->p);
        s->k->reset_now = true;
    }
}

static size_t upstream_write(char *data, size_t size, size_t n, void *ud)
{
    struct kstream *s = ud;
    size_t len = size * n;

    if (!s->submitted) {
        long status = 0;
        char *ctype = NULL;

        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(s->easy, CURLINFO_CONTENT_TYPE, &ctype);
        submit(s, (int)status, ctype, NULL);
    }
    if (s->resetting)
        return CURL_WRITEFUNC_ERROR; /* the stream is being reset: stop the upstream one */
    if (!s->is_watch) {
        buf_append(&s->resp, data, len);
    } else {
        const char *p = data, *end = data + len, *nl;

        watch_faults(s); /* a reset after 0 events */
        while (!s->resetting && (nl = memchr(p, '\n', (size_t)(end - p)))) {
            buf_append(&s->line, p, (size_t)(nl - p));
            watch_line(s, s->line.data ? s->line.data : "", s->line.len);
            buf_reset(&s->line);
            watch_faults(s);
            p = nl + 1;
        }
        if (!s->resetting)
            buf_append(&s->line, p, (size_t)(end - p));
    }
    nghttp2_session_resume_data(s->k->h2, s->id);
    return len;
}

/* The request is complete: answer it from a rule or forward it. */
static void start_request(struct kstream *s)
{
    struct kconn *k = s->k;
    const struct kube_config *u = k->p->upstream;
    const char *line = s->head.data ? s->head.data : "";
    const char *path = strchr(line, ' ');
    struct kfp_rule r;
    struct buf url;
    char hdr[160];

    s->is_watch = strstr(line, "watch=1") || strstr(line, "watch=true");
    if (take_rule(k->p, line, &r)) {
        if (r.action == KFP_REPLY) {
            reply(s, &r);
            return;
        }
        s->has_rule = true;
        s->rule = r;
        memset(s->rule.match, 0, sizeof(s->rule.match));
        s->rule.body = s->rule.retry_after = s->rule.line = NULL;
        s->rule_line = dup_or_null(r.line);
        s->hold = r.action == KFP_FUTURE_RV && !s->is_watch;
    }
    buf_init(&url, 0);
    buf_printf(&url, "%s%s", u->server, path ? path + 1 : "/");
    s->easy = curl_easy_init();
    curl_easy_setopt(s->easy, CURLOPT_URL, url.data);
    buf_done(&url);
    curl_easy_setopt(s->easy, CURLOPT_CUSTOMREQUEST, s->method);
    if (u->ca_pem) {
        struct curl_blob ca = {u->ca_pem, u->ca_len, CURL_BLOB_COPY};

        curl_easy_setopt(s->easy, CURLOPT_CAINFO_BLOB, &ca);
    }
    if (u->cert_pem && u->key_pem) {
        struct curl_blob cert = {u->cert_pem, u->cert_len, CURL_BLOB_COPY};
        struct curl_blob key = {u->key_pem, u->key_len, CURL_BLOB_COPY};

        curl_easy_setopt(s->easy, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(s->easy, CURLOPT_SSLKEY_BLOB, &key);
    }
    if (u->token) {
        snprintf(hdr, sizeof(hdr), "Authorization: Bearer %.120s", u->token);
        s->hdrs = curl_slist_append(s->hdrs, hdr);
    }
    if (s->ctype[0]) {
        snprintf(hdr, sizeof(hdr), "Content-Type: %s", s->ctype);
        s->hdrs = curl_slist_append(s->hdrs, hdr);
    }
    s->hdrs = curl_slist_append(s->hdrs, "Accept: application/json");
    s->hdrs = curl_slist_append(s->hdrs, "Expect:");
    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, s->hdrs);
    if (s->body.len) {
        curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->body.len);
        curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->body.data);
    }
    curl_easy_setopt(s->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(s->easy, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, upstream_write);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, (char *)s);
    curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
    curl_multi_add_handle(k->multi, s->easy);
}

/* KFP_FUTURE_RV: moves the complete list's resourceVersion ahead. */
static void future_rv(struct kstream *s)
{
    cJSON *list = cJSON_ParseWithLength(s->resp.data ? s->resp.data : "", s->resp.len);
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(list, "metadata");
    cJSON *rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");
    char *text;
    char moved[32];

    if (cJSON_IsString(rv)) {
        snprintf(moved, sizeof(moved), "%llu",
                 strtoull(rv->valuestring, NULL, 10) + (unsigned long long)s->rule.after);
        cJSON_ReplaceItemInObjectCaseSensitive(meta, "resourceVersion", cJSON_CreateString(moved));
        text = cJSON_PrintUnformatted(list);
        if (text) {
            buf_reset(&s->resp);
            s->resp_off = 0;
            buf_puts(&s->resp, text);
            free(text);
            count_injected(s->k->p);
        }
    }
    cJSON_Delete(list);
}

/* Upstream transfers that finished. */
static void reap(struct kconn *k)
{
    CURLMsg *m;
    int left;

    while ((m = curl_multi_info_read(k->multi, &left))) {
        struct kstream *s = NULL;
        CURLcode rc = m->data.result;
        CURL *easy = m->easy_handle;
        long status = 0;

        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&s);
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        curl_multi_remove_handle(k->multi, easy);
        curl_easy_cleanup(easy);
        s->easy = NULL;
        if (s->resetting)
            continue; /* the reset is on its way */
        s->upstream_done = true;
        if (!s->submitted) {
            submit(s, rc == CURLE_OK ? (int)status : 502, NULL, NULL);
        } else if (rc != CURLE_OK) {
            /* The upstream stream broke mid-way: the client must not see a clean end. */
            nghttp2_submit_rst_stream(k->h2, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
            continue;
        }
        if (s->line.len) /* a last watch line without its newline */
            buf_append(&s->resp, s->line.data, s->line.len);
        if (s->hold)
            future_rv(s);
        nghttp2_session_resume_data(k->h2, s->id);
    }
}

/* ---- nghttp2 callbacks ---- */

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *f, void *ud)
{
    struct kconn *k = ud;
    struct kstream *s;

    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    s = calloc(1, sizeof(*s));
    if (!s)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    s->k = k;
    s->id = f->hd.stream_id;
    buf_init(&s->head, 16384);
    buf_init(&s->body, REQUEST_BODY_MAX);
    buf_init(&s->resp, 0);
    buf_init(&s->line, 0);
    s->next = k->streams;
    k->streams = s;
    nghttp2_session_set_stream_user_data(h2, s->id, s);
    return 0;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    struct kstream *s = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
    struct buf *h;

    if (!s)
        return 0;
    h = &s->head;
    if (namelen == 7 && memcmp(name, ":method", 7) == 0) {
        snprintf(s->method, sizeof(s->method), "%.*s", (int)valuelen, value);
    } else if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
        buf_reset(h);
        buf_append(h, value, valuelen);
    } else if (namelen == 12 && memcmp(name, "content-type", 12) == 0) {
        snprintf(s->ctype, sizeof(s->ctype), "%.*s", (int)valuelen, value);
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t sid, const uint8_t *data,
                         size_t len, void *ud)
{
    struct kstream *s = nghttp2_session_get_stream_user_data(h2, sid);

    if (s && buf_append(&s->body, data, len) < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return 0;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f, void *ud)
{
    struct kstream *s;
    struct buf line;

    if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
        !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    s = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
    if (!s)
        return 0;
    /* "METHOD path" is what rules match and what the log keeps. */
    buf_init(&line, 0);
    buf_printf(&line, "%s %s", s->method, s->head.data ? s->head.data : "/");
    buf_done(&s->head);
    s->head = line;
    start_request(s);
    return 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t sid, uint32_t code, void *ud)
{
    struct kstream *s = nghttp2_session_get_stream_user_data(h2, sid);

    if (s)
        stream_free(s);
    return 0;
}

/* ---- the connection ---- */

/* Reads the controls that apply to this connection; true when it is stalled. */
static bool check_controls(struct kconn *k)
{
    struct kfp *p = k->p;
    bool st;

    pthread_mutex_lock(&p->lock);
    st = k->id < p->stall_below;
    if (k->id < p->reset_below)
        k->reset_now = true;
    pthread_mutex_unlock(&p->lock);
    return st;
}

static void set_served(struct kconn *k, bool on)
{
    if (k->served == on)
        return;
    pthread_mutex_lock(&k->p->lock);
    k->p->stats.open += on ? 1 : -1;
    pthread_mutex_unlock(&k->p->lock);
    k->served = on;
}

/* Reads what the client sent; false when the connection is over. */
static bool read_client(struct kconn *k)
{
    uint8_t in[16384];

    for (;;) {
        int n = SSL_read(k->ssl, in, sizeof(in)), err;

        if (n > 0) {
            if (nghttp2_session_mem_recv(k->h2, in, (size_t)n) < 0)
                return false;
            continue;
        }
        err = SSL_get_error(k->ssl, n);
        return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
    }
}

/* Writes what nghttp2 has for the client; false on a write error. */
static bool flush_client(struct kconn *k)
{
    for (;;) {
        const uint8_t *data;
        ssize_t n;

        while (k->out.len) {
            int w = SSL_write(k->ssl, k->out.data, (int)k->out.len), err;

            if (w > 0) {
                buf_consume(&k->out, (size_t)w);
                continue;
            }
            err = SSL_get_error(k->ssl, w);
            return err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ;
        }
        n = nghttp2_session_mem_send(k->h2, &data);
        if (n < 0)
            return false;
        if (n == 0)
            return true;
        if (buf_append(&k->out, data, (size_t)n) < 0)
            return false;
    }
}

static void reset_tcp(struct kconn *k)
{
    struct linger l = {.l_onoff = 1, .l_linger = 0};

    setsockopt(k->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close(k->fd);
    k->fd = -1;
}

static void serve(struct kconn *k)
{
    nghttp2_session_callbacks *cb;
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}};

    if (nghttp2_session_callbacks_new(&cb) != 0)
        return;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    if (nghttp2_session_server_new(&k->h2, cb, k) != 0) {
        nghttp2_session_callbacks_del(cb);
        return;
    }
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(k->h2, NGHTTP2_FLAG_NONE, settings, 1);
    k->multi = curl_multi_init();
    curl_multi_setopt(k->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    set_served(k, true);
    while (!atomic_load(&k->p->stop)) {
        struct curl_waitfd w = {.fd = k->fd, .events = CURL_WAIT_POLLIN};
        int running;

        if (check_controls(k)) {
            /* A black hole: nothing read, nothing written, nothing closed. */
            set_served(k, false);
            poll(NULL, 0, POLL_MS);
            continue;
        }
        if (k->reset_now) {
            reset_tcp(k);
            break;
        }
        if (!flush_client(k))
            break;
        if (k->out.len)
            w.events |= CURL_WAIT_POLLOUT;
        curl_multi_poll(k->multi, &w, 1, POLL_MS, NULL);
        if (!read_client(k))
            break;
        curl_multi_perform(k->multi, &running);
        reap(k);
        if (k->reset_now) {
            reset_tcp(k);
            break;
        }
        if (!flush_client(k))
            break;
        if (!nghttp2_session_want_read(k->h2) && !nghttp2_session_want_write(k->h2) && !k->out.len)
            break;
    }
    set_served(k, false);
    while (k->streams)
        stream_free(k->streams);
    nghttp2_session_del(k->h2);
    curl_multi_cleanup(k->multi);
}

static void *conn_main(void *arg)
{
    struct kconn *k = arg;
    struct kfp *p = k->p;
    SSL_CTX *ctx;
    enum kfp_cert cert;
    bool hole;

    pthread_mutex_lock(&p->lock);
    cert = p->cert;
    hole = p->blackhole;
    pthread_mutex_unlock(&p->lock);
    if (hole) {
        while (!atomic_load(&p->stop))
            poll(NULL, 0, POLL_MS);
        goto out;
    }
    fcntl(k->fd, F_SETFL, fcntl(k->fd, F_GETFL) | O_NONBLOCK);
    ctx = make_ctx(p->cert_pem[cert], p->key_pem[cert]);
    if (ctx && handshake(k, ctx))
        serve(k);
    SSL_CTX_free(ctx);
out:
    if (k->ssl)
        SSL_free(k->ssl);
    k->ssl = NULL;
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    buf_done(&k->out);
    return NULL;
}

static void *accept_main(void *arg)
{
    struct kfp *p = arg;

    while (!atomic_load(&p->stop)) {
        struct pollfd pfd = {.fd = p->listen_fd, .events = POLLIN};
        struct kconn *k;
        int fd;

        if (poll(&pfd, 1, POLL_MS) <= 0)
            continue;
        fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        k = calloc(1, sizeof(*k));
        if (!k) {
            close(fd);
            continue;
        }
        k->p = p;
        k->fd = fd;
        buf_init(&k->out, 0);
        pthread_mutex_lock(&p->lock);
        k->id = p->next_conn_id++;
        p->stats.connections++;
        if (pthread_create(&k->thread, NULL, conn_main, k) == 0) {
            k->next = p->conns;
            p->conns = k;
        } else {
            close(fd);
            free(k);
        }
        pthread_mutex_unlock(&p->lock);
    }
    return NULL;
}

/* ---- the public side ---- */

int kfp_start(const struct kube_config *upstream, struct kfp **ret_proxy)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    struct kfp *p = calloc(1, sizeof(*p));
    int r = -ENOMEM;

    if (!p)
        return -ENOMEM;
    /* OpenSSL writes with write(2): a client gone mid-answer must be EPIPE, not a signal. */
    signal(SIGPIPE, SIG_IGN);
    p->listen_fd = -1;
    pthread_mutex_init(&p->lock, NULL);
    p->upstream = kube_config_dup(upstream);
    if (!p->upstream)
        goto fail;
    r = make_certs(p);
    if (r < 0)
        goto fail;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        r = -EIO;
        goto fail;
    }
    p->curl_ready = true;
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(p->listen_fd, 64) < 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &len) < 0) {
        r = -errno;
        goto fail;
    }
    p->port = ntohs(a.sin_port);
    if (pthread_create(&p->acceptor, NULL, accept_main, p) != 0) {
        r = -EAGAIN;
        goto fail;
    }
    *ret_proxy = p;
    return 0;
fail:
    if (p->listen_fd >= 0)
        close(p->listen_fd);
    if (p->curl_ready)
        curl_global_cleanup();
    kube_config_free(p->upstream);
    free(p->ca_pem);
    free(p->other_ca_pem);
    for (int i = 0; i < 5; i++) {
        free(p->cert_pem[i]);
        free(p->key_pem[i]);
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
    return r;
}

void kfp_stop(struct kfp *p)
{
    if (!p)
        return;
    atomic_store(&p->stop, true);
    pthread_join(p->acceptor, NULL);
    while (p->conns) {
        struct kconn *k = p->conns;

        p->conns = k->next;
        pthread_join(k->thread, NULL);
        free(k);
    }
    close(p->listen_fd);
    kfp_clear_rules(p);
    for (int i = 0; i < p->nlog; i++)
        free(p->log[i]);
    free(p->log);
    free(p->log_time);
    kube_config_free(p->upstream);
    free(p->ca_pem);
    free(p->other_ca_pem);
    for (int i = 0; i < 5; i++) {
        free(p->cert_pem[i]);
        free(p->key_pem[i]);
    }
    pthread_mutex_destroy(&p->lock);
    curl_global_cleanup();
    free(p);
}

struct kube_config *kfp_client_config(const struct kfp *p)
{
    struct kube_config *cfg = kube_config_dup(p->upstream);
    char url[64];

    if (!cfg)
        return NULL;
    snprintf(url, sizeof(url), "https://127.0.0.1:%d", p->port);
    free(cfg->server);
    free(cfg->ca_pem);
    cfg->server = strdup(url);
    cfg->ca_pem = strdup(p->ca_pem);
    cfg->ca_len = cfg->ca_pem ? strlen(cfg->ca_pem) : 0;
    if (!cfg->server || !cfg->ca_pem) {
        kube_config_free(cfg);
        return NULL;
    }
    return cfg;
}

int kfp_port(const struct kfp *p)
{
    return p->port;
}

const char *kfp_ca(const struct kfp *p, enum kfp_cert cert)
{
    return cert == KFP_CERT_UNKNOWN_CA ? p->other_ca_pem : p->ca_pem;
}

void kfp_stall(struct kfp *p)
{
    pthread_mutex_lock(&p->lock);
    p->stall_below = p->next_conn_id;
    pthread_mutex_unlock(&p->lock);
}

void kfp_blackhole(struct kfp *p, bool on)
{
    pthread_mutex_lock(&p->lock);
    p->blackhole = on;
    pthread_mutex_unlock(&p->lock);
}

void kfp_reset_connections(struct kfp *p)
{
    pthread_mutex_lock(&p->lock);
    p->reset_below = p->next_conn_id;
    pthread_mutex_unlock(&p->lock);
}

void kfp_set_cert(struct kfp *p, enum kfp_cert cert)
{
    pthread_mutex_lock(&p->lock);
    p->cert = cert;
    pthread_mutex_unlock(&p->lock);
}

void kfp_get_stats(struct kfp *p, struct kfp_stats *ret)
{
    pthread_mutex_lock(&p->lock);
    *ret = p->stats;
    pthread_mutex_unlock(&p->lock);
}

void kfp_last_tls_error(struct kfp *p, char *buf, size_t len)
{
    pthread_mutex_lock(&p->lock);
    snprintf(buf, len, "%s", p->tls_error);
    pthread_mutex_unlock(&p->lock);
}

bool kfp_request_line(struct kfp *p, int i, char *buf, size_t len)
{
    bool ok;

    pthread_mutex_lock(&p->lock);
    ok = i >= 0 && i < p->nlog;
    if (ok)
        snprintf(buf, len, "%s", p->log[i]);
    pthread_mutex_unlock(&p->lock);
    return ok;
}

double kfp_request_time(struct kfp *p, int i)
{
    double t = 0;

    pthread_mutex_lock(&p->lock);
    if (i >= 0 && i < p->nlog)
        t = p->log_time[i];
    pthread_mutex_unlock(&p->lock);
    return t;
}

int kfp_count(struct kfp *p, int from, const char *s1, const char *s2)
{
    int n = 0;

    pthread_mutex_lock(&p->lock);
    for (int i = from < 0 ? 0 : from; i < p->nlog; i++)
        n += (!s1 || strstr(p->log[i], s1)) && (!s2 || strstr(p->log[i], s2));
    pthread_mutex_unlock(&p->lock);
    return n;
}

void kfp_last_bookmark_rv(struct kfp *p, char *buf, size_t len)
{
    pthread_mutex_lock(&p->lock);
    snprintf(buf, len, "%s", p->bookmark_rv);
    pthread_mutex_unlock(&p->lock);
}
