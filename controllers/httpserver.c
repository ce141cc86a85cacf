#include "controllers/httpserver.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/metrics.h"
#include "controllers/runtime.h"
#include "lib/util/httpd.h"
#include "lib/util/log.h"

struct httpserver {
    struct manager *m;
    struct httpd *metrics, *health; /* health is NULL when metrics serves both */
    bool shared;
};

static bool serve_metrics(struct httpserver *s, const struct httpd_request *req,
                          struct httpd_response *resp)
{
    int r;

    if (strcmp(req->path, "/metrics") != 0)
        return false;
    r = metrics_render(manager_metrics(s->m), &resp->body);
    if (r < 0) {
        log_error("cannot render metrics", "error=%s", err_code_name(r));
        buf_reset(&resp->body);
        resp->status = 500;
        buf_puts(&resp->body, "cannot render metrics\n");
        return true;
    }
    resp->content_type = METRICS_CONTENT_TYPE;
    return true;
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

static void on_metrics(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
    struct httpserver *s = userdata;

    if (!serve_metrics(s, req, resp) && !(s->shared && serve_health(s, req, resp)))
        not_found(resp);
}

static void on_health(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
    if (!serve_health(userdata, req, resp))
        not_found(resp);
}

static bool enabled(const char *address)
{
    return address && address[0] && strcmp(address, "0") != 0;
}

int httpserver_start(struct ev_loop *loop, struct manager *m, const struct httpserver_opts *opts,
                     struct httpserver **ret_server, struct err *e)
{
    struct httpserver *s = calloc(1, sizeof(*s));
    int r = 0;

    if (!s)
        return err_set(e, -ENOMEM, "http server: out of memory");
    s->m = m;
    s->shared = enabled(opts->metrics_address) && enabled(opts->health_address) &&
                strcmp(opts->metrics_address, opts->health_address) == 0;
    if (enabled(opts->metrics_address))
        r = httpd_new(loop, opts->metrics_address, NULL, on_metrics, s, &s->metrics, e);
    if (r == 0 && enabled(opts->health_address) && !s->shared)
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
    httpd_free(s->metrics);
    httpd_free(s->health);
    free(s);
}
