#ifndef NESTCP_UTIL_HTTPD_H
#define NESTCP_UTIL_HTTPD_H

/*
 * A tiny HTTP/1.1 server on a libev loop, for metrics and health probes: GET and HEAD only,
 * one request per connection (answered with Connection: close), no request bodies; plain
 * HTTP, or HTTPS through an OpenSSL server context the caller configures.
 *
 * Bounds: request headers up to max_header bytes (431 past that), at most max_connections
 * open at once (further ones are closed on accept), and a connection that has not completed
 * its TLS handshake, delivered its request, been answered and taken its response within
 * idle_timeout seconds is closed.
 *
 * The handler runs on the loop and fills the response synchronously, or defers it: it sets
 * resp->deferred, keeps req->id, and answers later with httpd_complete() (after asking
 * another server, say). A deferred connection that the idle timeout closes first is gone;
 * httpd_complete then says so.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/util/buf.h"
#include "lib/util/err.h"

struct ev_loop;
struct httpd;
struct ssl_ctx_st; /* OpenSSL's SSL_CTX */

struct httpd_request {
    const char *method;        /* "GET" or "HEAD" */
    const char *path;          /* without the query string */
    const char *query;         /* after '?', or "" */
    const char *authorization; /* the Authorization header's value, or NULL */
    uint64_t id;               /* names the connection for httpd_complete */
};

struct httpd_response {
    int status;               /* 200 unless the handler sets it */
    const char *content_type; /* static string; NULL: text/plain; charset=utf-8 */
    struct buf body;          /* capped at HTTPD_BODY_MAX */
    bool deferred;            /* set by the handler: it answers later (httpd_complete) */
};

typedef void (*httpd_handler_fn)(void *userdata, const struct httpd_request *req,
                                 struct httpd_response *resp);

struct httpd_opts {
    size_t max_header;   /* 0: 8192 */
    int max_connections; /* 0: 64 */
    double idle_timeout; /* seconds; 0: 10 */
    /* HTTPS with this server context (certificate, key, protocol versions set by the caller;
     * borrowed, it must outlive the server); NULL: plain HTTP. */
    struct ssl_ctx_st *tls;
};

#define HTTPD_BODY_MAX ((size_t)32 << 20)

/* Parses a listen address: "host:port", ":port" (every interface), "[v6]:port"; host is a
 * numeric address or "localhost"; port 0 asks for a free one. Returns 0 or -EINVAL (detail
 * in e). */
int httpd_parse_address(const char *address, struct sockaddr_storage *ret_addr, socklen_t *ret_len,
                        struct err *e);

/* Listens on address and serves requests with handler (borrowed, with userdata).
 * opts may be NULL. Returns 0, -EINVAL (bad address), or the socket error (-EADDRINUSE, ...),
 * with detail in e. */
int httpd_new(struct ev_loop *loop, const char *address, const struct httpd_opts *opts,
              httpd_handler_fn handler, void *userdata, struct httpd **ret_httpd, struct err *e);

/* Answers the deferred request id with status, content_type (static string, or NULL) and body
 * (may be NULL). Returns 0, or -ENOENT when that connection is gone (closed by the client or
 * the idle timeout) or was not waiting. */
int httpd_complete(struct httpd *h, uint64_t id, int status, const char *content_type,
                   const struct buf *body);

/* Whether address ("host:port") names a loopback host: 127.0.0.0/8, ::1 or localhost. */
bool httpd_address_is_loopback(const char *address);

/* The port listened on (useful after asking for port 0). */
int httpd_port(const struct httpd *h);

/* Closes the listener and every connection. Accepts NULL. */
void httpd_free(struct httpd *h);

#endif
