#include "lib/kube/scrape.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "lib/kube/status.h"
#include "lib/kube/transport.h"

struct kube_scrape {
    struct kube_xfer x;
    kube_scrape_line_fn line;
    kube_scrape_done_fn done;
    void *userdata;
    char *url;
    struct curl_slist *resolve;
    char *ca, *cert, *key;
    struct curl_blob ca_blob, cert_blob, key_blob;
    char buf[KUBE_SCRAPE_LINE_MAX];
    size_t len;    /* bytes of the current line in buf */
    bool overlong; /* the current line passed the bound: skipped to its newline */
    long read;     /* body bytes so far */
    bool too_big;
    char errbuf[CURL_ERROR_SIZE];
};

static char *pem_dup(const char *pem, struct curl_blob *blob)
{
    char *p = strdup(pem);

    if (p)
        *blob = (struct curl_blob){p, strlen(p), CURL_BLOB_NOCOPY};
    return p;
}

static void scrape_free(struct kube_scrape *s)
{
    if (s->x.easy)
        curl_easy_cleanup(s->x.easy);
    curl_slist_free_all(s->resolve);
    free(s->url);
    free(s->ca);
    free(s->cert);
    if (s->key) {
        OPENSSL_cleanse(s->key, strlen(s->key));
        free(s->key);
    }
    free(s);
}

static void hand_on(struct kube_scrape *s)
{
    if (!s->overlong)
        s->line(s->userdata, s->buf, s->len);
    s->len = 0;
    s->overlong = false;
}

static size_t on_write(char *p, size_t size, size_t n, void *userdata)
{
    struct kube_scrape *s = userdata;
    size_t total = size * n;

    if (kube_xfer_closing(&s->x))
        return 0;
    s->read += (long)total;
    if (s->read > KUBE_SCRAPE_BODY_MAX) {
        s->too_big = true;
        return 0;
    }
    for (size_t i = 0; i < total; i++) {
        if (p[i] == '\n') {
            hand_on(s);
        } else if (s->len < sizeof(s->buf)) {
            s->buf[s->len++] = p[i];
        } else {
            s->overlong = true;
        }
    }
    return total;
}

/* As lib/kube's codes, and a server that failed verification says so. */
static int curl_code(CURLcode rc)
{
    return rc == CURLE_PEER_FAILED_VERIFICATION ? -EKEYREJECTED : kube_curl_code(rc);
}

static void on_done(struct kube_xfer *x, CURLcode rc)
{
    struct kube_scrape *s = kube_container_of(x, struct kube_scrape, x);
    char msg[CURL_ERROR_SIZE + 64];
    long http = 0;
    int code = 0;

    if (rc != CURLE_OK) {
        code = rc == CURLE_WRITE_ERROR && s->too_big ? -EFBIG : curl_code(rc);
        snprintf(msg, sizeof(msg), "%s",
                 code == -EFBIG ? "answer larger than its bound"
                 : s->errbuf[0] ? s->errbuf
                                : curl_easy_strerror(rc));
    } else {
        curl_easy_getinfo(s->x.easy, CURLINFO_RESPONSE_CODE, &http);
        if (http < 200 || http > 299) {
            code = -EPROTO;
            snprintf(msg, sizeof(msg), "HTTP %ld", http);
        } else {
            if (s->len > 0)
                hand_on(s); /* a last line without a newline */
            snprintf(msg, sizeof(msg), "HTTP %ld", http);
        }
    }
    s->done(s->userdata, code, http, msg);
    scrape_free(s);
}

static void scrape_closed(struct kube_xfer *x)
{
    scrape_free(kube_container_of(x, struct kube_scrape, x));
}

void kube_scrape_cancel(struct kube_scrape *s)
{
    if (!s || kube_xfer_closing(&s->x))
        return;
    s->done(s->userdata, -ECANCELED, 0, "cancelled");
    kube_transport_close(&s->x, scrape_closed);
}

static bool host_ok(const char *h)
{
    size_t n = strlen(h);

    if (n == 0 || n > 253 || h[0] == '.' || h[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= '0' && h[i] <= '9') || h[i] == '-' ||
              h[i] == '.'))
            return false;
    return true;
}

int kube_scrape_start(struct kube_transport *t, const struct kube_scrape_target *tg,
                      kube_scrape_line_fn line, kube_scrape_done_fn done, void *userdata,
                      struct kube_scrape **ret_scrape)
{
    struct kube_scrape *s = NULL;
    unsigned char addr[16];
    char text[600];
    bool v6 = false;
    CURL *easy;
    int r = -EINVAL;

    if (!t || !tg || !line || !done || !tg->host || !host_ok(tg->host) || !tg->path ||
        tg->path[0] != '/' || tg->port < 1 || tg->port > 65535 || !tg->ca_pem || !tg->cert_pem ||
        !tg->key_pem)
        return -EINVAL;
    if (tg->ip) {
        v6 = inet_pton(AF_INET6, tg->ip, addr) == 1;
        if (!v6 && inet_pton(AF_INET, tg->ip, addr) != 1)
            return -EINVAL;
    }
    r = -ENOMEM;
    if (!(s = calloc(1, sizeof(*s))))
        return r;
    s->line = line;
    s->done = done;
    s->userdata = userdata;
    if (!(s->ca = pem_dup(tg->ca_pem, &s->ca_blob)) ||
        !(s->cert = pem_dup(tg->cert_pem, &s->cert_blob)) ||
        !(s->key = pem_dup(tg->key_pem, &s->key_blob)))
        goto fail;
    if (snprintf(text, sizeof(text), "https://%s:%d%s", tg->host, tg->port, tg->path) >=
        (int)sizeof(text)) {
        r = -EINVAL;
        goto fail;
    }
    if (!(s->url = strdup(text)))
        goto fail;
    if (tg->ip) {
        snprintf(text, sizeof(text), v6 ? "%s:%d:[%s]" : "%s:%d:%s", tg->host, tg->port, tg->ip);
        if (!(s->resolve = curl_slist_append(NULL, text)))
            goto fail;
    }
    if (!(easy = s->x.easy = curl_easy_init()))
        goto fail;
    curl_easy_setopt(easy, CURLOPT_URL, s->url);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "https");
    if (s->resolve)
        curl_easy_setopt(easy, CURLOPT_RESOLVE, s->resolve);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
    /* Only the given CA: no bundle or directory of the system's. */
    curl_easy_setopt(easy, CURLOPT_CAINFO, NULL);
    curl_easy_setopt(easy, CURLOPT_CAPATH, NULL);
    curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &s->ca_blob);
    curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &s->cert_blob);
    curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &s->key_blob);
    curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, tg->timeout_ms > 0 ? tg->timeout_ms : 5000L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "nestcp");
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, s->errbuf);
    s->x.done = on_done;
    if ((r = kube_transport_add(t, &s->x)) < 0)
        goto fail;
    if (ret_scrape)
        *ret_scrape = s;
    return 0;
fail:
    scrape_free(s);
    return r;
}
