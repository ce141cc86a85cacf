#include "lib/ctrl/httpserver.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "lib/ctrl/manager.h"
#include "lib/ctrl/metrics.h"
#include "lib/kube/client.h"
#include "lib/kube/status.h"
#include "lib/pki/tls.h"
#include "lib/util/httpd.h"
#include "lib/util/list.h"
#include "lib/util/log.h"
#include "lib/util/yamlconv.h"

/* A review that takes longer than this is answered 500 (well within httpd's idle timeout). */
#define REVIEW_TIMEOUT_MS 5000
/* Bound on a bearer token (a projected ServiceAccount token is about 1 KiB). */
#define TOKEN_MAX 4096

struct review;

struct httpserver {
    struct manager *m;
    struct kube_client *client;
    struct httpd *metrics, *health; /* health is NULL when metrics serves both */
    SSL_CTX *tls;                   /* NULL: plain metrics */
    bool shared;
    struct list_node reviews; /* scrapes waiting on the API server (struct review) */
};

/* One scrape being authenticated, then authorised. */
struct review {
    struct httpserver *s;
    uint64_t id; /* the connection waiting for the answer */
    struct kube_call *call;
    char *user;            /* the authenticated user's name, for the answer and the log */
    struct list_node link; /* in the server's reviews */
};

static const char metrics_path[] = "/metrics";

/* ---- answers ---- */

static void render_metrics(struct httpserver *s, struct buf *body, int *ret_status,
                           const char **ret_type)
{
    int r = metrics_render(manager_metrics(s->m), body);

    if (r < 0) {
        log_error("cannot render metrics", "error=%s", err_code_name(r));
        buf_reset(body);
        *ret_status = 500;
        buf_puts(body, "cannot render metrics\n");
        return;
    }
    *ret_status = 200;
    *ret_type = METRICS_CONTENT_TYPE;
}

static bool serve_health(struct httpserver *s, const struct httpd_request *req,
                         struct httpd_response *resp)
{
    if (strcmp(req->path, "/healthz") == 0 || strcmp(req->path, "/livez") == 0) {
        buf_puts(&resp->body, "ok\n");
        return true;
    }
    if (strcmp(req->path, "/readyz") == 0) {
        if (manager_synced(s->m)) {
            buf_puts(&resp->body, "ok\n");
        } else {
            resp->status = 503;
            buf_puts(&resp->body, "caches not synced\n");
        }
        return true;
    }
    return false;
}

static void not_found(struct httpd_response *resp)
{
    resp->status = 404;
    buf_puts(&resp->body, "not found\n");
}

/* ---- reviews ---- */

static void review_free(struct review *rv)
{
    list_remove(&rv->link);
    free(rv->user);
    free(rv);
}

/* Answers the scrape and forgets the review. */
static void review_finish(struct review *rv, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void review_finish(struct review *rv, int status, const char *fmt, ...)
{
    struct buf body = BUF_INIT;
    const char *type = NULL;
    va_list ap;

    buf_init(&body, HTTPD_BODY_MAX);
    if (status == 200) {
        render_metrics(rv->s, &body, &status, &type);
    } else {
        char msg[512];
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        buf_printf(&body, "%s\n", msg);
    }
    /* -ENOENT: the client went away, or its connection timed out; nothing to answer. */
    httpd_complete(rv->s->metrics, rv->id, status, type, &body);
    buf_done(&body);
    review_free(rv);
}

static const cJSON *at(const cJSON *o, const char *a, const char *b)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);
}

static void authorized(void *userdata, const struct kube_result *res)
{
    struct review *rv = userdata;

    rv->call = NULL;
    if (res->code == -ECANCELED) {
        review_free(rv);
        return;
    }
    if (res->code < 0) {
        log_warn("metrics: SubjectAccessReview failed", "user=%s error=%s message=%s", rv->user,
                 kube_code_name(res->code), res->message);
        review_finish(rv, 500, "Authorization for user %s failed", rv->user);
        return;
    }
    if (!cJSON_IsTrue(at(res->body, "status", "allowed"))) {
        log_debug("metrics: scrape denied", "user=%s", rv->user);
        review_finish(rv, 403, "Authorization denied for user %s", rv->user);
        return;
    }
    review_finish(rv, 200, "%s", "");
}

/* The SubjectAccessReview of user (a TokenReview's status.user) getting /metrics. */
static cJSON *access_review(const cJSON *user)
{
    cJSON *sar = cJSON_CreateObject(), *spec, *nr;
    static const char *const fields[][2] = {
        {"username", "user"}, {"uid", "uid"}, {"groups", "groups"}, {"extra", "extra"}};

    if (!sar)
        return NULL;
    cJSON_AddStringToObject(sar, "apiVersion", "authorization.k8s.io/v1");
    cJSON_AddStringToObject(sar, "kind", "SubjectAccessReview");
    spec = cJSON_AddObjectToObject(sar, "spec");
    for (size_t i = 0; spec && i < sizeof(fields) / sizeof(*fields); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(user, fields[i][0]);
        if (v)
            cJSON_AddItemToObject(spec, fields[i][1], cJSON_Duplicate(v, true));
    }
    nr = spec ? cJSON_AddObjectToObject(spec, "nonResourceAttributes") : NULL;
    if (!nr || !cJSON_AddStringToObject(nr, "path", metrics_path) ||
        !cJSON_AddStringToObject(nr, "verb", "get")) {
        cJSON_Delete(sar);
        return NULL;
    }
    return sar;
}

static void authenticated(void *userdata, const struct kube_result *res)
{
    struct review *rv = userdata;
    const cJSON *user = at(res->body, "status", "user");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(user, "username");
    struct kube_request req = {.verb = KUBE_CREATE,
                               .resource = &KUBE_SUBJECTACCESSREVIEWS,
                               .timeout_ms = REVIEW_TIMEOUT_MS};
    cJSON *sar;
    int r;

    rv->call = NULL;
    if (res->code == -ECANCELED) {
        review_free(rv);
        return;
    }
    if (res->code < 0) {
        log_warn("metrics: TokenReview failed", "error=%s message=%s", kube_code_name(res->code),
                 res->message);
        review_finish(rv, 401, "Unauthorized");
        return;
    }
    if (!cJSON_IsTrue(at(res->body, "status", "authenticated")) || !cJSON_IsString(name)) {
        log_debug("metrics: token not authenticated", "%s", "");
        review_finish(rv, 401, "Unauthorized");
        return;
    }
    rv->user = strdup(name->valuestring);
    sar = access_review(user);
    if (!rv->user || !sar) {
        cJSON_Delete(sar);
        review_finish(rv, 500, "out of memory");
        return;
    }
    req.body = sar;
    r = kube_request_start(rv->s->client, &req, authorized, rv, &rv->call);
    cJSON_Delete(sar);
    if (r < 0)
        review_finish(rv, 500, "Authorization for user %s failed", rv->user);
}

/* The token of an "Authorization: Bearer <token>" header, or NULL. */
static const char *bearer_token(const char *authorization)
{
    const char *t;

    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return NULL;
    t = authorization + 7;
    while (*t == ' ')
        t++;
    return *t && strlen(t) <= TOKEN_MAX ? t : NULL;
}

/* A scrape of the secure endpoint: TokenReview, then SubjectAccessReview, then the metrics;
 * answered later through httpd_complete. */
static void start_review(struct httpserver *s, const struct httpd_request *req,
                         struct httpd_response *resp)
{
    const char *token = bearer_token(req->authorization);
    struct kube_request kr = {
        .verb = KUBE_CREATE, .resource = &KUBE_TOKENREVIEWS, .timeout_ms = REVIEW_TIMEOUT_MS};
    struct review *rv;
    cJSON *tr, *spec;
    int r;

    if (!token) {
        resp->status = 401;
        buf_puts(&resp->body, "Unauthorized\n");
        return;
    }
    rv = calloc(1, sizeof(*rv));
    tr = cJSON_CreateObject();
    spec = tr ? cJSON_AddObjectToObject(tr, "spec") : NULL;
    if (!rv || !spec || !cJSON_AddStringToObject(tr, "apiVersion", "authentication.k8s.io/v1") ||
        !cJSON_AddStringToObject(tr, "kind", "TokenReview") ||
        !cJSON_AddStringToObject(spec, "token", token)) {
        free(rv);
        cJSON_Delete(tr);
        resp->status = 500;
        buf_puts(&resp->body, "out of memory\n");
        return;
    }
    rv->s = s;
    rv->id = req->id;
    kr.body = tr;
    r = kube_request_start(s->client, &kr, authenticated, rv, &rv->call);
    /* The request body was serialised: wipe the token from the tree before it goes. */
    {
        cJSON *t = cJSON_GetObjectItemCaseSensitive(spec, "token");
        OPENSSL_cleanse(t->valuestring, strlen(t->valuestring));
    }
    cJSON_Delete(tr);
    if (r < 0) {
        free(rv);
        resp->status = 500;
        buf_puts(&resp->body, "cannot review the token\n");
        return;
    }
    list_add_head(&s->reviews, &rv->link);
    resp->deferred = true;
}

/* ---- handlers ---- */

static void on_metrics(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
    struct httpserver *s = userdata;

    if (strcmp(req->path, metrics_path) == 0) {
        if (s->tls)
            start_review(s, req, resp);
        else
            render_metrics(s, &resp->body, &resp->status, &resp->content_type);
        return;
    }
    if (!(s->shared && serve_health(s, req, resp)))
        not_found(resp);
}

static void on_health(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
    if (!serve_health(userdata, req, resp))
        not_found(resp);
}

/* ---- set-up ---- */

static bool enabled(const char *address)
{
    return address && address[0] && strcmp(address, "0") != 0;
}

static void key_free(char *pem)
{
    if (pem) {
        OPENSSL_cleanse(pem, strlen(pem));
        free(pem);
    }
}

/* The serving context: the pair in cert_dir, else a self-signed one for this host. */
static int metrics_tls(const char *cert_dir, SSL_CTX **ret_ctx, struct err *e)
{
    char host[256] = "localhost", what[4200], cert[4200], key[4200];
    const char *names[] = {"localhost", "127.0.0.1", "::1", host};
    char *chain = NULL, *key_pem = NULL;
    int r;

    if (cert_dir && cert_dir[0]) {
        snprintf(what, sizeof(what), "--metrics-cert-dir %s", cert_dir);
        if ((size_t)snprintf(cert, sizeof(cert), "%s/%s", cert_dir, HTTPSERVER_CERT_FILE) >=
                sizeof(cert) ||
            (size_t)snprintf(key, sizeof(key), "%s/%s", cert_dir, HTTPSERVER_KEY_FILE) >=
                sizeof(key))
            return err_set(e, -EINVAL, "%s: path too long", what);
        if ((r = util_read_file(cert, 1 << 20, &chain, NULL)) < 0)
            return err_set(e, -EINVAL, "%s: cannot read %s: %s", what, cert, strerror(-r));
        if ((r = util_read_file(key, 1 << 20, &key_pem, NULL)) < 0) {
            free(chain);
            return err_set(e, -EINVAL, "%s: cannot read %s: %s", what, key, strerror(-r));
        }
    } else {
        snprintf(what, sizeof(what), "self-signed metrics certificate");
        if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
            snprintf(host, sizeof(host), "localhost");
        r = pki_tls_self_signed(names, 4, 0, &chain, &key_pem, e);
        if (r < 0 && strcmp(host, "localhost") != 0) /* a hostname that is no DNS name */
            r = pki_tls_self_signed(names, 3, 0, &chain, &key_pem, e);
        if (r < 0)
            return r;
    }
    r = pki_tls_server_ctx(chain, key_pem, what, ret_ctx, e);
    free(chain);
    key_free(key_pem);
    return r;
}

int httpserver_start(struct ev_loop *loop, struct manager *m, const struct httpserver_opts *opts,
                     struct httpserver **ret_server, struct err *e)
{
    struct httpserver *s = calloc(1, sizeof(*s));
    struct httpd_opts mo = {0};
    bool metrics = enabled(opts->metrics_address), health = enabled(opts->health_address);
    int r = 0;

    if (!s)
        return err_set(e, -ENOMEM, "http server: out of memory");
    list_init(&s->reviews);
    s->m = m;
    s->client = opts->client;
    /* Secure metrics never share the health probes' plain listener. */
    s->shared = metrics && health && opts->metrics_insecure &&
                strcmp(opts->metrics_address, opts->health_address) == 0;
    if (metrics && opts->metrics_insecure && !httpd_address_is_loopback(opts->metrics_address))
        r = err_set(e, -EINVAL,
                    "--metrics-bind-address %s: plain, unauthenticated metrics "
                    "(--metrics-secure=false) are served only on a loopback address",
                    opts->metrics_address);
    else if (metrics && !opts->metrics_insecure && !opts->client)
        r = err_set(e, -EINVAL, "secure metrics need an API client for the reviews");
    else if (metrics && !opts->metrics_insecure)
        r = metrics_tls(opts->metrics_cert_dir, &s->tls, e);
    mo.tls = s->tls;
    if (r == 0 && metrics)
        r = httpd_new(loop, opts->metrics_address, &mo, on_metrics, s, &s->metrics, e);
    if (r == 0 && health && !s->shared)
        r = httpd_new(loop, opts->health_address, NULL, on_health, s, &s->health, e);
    if (r < 0) {
        httpserver_free(s);
        return r;
    }
    *ret_server = s;
    return 0;
}

int httpserver_metrics_port(const struct httpserver *s)
{
    return s->metrics ? httpd_port(s->metrics) : 0;
}

int httpserver_health_port(const struct httpserver *s)
{
    if (s->shared)
        return httpd_port(s->metrics);
    return s->health ? httpd_port(s->health) : 0;
}

void httpserver_free(struct httpserver *s)
{
    if (!s)
        return;
    /* Each cancel runs the review's callback, which frees it. */
    while (!list_empty(&s->reviews)) {
        struct review *rv = list_entry(list_first(&s->reviews), struct review, link);
        if (rv->call)
            kube_call_cancel(rv->call);
        else
            review_free(rv);
    }
    httpd_free(s->metrics);
    httpd_free(s->health);
    SSL_CTX_free(s->tls);
    free(s);
}
