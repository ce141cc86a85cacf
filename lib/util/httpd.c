#include "lib/util/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ev.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "lib/util/list.h"
#include "lib/util/strutil.h"

enum conn_state {
    CONN_HANDSHAKE, /* TLS: the server's side of the handshake */
    CONN_READ,      /* reading the request's headers */
    CONN_WAIT,      /* the handler deferred its answer */
    CONN_WRITE,     /* sending the response */
};

struct conn {
    struct httpd *h;
    int fd;
    uint64_t id;
    enum conn_state state;
    SSL *ssl; /* NULL for plain HTTP */
    bool head;
    ev_io io;
    int io_events; /* what io watches, 0 when stopped */
    ev_timer deadline;
    char *in;
    size_t in_len;
    struct buf out;
    size_t out_off;
    struct list_node node; /* in httpd.conns */
};

struct httpd {
    struct ev_loop *loop;
    int fd;
    int port;
    ev_io accept_io;
    httpd_handler_fn handler;
    void *userdata;
    struct httpd_opts opts;
    struct list_node conns;
    int n_conns;
    uint64_t next_id;
};

int httpd_parse_address(const char *address, struct sockaddr_storage *ret_addr, socklen_t *ret_len,
                        struct err *e)
{
    struct sockaddr_storage ss = {0};
    char host[64];
    const char *colon, *port_s;
    size_t hlen;
    int port;

    if (!address)
        return err_set(e, -EINVAL, "listen address: missing");
    colon = strrchr(address, ':');
    if (!colon)
        return err_set(e, -EINVAL, "listen address \"%s\": want host:port or :port", address);
    port_s = colon + 1;
    if (str_to_int(port_s, 0, 65535, &port) < 0)
        return err_set(e, -EINVAL, "listen address \"%s\": bad port", address);
    hlen = (size_t)(colon - address);
    if (hlen >= 2 && address[0] == '[' && address[hlen - 1] == ']') {
        address++;
        hlen -= 2;
    }
    if (hlen >= sizeof(host))
        return err_set(e, -EINVAL, "listen address \"%s\": host too long", address);
    memcpy(host, address, hlen);
    host[hlen] = '\0';
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    if (host[0] == '\0') {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_any;
        a->sin6_port = htons((uint16_t)port);
        *ret_len = sizeof(*a);
    } else if (strchr(host, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
            return err_set(e, -EINVAL, "listen address: \"%s\" is not an IPv6 address", host);
        *ret_len = sizeof(*a);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
            return err_set(e, -EINVAL, "listen address: \"%s\" is not an IP address", host);
        *ret_len = sizeof(*a);
    }
    *ret_addr = ss;
    return 0;
}

/* Watches the connection's socket for events (EV_READ, EV_WRITE or both; 0 stops it). */
static void conn_watch(struct conn *c, int events)
{
    if (c->io_events == events)
        return;
    ev_io_stop(c->h->loop, &c->io);
    c->io_events = events;
    if (!events)
        return;
    ev_io_set(&c->io, c->fd, events);
    ev_io_start(c->h->loop, &c->io);
}

static void conn_close(struct conn *c)
{
    struct httpd *h = c->h;

    ev_io_stop(h->loop, &c->io);
    ev_timer_stop(h->loop, &c->deadline);
    SSL_free(c->ssl);
    close(c->fd);
    list_remove(&c->node);
    h->n_conns--;
    buf_done(&c->out);
    free(c->in);
    free(c);
}

/* An OpenSSL call that did not complete: -EAGAIN after watching for what it waits on, or
 * -EIO. */
static int tls_retry(struct conn *c, int ret)
{
    switch (SSL_get_error(c->ssl, ret)) {
    case SSL_ERROR_WANT_READ:
        conn_watch(c, EV_READ);
        return -EAGAIN;
    case SSL_ERROR_WANT_WRITE:
        conn_watch(c, EV_WRITE);
        return -EAGAIN;
    default:
        ERR_clear_error();
        return -EIO;
    }
}

/* Reads what is there: > 0 bytes, 0 at the peer's end of stream, -EAGAIN (the socket is
 * watched for what is needed), or another negative code. */
static ssize_t conn_recv(struct conn *c, char *p, size_t n)
{
    ssize_t got;

    if (c->ssl) {
        size_t r = 0;
        int ok = SSL_read_ex(c->ssl, p, n, &r);
        if (ok)
            return (ssize_t)r;
        if (SSL_get_error(c->ssl, ok) == SSL_ERROR_ZERO_RETURN)
            return 0;
        return tls_retry(c, ok);
    }
    do
        got = read(c->fd, p, n);
    while (got < 0 && errno == EINTR);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        conn_watch(c, EV_READ);
        return -EAGAIN;
    }
    return got < 0 ? -errno : got;
}

/* Sends what the socket takes: > 0 bytes, -EAGAIN, or another negative code. */
static ssize_t conn_send(struct conn *c, const char *p, size_t n)
{
    ssize_t sent;

    if (c->ssl) {
        size_t r = 0;
        int ok = SSL_write_ex(c->ssl, p, n, &r);
        return ok ? (ssize_t)r : tls_retry(c, ok);
    }
    do
        sent = send(c->fd, p, n, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        conn_watch(c, EV_WRITE);
        return -EAGAIN;
    }
    return sent < 0 ? -errno : (sent == 0 ? -EIO : sent);
}

static const char *status_text(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    case 503:
        return "Service Unavailable";
    default:
        return status >= 500 ? "Internal Server Error" : "Unknown";
    }
}

static void conn_write(struct conn *c);

/* Queues the whole response and switches the connection to writing. */
static void respond(struct conn *c, int status, const char *content_type, const struct buf *body)
{
    size_t len = body && body->data ? body->len : 0;
    int r;

    buf_init(&c->out, 0);
    r = buf_printf(&c->out,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                   "Cache-Control: no-store\r\n%s%sConnection: close\r\n\r\n",
                   status, status_text(status),
                   content_type ? content_type : "text/plain; charset=utf-8", len,
                   status == 405 ? "Allow: GET, HEAD\r\n" : "",
                   status == 401 ? "WWW-Authenticate: Bearer\r\n" : "");
    if (r == 0 && !c->head && len > 0)
        r = buf_append(&c->out, body->data, len);
    if (r < 0) {
        conn_close(c);
        return;
    }
    c->state = CONN_WRITE;
    conn_write(c);
}

static void respond_text(struct conn *c, int status, const char *text)
{
    struct buf b = BUF_INIT;

    if (buf_puts(&b, text) < 0) {
        buf_done(&b);
        conn_close(c);
        return;
    }
    respond(c, status, NULL, &b);
    buf_done(&b);
}

/* The value of header name in the header lines that follow the request line (NUL-terminated
 * in place), or NULL; "" for a second one of the same name, which is refused. */
static const char *header_value(char *lines, const char *name)
{
    size_t n = strlen(name);
    const char *found = NULL;

    for (char *l = lines; l && *l;) {
        char *eol = strchr(l, '\n'), *v, *end;
        if (eol)
            *eol = '\0';
        end = l + strlen(l);
        if (end > l && end[-1] == '\r')
            *--end = '\0';
        if (strncasecmp(l, name, n) == 0 && l[n] == ':') {
            if (found)
                return "";
            v = l + n + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                *--end = '\0';
            found = v;
        }
        l = eol ? eol + 1 : NULL;
    }
    return found;
}

/* The request is complete: dispatch it. */
static void handle(struct conn *c)
{
    struct httpd *h = c->h;
    char *line = c->in, *sp1, *sp2, *eol, *q;
    struct httpd_response resp = {.status = 200};
    struct httpd_request req = {.id = c->id};

    eol = strpbrk(line, "\r\n");
    if (eol) {
        bool crlf = eol[0] == '\r' && eol[1] == '\n';
        *eol = '\0';
        req.authorization = header_value(eol + 1 + crlf, "Authorization");
    }
    sp1 = strchr(line, ' ');
    sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || sp1[1] != '/' || !str_has_prefix(sp2 + 1, "HTTP/1.") ||
        (req.authorization && !req.authorization[0])) {
        respond_text(c, 400, "bad request\n");
        return;
    }
    *sp1 = *sp2 = '\0';
    req.method = line;
    req.path = sp1 + 1;
    q = strchr(sp1 + 1, '?');
    if (q)
        *q = '\0';
    req.query = q ? q + 1 : "";
    if (strcmp(req.method, "GET") != 0 && strcmp(req.method, "HEAD") != 0) {
        respond_text(c, 405, "method not allowed\n");
        return;
    }
    c->head = strcmp(req.method, "HEAD") == 0;
    buf_init(&resp.body, HTTPD_BODY_MAX);
    h->handler(h->userdata, &req, &resp);
    if (resp.deferred) {
        c->state = CONN_WAIT;
        conn_watch(c, 0);
    } else {
        respond(c, resp.status, resp.content_type, &resp.body);
    }
    buf_done(&resp.body);
}

static bool headers_complete(const char *s, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (s[i] == '\n' && s[i + 1] == '\n')
            return true;
        if (i + 3 < len && memcmp(s + i, "\r\n\r\n", 4) == 0)
            return true;
    }
    return false;
}

static void conn_read(struct conn *c)
{
    size_t max = c->h->opts.max_header;

    for (;;) {
        ssize_t n;

        if (c->in_len >= max) {
            respond_text(c, 431, "request headers too large\n");
            return;
        }
        n = conn_recv(c, c->in + c->in_len, max - c->in_len);
        if (n == -EAGAIN)
            return;
        if (n <= 0) {
            conn_close(c);
            return;
        }
        c->in_len += (size_t)n;
        c->in[c->in_len] = '\0';
        if (memchr(c->in, '\0', c->in_len)) {
            respond_text(c, 400, "bad request\n");
            return;
        }
        if (headers_complete(c->in, c->in_len)) {
            handle(c);
            return;
        }
    }
}

static void conn_write(struct conn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t n = conn_send(c, c->out.data + c->out_off, c->out.len - c->out_off);
        if (n == -EAGAIN)
            return;
        if (n < 0) {
            conn_close(c);
            return;
        }
        c->out_off += (size_t)n;
    }
    /* Everything is sent: a close_notify (best effort, not waited for), then the end. */
    if (c->ssl)
        SSL_shutdown(c->ssl);
    ERR_clear_error();
    shutdown(c->fd, SHUT_WR);
    conn_close(c);
}

static void conn_handshake(struct conn *c)
{
    int r = SSL_accept(c->ssl);

    if (r == 1) {
        c->state = CONN_READ;
        conn_read(c);
        return;
    }
    if (tls_retry(c, r) != -EAGAIN)
        conn_close(c);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = w->data;

    switch (c->state) {
    case CONN_HANDSHAKE:
        conn_handshake(c);
        break;
    case CONN_READ:
        conn_read(c);
        break;
    case CONN_WRITE:
        conn_write(c);
        break;
    case CONN_WAIT:
        conn_watch(c, 0);
        break;
    }
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    conn_close(w->data);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    struct httpd *h = w->data;

    for (;;) {
        int fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct conn *c;

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return; /* EAGAIN, or out of descriptors: try again on the next event */
        }
        if (h->n_conns >= h->opts.max_connections) {
            close(fd);
            continue;
        }
        c = calloc(1, sizeof(*c));
        if (c)
            c->in = malloc(h->opts.max_header + 1);
        if (c && c->in && h->opts.tls) {
            c->ssl = SSL_new(h->opts.tls);
            if (c->ssl && SSL_set_fd(c->ssl, fd) != 1) {
                SSL_free(c->ssl);
                c->ssl = NULL;
            }
            if (c->ssl)
                SSL_set_mode(c->ssl,
                             SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        }
        if (!c || !c->in || (h->opts.tls && !c->ssl)) {
            if (c)
                free(c->in);
            free(c);
            ERR_clear_error();
            close(fd);
            continue;
        }
        c->h = h;
        c->fd = fd;
        c->id = ++h->next_id;
        c->state = c->ssl ? CONN_HANDSHAKE : CONN_READ;
        list_add_head(&h->conns, &c->node);
        h->n_conns++;
        ev_io_init(&c->io, on_io, fd, EV_READ);
        c->io.data = c;
        c->io_events = EV_READ;
        ev_io_start(loop, &c->io);
        ev_timer_init(&c->deadline, on_deadline, h->opts.idle_timeout, 0);
        c->deadline.data = c;
        ev_timer_start(loop, &c->deadline);
    }
}

int httpd_complete(struct httpd *h, uint64_t id, int status, const char *content_type,
                   const struct buf *body)
{
    struct list_node *n;

    list_foreach(n, &h->conns) {
        struct conn *c = list_entry(n, struct conn, node);

        if (c->id != id)
            continue;
        if (c->state != CONN_WAIT)
            return -ENOENT;
        respond(c, status, content_type, body);
        return 0;
    }
    return -ENOENT;
}

bool httpd_address_is_loopback(const char *address)
{
    struct sockaddr_storage ss;
    socklen_t len;

    if (httpd_parse_address(address, &ss, &len, NULL) < 0)
        return false;
    if (ss.ss_family == AF_INET)
        return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
    return memcmp(&((struct sockaddr_in6 *)&ss)->sin6_addr, &in6addr_loopback,
                  sizeof(in6addr_loopback)) == 0;
}

static int listen_on(const struct sockaddr_storage *addr, socklen_t len, int *ret_fd)
{
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1, zero = 0, r;

    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (addr->ss_family == AF_INET6 && memcmp(&((const struct sockaddr_in6 *)addr)->sin6_addr,
                                              &in6addr_any, sizeof(in6addr_any)) == 0)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, (const struct sockaddr *)addr, len) < 0 || listen(fd, 64) < 0) {
        r = -errno;
        close(fd);
        return r;
    }
    *ret_fd = fd;
    return 0;
}

int httpd_new(struct ev_loop *loop, const char *address, const struct httpd_opts *opts,
              httpd_handler_fn handler, void *userdata, struct httpd **ret_httpd, struct err *e)
{
    struct sockaddr_storage addr, bound;
    socklen_t len, blen = sizeof(bound);
    struct httpd *h;
    int fd = -1, r;

    r = httpd_parse_address(address, &addr, &len, e);
    if (r < 0)
        return r;
    r = listen_on(&addr, len, &fd);
    if (r == -EAFNOSUPPORT && addr.ss_family == AF_INET6 &&
        memcmp(&((struct sockaddr_in6 *)&addr)->sin6_addr, &in6addr_any, sizeof(in6addr_any)) ==
            0) {
        /* No IPv6 on this host: every IPv4 interface instead. */
        struct sockaddr_in *a = (struct sockaddr_in *)&addr;
        in_port_t port = ((struct sockaddr_in6 *)&addr)->sin6_port;
        memset(&addr, 0, sizeof(addr));
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_ANY);
        a->sin_port = port;
        r = listen_on(&addr, sizeof(*a), &fd);
    }
    if (r < 0)
        return err_set(e, r, "listen on %s: %s", address, strerror(-r));
    h = calloc(1, sizeof(*h));
    if (!h) {
        close(fd);
        return err_set(e, -ENOMEM, "listen on %s: out of memory", address);
    }
    list_init(&h->conns);
    h->loop = loop;
    h->fd = fd;
    h->handler = handler;
    h->userdata = userdata;
    h->opts = opts ? *opts : (struct httpd_opts){0};
    if (h->opts.max_header == 0)
        h->opts.max_header = 8192;
    if (h->opts.max_connections <= 0)
        h->opts.max_connections = 64;
    if (h->opts.idle_timeout <= 0)
        h->opts.idle_timeout = 10;
    if (getsockname(fd, (struct sockaddr *)&bound, &blen) == 0)
        h->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    ev_io_init(&h->accept_io, on_accept, fd, EV_READ);
    h->accept_io.data = h;
    ev_io_start(loop, &h->accept_io);
    *ret_httpd = h;
    return 0;
}

int httpd_port(const struct httpd *h)
{
    return h->port;
}

void httpd_free(struct httpd *h)
{
    if (!h)
        return;
    while (!list_empty(&h->conns))
        conn_close(list_entry(list_first(&h->conns), struct conn, node));
    ev_io_stop(h->loop, &h->accept_io);
    close(h->fd);
    free(h);
}
