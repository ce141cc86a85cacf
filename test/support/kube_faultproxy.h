#ifndef NESTCP_TEST_SUPPORT_KUBE_FAULTPROXY_H
#define NESTCP_TEST_SUPPORT_KUBE_FAULTPROXY_H

/*
 * A fault-injecting HTTP proxy on loopback, for tests only: the client under test speaks plain
 * HTTP to it (a test-only http:// server URL, see kube_config.allow_plain_http), and it forwards
 * to the real API server over verified TLS with the kubeconfig's credentials, except for the
 * requests it is told to fail:
 *   - the first n429 requests get 429 with Retry-After: 1;
 *   - with expire_continue, the first list request carrying a continue token gets 410 Expired;
 *   - with expire_watch, the first watch request gets HTTP 410 Expired.
 * Responses are streamed back chunked, so watches work through it. One thread per connection.
 * Header-only so tests that link only nestcp_kube can use it; needs <cmocka.h> first.
 */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include "lib/kube/config.h"
#include "lib/util/buf.h"

#define KFP_MAX_CONNS 256

struct kfp {
    const struct kube_config *upstream;
    int listen_fd;
    int port;
    atomic_bool stop;
    atomic_int requests;   /* requests received */
    atomic_int n429;       /* 429s still to hand out */
    atomic_bool expire_continue;
    atomic_bool expire_watch;
    atomic_int injected;   /* faults handed out */
    pthread_t acceptor;
    pthread_mutex_t lock;
    pthread_t conns[KFP_MAX_CONNS];
    int nconns;
};

struct kfp_conn {
    struct kfp *p;
    int fd;
    CURL *easy;
    bool headers_sent;
};

static bool kfp_send_all(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

        if (n <= 0)
            return false;
        data += n;
        len -= (size_t)n;
    }
    return true;
}

static void kfp_reply(int fd, int status, const char *reason, const char *extra_header,
                      const char *body)
{
    char head[512];

    snprintf(head, sizeof(head),
             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n",
             status, reason, extra_header, strlen(body));
    kfp_send_all(fd, head, strlen(head));
    kfp_send_all(fd, body, strlen(body));
}

static bool kfp_chunk(struct kfp_conn *k, const char *data, size_t len)
{
    char size[32];

    snprintf(size, sizeof(size), "%zx\r\n", len);
    return kfp_send_all(k->fd, size, strlen(size)) && kfp_send_all(k->fd, data, len) &&
           kfp_send_all(k->fd, "\r\n", 2);
}

static void kfp_send_headers(struct kfp_conn *k, CURL *easy)
{
    char head[512];
    long status = 0;
    char *ctype = NULL;

    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(easy, CURLINFO_CONTENT_TYPE, &ctype);
    snprintf(head, sizeof(head),
             "HTTP/1.1 %ld X\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n"
             "Connection: close\r\n\r\n",
             status, ctype ? ctype : "application/json");
    kfp_send_all(k->fd, head, strlen(head));
    k->headers_sent = true;
}

static size_t kfp_write(char *data, size_t size, size_t n, void *ud)
{
    struct kfp_conn *k = ud;

    if (atomic_load(&k->p->stop))
        return 0;
    if (!k->headers_sent)
        kfp_send_headers(k, k->easy);
    return kfp_chunk(k, data, size * n) ? size * n : 0;
}

static int kfp_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    struct kfp_conn *k = ud;

    return atomic_load(&k->p->stop) ? 1 : 0;
}

/* Reads one request; returns false on a broken connection. */
static bool kfp_read_request(int fd, struct buf *req, size_t *ret_head_len, size_t *ret_body_len)
{
    char chunk[4096];
    char *end;

    for (;;) {
        ssize_t n;

        if ((end = strstr(req->data ? req->data : "", "\r\n\r\n"))) {
            size_t head = (size_t)(end - req->data) + 4, body = 0;
            const char *cl = strcasestr(req->data, "\r\nContent-Length:");

            if (cl && cl < end)
                body = strtoul(cl + strlen("\r\nContent-Length:"), NULL, 10);
            while (req->len < head + body) {
                n = recv(fd, chunk, sizeof(chunk), 0);
                if (n <= 0 || buf_append(req, chunk, (size_t)n) < 0)
                    return false;
            }
            *ret_head_len = head;
            *ret_body_len = body;
            return true;
        }
        n = recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0 || buf_append(req, chunk, (size_t)n) < 0)
            return false;
    }
}

static void *kfp_serve(void *arg)
{
    struct kfp_conn *k = arg;
    struct kfp *p = k->p;
    struct buf req;
    size_t head_len = 0, body_len = 0;
    char method[16] = "", path[4096] = "", url[4400], hdr[256];
    struct curl_slist *headers = NULL;
    const char *ctype;
    CURL *easy;

    buf_init(&req, 8u << 20);
    if (!kfp_read_request(k->fd, &req, &head_len, &body_len) ||
        sscanf(req.data, "%15s %4095s", method, path) != 2)
        goto out;
    atomic_fetch_add(&p->requests, 1);
    if (atomic_load(&p->n429) > 0 && atomic_fetch_sub(&p->n429, 1) > 0) {
        atomic_fetch_add(&p->injected, 1);
        kfp_reply(k->fd, 429, "Too Many Requests", "Retry-After: 1\r\n",
                  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
                  "\"too many requests, please try again later\",\"reason\":\"TooManyRequests\","
                  "\"details\":{\"retryAfterSeconds\":1},\"code\":429}");
        goto out;
    }
    if ((strstr(path, "continue=") && atomic_exchange(&p->expire_continue, false)) ||
        (strstr(path, "watch=1") && atomic_exchange(&p->expire_watch, false))) {
        atomic_fetch_add(&p->injected, 1);
        kfp_reply(k->fd, 410, "Gone", "",
                  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
                  "\"The provided continue parameter is too old\",\"reason\":\"Expired\","
                  "\"code\":410}");
        goto out;
    }

    easy = k->easy = curl_easy_init();
    snprintf(url, sizeof(url), "%s%s", p->upstream->server, path);
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method);
    if (p->upstream->ca_pem) {
        struct curl_blob ca = {p->upstream->ca_pem, p->upstream->ca_len, CURL_BLOB_COPY};

        curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &ca);
    }
    if (p->upstream->cert_pem) {
        struct curl_blob cert = {p->upstream->cert_pem, p->upstream->cert_len, CURL_BLOB_COPY};
        struct curl_blob key = {p->upstream->key_pem, p->upstream->key_len, CURL_BLOB_COPY};

        curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &key);
    }
    ctype = strcasestr(req.data, "\r\nContent-Type:");
    if (ctype && ctype < req.data + head_len) {
        const char *v = ctype + 2, *eol = strstr(v, "\r\n");

        snprintf(hdr, sizeof(hdr), "%.*s", (int)(eol - v), v);
        headers = curl_slist_append(headers, hdr);
    }
    headers = curl_slist_append(headers, "Accept: application/json");
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    if (body_len) {
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)body_len);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, req.data + head_len);
    }
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, kfp_write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, k);
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, kfp_progress);
    curl_easy_setopt(easy, CURLOPT_XFERINFODATA, k);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    k->headers_sent = false;
    if (curl_easy_perform(easy) == CURLE_OK || k->headers_sent) {
        if (!k->headers_sent)
            kfp_send_headers(k, easy);
        kfp_send_all(k->fd, "0\r\n\r\n", 5);
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(easy);
out:
    buf_done(&req);
    close(k->fd);
    free(k);
    return NULL;
}

static void *kfp_accept(void *arg)
{
    struct kfp *p = arg;

    while (!atomic_load(&p->stop)) {
        struct pollfd pfd = {.fd = p->listen_fd, .events = POLLIN};
        struct kfp_conn *k;
        int fd;

        if (poll(&pfd, 1, 100) <= 0)
            continue;
        fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        k = calloc(1, sizeof(*k));
        k->p = p;
        k->fd = fd;
        pthread_mutex_lock(&p->lock);
        if (p->nconns < KFP_MAX_CONNS &&
            pthread_create(&p->conns[p->nconns], NULL, kfp_serve, k) == 0) {
            p->nconns++;
        } else {
            close(fd);
            free(k);
        }
        pthread_mutex_unlock(&p->lock);
    }
    return NULL;
}

/* Starts the proxy in front of upstream (borrowed until kfp_stop). */
static inline void kfp_start(struct kfp *p, const struct kube_config *upstream)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);

    memset(p, 0, sizeof(*p));
    p->upstream = upstream;
    pthread_mutex_init(&p->lock, NULL);
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(p->listen_fd >= 0);
    assert_int_equal(bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(p->listen_fd, 64), 0);
    assert_int_equal(getsockname(p->listen_fd, (struct sockaddr *)&a, &len), 0);
    p->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&p->acceptor, NULL, kfp_accept, p), 0);
}

static inline void kfp_stop(struct kfp *p)
{
    atomic_store(&p->stop, true);
    pthread_join(p->acceptor, NULL);
    for (int i = 0; i < p->nconns; i++)
        pthread_join(p->conns[i], NULL);
    close(p->listen_fd);
    pthread_mutex_destroy(&p->lock);
}

/* A copy of upstream that points at the proxy (test-only plain HTTP on loopback). */
static inline struct kube_config *kfp_client_config(const struct kfp *p)
{
    struct kube_config *cfg = kube_config_dup(p->upstream);
    char url[64];

    assert_non_null(cfg);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", p->port);
    free(cfg->server);
    cfg->server = strdup(url);
    cfg->allow_plain_http = true;
    return cfg;
}

#endif
