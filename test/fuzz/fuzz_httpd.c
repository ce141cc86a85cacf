/* libFuzzer target for lib/util/httpd.c, the server behind /metrics, /healthz and /readyz:
 * the input is sent as one client's request over a real loopback connection, in pieces whose
 * sizes come from its first byte, and the server's answer is read back. Checked beyond "no
 * crash, no leak, no UB":
 *   - the handler only ever sees GET or HEAD, a path that starts with '/' and holds no '?',
 *     space or line break, and a query without space or line break;
 *   - every answer is one well-formed HTTP/1.1 response (a status the server documents,
 *     Content-Length equal to the body, Connection: close), or none when the request never
 *     completed;
 *   - a request larger than the header bound is answered 431, never buffered past it.
 * hack/fuzz.sh builds it with libFuzzer; test/fuzz/CMakeLists.txt replays the corpus.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>

#include "lib/util/httpd.h"
#include "test/fuzz/fuzz_util.h"

#define MAX_HEADER 1024

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ev_loop *loop;
static struct httpd *server;
static int handled;

static void handler(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
    handled++;
    fuzz_check(strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0, "fuzz_httpd",
               "handler called for method", req->method);
    fuzz_check(req->path[0] == '/', "fuzz_httpd", "path does not start with /", req->path);
    fuzz_check(!strpbrk(req->path, "? \r\n"), "fuzz_httpd", "path holds ? or space or EOL",
               req->path);
    fuzz_check(!strpbrk(req->query, " \r\n"), "fuzz_httpd", "query holds space or EOL", req->query);
    if (strcmp(req->path, "/missing") == 0) {
        resp->status = 404;
        buf_puts(&resp->body, "not found\n");
        return;
    }
    buf_printf(&resp->body, "path=%s query=%s\n", req->path, req->query);
}

static void setup_once(void)
{
    struct httpd_opts opts = {.max_header = MAX_HEADER, .max_connections = 4, .idle_timeout = 5};
    struct err e;

    if (server)
        return;
    loop = ev_loop_new(EVFLAG_AUTO);
    if (!loop || httpd_new(loop, "127.0.0.1:0", &opts, handler, NULL, &server, &e) < 0) {
        fprintf(stderr, "fuzz_httpd: cannot listen on loopback: %s\n", e.msg);
        abort();
    }
}

static int connect_to_server(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)httpd_port(server)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        abort();
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS)
        abort();
    return fd;
}

/* Lets the server run and reads what it sent; true once it closed the connection. With
 * wait_ms, keeps at it until then or until nothing happened for that long. */
static bool pump(int fd, struct buf *resp, int wait_ms)
{
    for (int idle = 0;;) {
        char chunk[4096];
        ssize_t n;

        ev_run(loop, EVRUN_NOWAIT);
        n = recv(fd, chunk, sizeof(chunk), 0);
        if (n > 0) {
            fuzz_check(buf_append(resp, chunk, (size_t)n) == 0, "fuzz_httpd",
                       "response larger than its bound", NULL);
            idle = 0;
            continue;
        }
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return true;
        if (idle++ >= wait_ms)
            return false;
        poll(&(struct pollfd){.fd = fd, .events = POLLIN}, 1, 1);
    }
}

/* True when the server has, within its first MAX_HEADER bytes, a complete header block. */
static bool complete_within_bound(const uint8_t *data, size_t size)
{
    size_t n = size < MAX_HEADER ? size : MAX_HEADER;

    for (size_t i = 0; i + 1 < n; i++) {
        if (data[i] == '\n' && data[i + 1] == '\n')
            return true;
        if (i + 3 < n && memcmp(data + i, "\r\n\r\n", 4) == 0)
            return true;
    }
    return false;
}

static void check_response(const struct buf *resp, const uint8_t *data, size_t size)
{
    const char *r = resp->data, *end, *cl;
    unsigned status = 0;
    size_t head, len;

    if (resp->len == 0)
        return; /* closed without an answer: the request never completed */
    fuzz_check(sscanf(r, "HTTP/1.1 %u ", &status) == 1, "fuzz_httpd", "bad status line", r);
    fuzz_check(status == 200 || status == 400 || status == 404 || status == 405 || status == 431,
               "fuzz_httpd", "undocumented status", r);
    end = strstr(r, "\r\n\r\n");
    fuzz_check(end != NULL, "fuzz_httpd", "response without end of headers", r);
    head = (size_t)(end - r) + 4;
    cl = strstr(r, "\r\nContent-Length: ");
    fuzz_check(cl && cl < end, "fuzz_httpd", "response without Content-Length", r);
    len = strtoul(cl + strlen("\r\nContent-Length: "), NULL, 10);
    fuzz_check(strstr(r, "\r\nConnection: close\r\n") != NULL, "fuzz_httpd",
               "response without Connection: close", r);
    /* HEAD answers carry the length of the body they leave out. */
    fuzz_check(resp->len == head + len || resp->len == head, "fuzz_httpd",
               "Content-Length does not match the body", r);
    /* A request that does not end within the bound is refused, not buffered on. */
    if (size >= MAX_HEADER && !complete_within_bound(data, size) && !memchr(data, '\0', MAX_HEADER))
        fuzz_check(status == 431, "fuzz_httpd", "oversized request not answered 431", r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct buf resp;
    size_t step = 64, off = 0;
    bool closed = false;
    int fd;

    setup_once();
    if (size > 0) {
        step = 1 + data[0] % 256;
        data++;
        size--;
    }
    buf_init(&resp, (size_t)1 << 20);
    fd = connect_to_server();
    while (off < size && !closed) {
        size_t len = size - off < step ? size - off : step;
        ssize_t n = send(fd, data + off, len, MSG_NOSIGNAL);

        if (n > 0)
            off += (size_t)n;
        else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            break; /* the server answered and closed before everything was sent */
        closed = pump(fd, &resp, 0);
    }
    if (!closed) {
        /* Nothing more is coming: the server either answers now or closes. */
        shutdown(fd, SHUT_WR);
        closed = pump(fd, &resp, 2000);
    }
    fuzz_check(closed, "fuzz_httpd", "the server neither answered nor closed", NULL);
    check_response(&resp, data, size);
    close(fd);
    buf_done(&resp);
    return 0;
}
