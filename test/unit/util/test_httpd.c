#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>

#include "lib/util/httpd.h"
#include "lib/util/strutil.h"

/* The server on a loop in this process; the client is a plain socket, read while the loop
 * runs, so one thread plays both sides. */

struct fixture {
    struct ev_loop *loop;
    struct httpd *h;
    int calls;
    uint64_t deferred_id; /* of the last /later request */
};

static void handler(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
    struct fixture *f = userdata;

    f->calls++;
    if (strcmp(req->path, "/auth") == 0) {
        buf_printf(&resp->body, "authorization=[%s]\n",
                   req->authorization ? req->authorization : "(none)");
        return;
    }
    if (strcmp(req->path, "/later") == 0) {
        f->deferred_id = req->id;
        resp->deferred = true;
        return;
    }
    if (strcmp(req->path, "/hello") == 0) {
        resp->content_type = "text/x-test";
        buf_printf(&resp->body, "hello %s %s\n", req->method, req->query);
        return;
    }
    resp->status = 404;
    buf_puts(&resp->body, "not found\n");
}

static int setup_opts(void **state, const struct httpd_opts *opts)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct err e;

    f->loop = ev_loop_new(EVFLAG_AUTO);
    assert_int_equal(httpd_new(f->loop, "127.0.0.1:0", opts, handler, f, &f->h, &e), 0);
    assert_true(httpd_port(f->h) > 0);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_opts(state, NULL);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    httpd_free(f->h);
    ev_loop_destroy(f->loop);
    free(f);
    return 0;
}

static int connect_to(struct fixture *f)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)httpd_port(f->h))};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* Reads everything until the server closes, running the loop meanwhile. Fails the test when
 * the server has not closed within timeout seconds (a bound on a hang, not a measurement). */
static char *read_all(struct fixture *f, int fd, double timeout)
{
    struct buf b = BUF_INIT;
    double end = time_mono() + timeout;
    char chunk[4096];

    buf_puts(&b, "");
    while (time_mono() < end) {
        ssize_t n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
        if (n == 0)
            return buf_steal(&b);
        if (n > 0) {
            buf_append(&b, chunk, (size_t)n);
            continue;
        }
        ev_run(f->loop, EVRUN_NOWAIT);
        usleep(1000);
    }
    buf_done(&b);
    fail_msg("the server did not close the connection within %.0f s", timeout);
    return NULL;
}

static char *exchange(struct fixture *f, const char *request)
{
    int fd = connect_to(f);
    char *resp;

    assert_int_equal(send(fd, request, strlen(request), MSG_NOSIGNAL), (ssize_t)strlen(request));
    resp = read_all(f, fd, 30);
    close(fd);
    return resp;
}

static void test_httpd__get_calls_the_handler(void **state)
{
    struct fixture *f = *state;
    char *r = exchange(f, "GET /hello?x=1 HTTP/1.1\r\nHost: t\r\n\r\n");

    assert_true(str_has_prefix(r, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(r, "Content-Type: text/x-test\r\n"));
    assert_non_null(strstr(r, "Content-Length: 14\r\n"));
    assert_non_null(strstr(r, "Connection: close\r\n"));
    assert_true(str_has_suffix(r, "\r\n\r\nhello GET x=1\n"));
    free(r);
}

static void test_httpd__head_has_no_body_and_404_passes_through(void **state)
{
    struct fixture *f = *state;
    char *r = exchange(f, "HEAD /hello HTTP/1.0\n\n");

    assert_true(str_has_prefix(r, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(r, "Content-Length: 12\r\n"));
    assert_true(str_has_suffix(r, "\r\n\r\n"));
    free(r);
    r = exchange(f, "GET /other HTTP/1.1\r\n\r\n");
    assert_true(str_has_prefix(r, "HTTP/1.1 404 Not Found\r\n"));
    free(r);
}

static void test_httpd__other_methods_and_garbage_are_refused(void **state)
{
    struct fixture *f = *state;
    char *r = exchange(f, "POST /hello HTTP/1.1\r\nContent-Length: 0\r\n\r\n");

    assert_true(str_has_prefix(r, "HTTP/1.1 405 Method Not Allowed\r\n"));
    assert_non_null(strstr(r, "Allow: GET, HEAD\r\n"));
    free(r);
    r = exchange(f, "hello there\r\n\r\n");
    assert_true(str_has_prefix(r, "HTTP/1.1 400 Bad Request\r\n"));
    free(r);
    assert_int_equal(f->calls, 0);
}

static void test_httpd__oversized_headers_get_431(void **state)
{
    struct fixture *f = *state;
    size_t n = 8192; /* exactly the bound, so the server has read all of it when it answers */
    char *req = malloc(n + 1);
    size_t head;
    char *r;

    snprintf(req, n + 1, "GET /hello HTTP/1.1\r\nX-Big: ");
    head = strlen(req);
    memset(req + head, 'a', n - head);
    req[n] = '\0';
    r = exchange(f, req);
    assert_true(str_has_prefix(r, "HTTP/1.1 431 "));
    assert_int_equal(f->calls, 0);
    free(r);
    free(req);
}

static void test_httpd__idle_connections_are_closed(void **state)
{
    struct fixture *f;
    struct httpd_opts o = {.idle_timeout = 0.2};
    int fd;
    double t0;
    char *r;

    setup_opts(state, &o);
    f = *state;
    fd = connect_to(f);
    assert_int_equal(send(fd, "GET /hel", 8, MSG_NOSIGNAL), 8);
    t0 = time_mono();
    r = read_all(f, fd, 30);
    /* Closed without an answer, and not before the idle timeout. */
    assert_string_equal(r, "");
    assert_true(time_mono() - t0 >= 0.15);
    free(r);
    close(fd);
}

static void test_httpd__connections_beyond_the_limit_are_closed(void **state)
{
    struct fixture *f;
    struct httpd_opts o = {.max_connections = 2, .idle_timeout = 120};
    int fds[3];
    char *r;

    setup_opts(state, &o);
    f = *state;
    for (int i = 0; i < 3; i++) {
        fds[i] = connect_to(f);
        for (int k = 0; k < 5; k++)
            ev_run(f->loop, EVRUN_NOWAIT);
    }
    r = read_all(f, fds[2], 30);
    assert_string_equal(r, ""); /* closed without an answer, long before the idle timeout */
    free(r);
    assert_int_equal(send(fds[0], "GET /hello HTTP/1.1\r\n\r\n", 23, MSG_NOSIGNAL), 23);
    r = read_all(f, fds[0], 30);
    assert_true(str_has_prefix(r, "HTTP/1.1 200 OK"));
    free(r);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
}

static void test_httpd__addresses_parse(void **state)
{
    struct sockaddr_storage ss;
    socklen_t len;
    struct err e;

    assert_int_equal(httpd_parse_address(":8080", &ss, &len, &e), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 8080);
    assert_int_equal(httpd_parse_address("127.0.0.1:0", &ss, &len, &e), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(httpd_parse_address("[::1]:9", &ss, &len, &e), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(httpd_parse_address("localhost:1", &ss, &len, &e), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(httpd_parse_address("8080", &ss, &len, &e), -EINVAL);
    assert_int_equal(httpd_parse_address(":70000", &ss, &len, &e), -EINVAL);
    assert_int_equal(httpd_parse_address("example.com:80", &ss, &len, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "example.com"));
}

static void test_httpd__a_taken_port_is_an_error(void **state)
{
    struct fixture *f = *state;
    struct httpd *h2 = NULL;
    char addr[32];
    struct err e;

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", httpd_port(f->h));
    assert_int_equal(httpd_new(f->loop, addr, NULL, handler, f, &h2, &e), -EADDRINUSE);
    assert_non_null(strstr(e.msg, addr));
}

static void test_httpd__the_authorization_header_reaches_the_handler(void **state)
{
    struct fixture *f = *state;
    char *r = exchange(f, "GET /auth HTTP/1.1\r\nHost: t\r\nauthorization:  Bearer abc.def \r\n"
                          "X-Other: 1\r\n\r\n");

    assert_true(str_has_suffix(r, "\r\n\r\nauthorization=[Bearer abc.def]\n"));
    free(r);
    r = exchange(f, "GET /auth HTTP/1.1\n\n");
    assert_true(str_has_suffix(r, "authorization=[(none)]\n"));
    free(r);
    /* Two of them: which one would a proxy have checked? Refused. */
    r = exchange(f, "GET /auth HTTP/1.1\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n"
                    "\r\n");
    assert_true(str_has_prefix(r, "HTTP/1.1 400 Bad Request\r\n"));
    free(r);
}

static void test_httpd__a_deferred_answer_is_sent_when_completed(void **state)
{
    struct fixture *f = *state;
    struct buf body = BUF_INIT;
    int fd = connect_to(f);
    const char *req = "GET /later HTTP/1.1\r\n\r\n";
    uint64_t id;
    char *r;

    assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    while (f->deferred_id == 0)
        ev_run(f->loop, EVRUN_ONCE);
    id = f->deferred_id;
    assert_int_equal(httpd_complete(f->h, id + 1, 200, NULL, NULL), -ENOENT);
    buf_puts(&body, "denied\n");
    assert_int_equal(httpd_complete(f->h, id, 401, NULL, &body), 0);
    r = read_all(f, fd, 5);
    assert_true(str_has_prefix(r, "HTTP/1.1 401 Unauthorized\r\n"));
    assert_non_null(strstr(r, "WWW-Authenticate: Bearer\r\n"));
    assert_true(str_has_suffix(r, "\r\n\r\ndenied\n"));
    free(r);
    close(fd);
    /* Answered once: the connection is gone. */
    assert_int_equal(httpd_complete(f->h, id, 200, NULL, &body), -ENOENT);
    buf_done(&body);
}

static void test_httpd__a_deferred_request_times_out_like_any(void **state)
{
    struct fixture *f;
    struct httpd_opts o = {.idle_timeout = 0.2};
    const char *req = "GET /later HTTP/1.1\r\n\r\n";
    int fd;
    char *r;

    setup_opts(state, &o);
    f = *state;
    fd = connect_to(f);
    assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    r = read_all(f, fd, 3);
    assert_string_equal(r, "");
    free(r);
    close(fd);
    assert_true(f->deferred_id > 0);
    assert_int_equal(httpd_complete(f->h, f->deferred_id, 200, NULL, NULL), -ENOENT);
}

static void test_httpd__loopback_addresses(void **state)
{
    assert_true(httpd_address_is_loopback("127.0.0.1:8080"));
    assert_true(httpd_address_is_loopback("127.3.2.1:0"));
    assert_true(httpd_address_is_loopback("localhost:9"));
    assert_true(httpd_address_is_loopback("[::1]:8080"));
    assert_false(httpd_address_is_loopback(":8080"));
    assert_false(httpd_address_is_loopback("0.0.0.0:8080"));
    assert_false(httpd_address_is_loopback("10.0.0.1:8080"));
    assert_false(httpd_address_is_loopback("[::]:8080"));
    assert_false(httpd_address_is_loopback("nonsense"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_httpd__get_calls_the_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd__head_has_no_body_and_404_passes_through, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_httpd__other_methods_and_garbage_are_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_httpd__oversized_headers_get_431, setup, teardown),
        cmocka_unit_test_teardown(test_httpd__idle_connections_are_closed, teardown),
        cmocka_unit_test_teardown(test_httpd__connections_beyond_the_limit_are_closed, teardown),
        cmocka_unit_test(test_httpd__addresses_parse),
        cmocka_unit_test_setup_teardown(test_httpd__a_taken_port_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd__the_authorization_header_reaches_the_handler,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_httpd__a_deferred_answer_is_sent_when_completed, setup,
                                        teardown),
        cmocka_unit_test_teardown(test_httpd__a_deferred_request_times_out_like_any, teardown),
        cmocka_unit_test(test_httpd__loopback_addresses),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
