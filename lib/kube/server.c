/* The API server as a client reaches it: URLs, TLS material and credentials (server.h). */

#include "lib/kube/server.h"

#include <errno.h>
#include <string.h>

#include "lib/kube/config.h"
#include "lib/util/strutil.h"

#define CONNECT_TIMEOUT_MS 10000L

/* True for an http:// URL whose host is a loopback address. */
static bool is_loopback_http(const char *server)
{
    static const char *const ok[] = {"http://127.", "http://localhost:", "http://localhost/",
                                     "http://[::1]"};

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (str_has_prefix(server, ok[i]))
            return true;
    return false;
}

int kube_server_init(struct kube_server *s, const struct kube_config *cfg, struct err *e)
{
    if (!cfg || !cfg->server)
        return err_set(e, -EINVAL, "kube client: no server configured");
    if (!str_has_prefix(cfg->server, "https://") &&
        !(cfg->allow_plain_http && is_loopback_http(cfg->server)))
        return err_set(e, -EINVAL, "kube client: server %s: only https:// is supported",
                       cfg->server);
    *s = (struct kube_server){0};
    s->cfg = kube_config_dup(cfg);
    if (!s->cfg)
        return -ENOMEM;
    /* Copied into each transfer: the bundle may be replaced (kube_config_ca) while a transfer
     * set up with the old one has not connected yet. */
    s->ca = (struct curl_blob){s->cfg->ca_pem, s->cfg->ca_len, CURL_BLOB_COPY};
    s->cert = (struct curl_blob){s->cfg->cert_pem, s->cfg->cert_len, CURL_BLOB_NOCOPY};
    s->key = (struct curl_blob){s->cfg->key_pem, s->cfg->key_len, CURL_BLOB_NOCOPY};
    return 0;
}

void kube_server_done(struct kube_server *s)
{
    kube_config_free(s->cfg);
    s->cfg = NULL;
}

/* Percent-encodes everything but RFC 3986 unreserved characters. */
static int append_escaped(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int r;

        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            r = buf_append(b, s, 1);
        } else {
            char enc[3] = {'%', hex[ch >> 4], hex[ch & 15]};

            r = buf_append(b, enc, 3);
        }
        if (r < 0)
            return r;
    }
    return 0;
}

int kube_query_add(struct buf *q, const char *key, const char *value)
{
    if (buf_puts(q, q->len ? "&" : "?") < 0 || buf_puts(q, key) < 0 || buf_puts(q, "=") < 0)
        return -ENOMEM;
    return append_escaped(q, value);
}

int kube_server_url(const struct kube_server *s, const struct kube_resource *res, const char *ns,
                    const char *name, const char *subresource, const struct buf *query,
                    struct buf *out)
{
    int r;

    r = buf_puts(out, s->cfg->server);
    if (r == 0)
        r = res->group && res->group[0] ? buf_printf(out, "/apis/%s/%s", res->group, res->version)
                                        : buf_printf(out, "/api/%s", res->version);
    if (r == 0 && res->namespaced && ns && ns[0]) {
        r = buf_puts(out, "/namespaces/");
        if (r == 0)
            r = append_escaped(out, ns);
    }
    if (r == 0)
        r = buf_printf(out, "/%s", res->resource);
    if (r == 0 && name) {
        r = buf_puts(out, "/");
        if (r == 0)
            r = append_escaped(out, name);
    }
    if (r == 0 && subresource) {
        r = buf_puts(out, "/");
        if (r == 0)
            r = append_escaped(out, subresource);
    }
    if (r == 0 && query && query->len)
        r = buf_append(out, query->data, query->len);
    return r;
}

int kube_server_setup_easy(struct kube_server *s, CURL *easy, const char *content_type,
                           struct curl_slist **ret_headers)
{
    struct curl_slist *h = NULL, *n;
    const char *token = NULL;
    struct buf b;
    int r;

    r = kube_config_token(s->cfg, &token, NULL);
    if (r < 0 && !token)
        return r;
    /* A rotated CA file is picked up by the next connection; connections open now keep the
     * CA they were verified with. A file that does not parse leaves the working CA in place. */
    r = kube_config_ca(s->cfg, NULL);
    if (r > 0) {
        s->ca_reloads++;
        s->ca = (struct curl_blob){s->cfg->ca_pem, s->cfg->ca_len, CURL_BLOB_COPY};
    } else if (r < 0) {
        s->ca_errors++;
    }
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR,
                     s->cfg->allow_plain_http ? "http,https" : "https");
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
    if (s->ca.data)
        curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &s->ca);
    if (s->cert.data && s->key.data) {
        curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &s->cert);
        curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &s->key);
        curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    }
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, NULL);

    buf_init(&b, 0);
    if (!(n = curl_slist_append(h, "Accept: application/json")))
        goto oom;
    h = n;
    if (!(n = curl_slist_append(h, "User-Agent: nestcp")))
        goto oom;
    h = n;
    if (!(n = curl_slist_append(h, "Expect:")))
        goto oom;
    h = n;
    if (content_type) {
        if (buf_printf(&b, "Content-Type: %s", content_type) < 0)
            goto oom;
        if (!(n = curl_slist_append(h, b.data)))
            goto oom;
        h = n;
        buf_reset(&b);
    }
    if (token) {
        if (buf_printf(&b, "Authorization: Bearer %s", token) < 0)
            goto oom;
        n = curl_slist_append(h, b.data);
        explicit_bzero(b.data, b.len);
        if (!n)
            goto oom;
        h = n;
    }
    buf_done(&b);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, h);
    *ret_headers = h;
    return 0;
oom:
    if (b.data)
        explicit_bzero(b.data, b.len);
    buf_done(&b);
    curl_slist_free_all(h);
    return -ENOMEM;
}
