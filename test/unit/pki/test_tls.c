/*
 * Serving TLS (lib/pki/tls.h) through lib/util/httpd: a self-signed pair that a client
 * verifies against its CA for 127.0.0.1 and localhost, a client that trusts another CA
 * refused, no plain-HTTP answer on the TLS port, and keys that do not match refused. The
 * client runs on a thread with blocking OpenSSL; the server on this thread's loop.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "lib/pki/tls.h"
#include "lib/util/httpd.h"
#include "lib/util/strutil.h"

struct fixture {
    struct ev_loop *loop;
    SSL_CTX *ctx;
    struct httpd *h;
    char *chain, *key;
};

static void handler(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
    buf_printf(&resp->body, "path=%s authorization=%s\n", req->path,
               req->authorization ? req->authorization : "(none)");
}

static int setup(void **state)
{
    static const char *const names[] = {"localhost", "127.0.0.1"};
    struct fixture *f = calloc(1, sizeof(*f));
    struct httpd_opts o = {.idle_timeout = 5};
    struct err e = {0};

    assert_int_equal(pki_tls_self_signed(names, 2, 0, &f->chain, &f->key, &e), 0);
    assert_int_equal(pki_tls_server_ctx(f->chain, f->key, "test pair", &f->ctx, &e), 0);
    f->loop = ev_loop_new(EVFLAG_AUTO);
    o.tls = f->ctx;
    assert_int_equal(httpd_new(f->loop, "127.0.0.1:0", &o, handler, f, &f->h, &e), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    httpd_free(f->h);
    ev_loop_destroy(f->loop);
    SSL_CTX_free(f->ctx);
    free(f->chain);
    free(f->key);
    free(f);
    return 0;
}

/* One request from a client thread. */
struct client {
    int port;
    const char *ca_pem; /* the only CA trusted; NULL: speak plain HTTP */
    const char *host;   /* checked against the certificate: a name or an IP */
    const char *request;
    char response[8192];
    bool handshake_failed;
    atomic_bool done;
};

static int dial(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void *client_run(void *arg)
{
    struct client *c = arg;
    int fd = dial(c->port);
    size_t got = 0;

    if (fd < 0)
        goto out;
    if (!c->ca_pem) {
        ssize_t n;
        if (send(fd, c->request, strlen(c->request), MSG_NOSIGNAL) < 0)
            goto out_fd;
        while (got + 1 < sizeof(c->response) &&
               (n = recv(fd, c->response + got, sizeof(c->response) - 1 - got, 0)) > 0)
            got += (size_t)n;
        goto out_fd;
    }
    {
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        BIO *b = BIO_new_mem_buf(c->ca_pem, -1);
        X509 *ca = PEM_read_bio_X509(b, NULL, NULL, NULL);
        X509_VERIFY_PARAM *vp;
        SSL *ssl;
        size_t n;

        X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
        X509_free(ca);
        BIO_free(b);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        ssl = SSL_new(ctx);
        vp = SSL_get0_param(ssl);
        if (strchr(c->host, '.') && strspn(c->host, "0123456789.") == strlen(c->host))
            X509_VERIFY_PARAM_set1_ip_asc(vp, c->host);
        else
            X509_VERIFY_PARAM_set1_host(vp, c->host, 0);
        SSL_set_fd(ssl, fd);
        if (SSL_connect(ssl) != 1) {
            c->handshake_failed = true;
        } else {
            SSL_write_ex(ssl, c->request, strlen(c->request), &n);
            while (got + 1 < sizeof(c->response) &&
                   SSL_read_ex(ssl, c->response + got, sizeof(c->response) - 1 - got, &n) == 1)
                got += n;
        }
        SSL_free(ssl);
        SSL_CTX_free(ctx);
        ERR_clear_error();
    }
out_fd:
    close(fd);
out:
    c->response[got] = '\0';
    atomic_store(&c->done, true);
    return NULL;
}

static void poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    if (atomic_load(&((struct client *)w->data)->done))
        ev_break(loop, EVBREAK_ONE);
}

/* Runs the client on a thread and the server here until the client is done. */
static void roundtrip(struct fixture *f, struct client *c)
{
    ev_timer poll;
    pthread_t t;

    c->port = httpd_port(f->h);
    atomic_init(&c->done, false);
    ev_timer_init(&poll, poll_cb, 0.005, 0.005);
    poll.data = c;
    ev_timer_start(f->loop, &poll);
    assert_int_equal(pthread_create(&t, NULL, client_run, c), 0);
    ev_run(f->loop, 0);
    ev_timer_stop(f->loop, &poll);
    pthread_join(t, NULL);
}

/* The second certificate of the chain: the CA that signed the leaf. */
static const char *ca_of(const char *chain)
{
    const char *second = strstr(chain + 1, "-----BEGIN CERTIFICATE-----");

    assert_non_null(second);
    return second;
}

static void test_tls__a_self_signed_pair_serves_and_verifies(void **state)
{
    struct fixture *f = *state;
    const char *hosts[] = {"127.0.0.1", "localhost"};

    for (int i = 0; i < 2; i++) {
        struct client c = {.ca_pem = ca_of(f->chain),
                           .host = hosts[i],
                           .request = "GET /metrics HTTP/1.1\r\nAuthorization: Bearer t0k\r\n\r\n"};
        roundtrip(f, &c);
        assert_false(c.handshake_failed);
        assert_true(str_has_prefix(c.response, "HTTP/1.1 200 OK\r\n"));
        assert_true(str_has_suffix(c.response, "\r\n\r\npath=/metrics authorization=Bearer t0k\n"));
    }
}

static void test_tls__a_client_that_trusts_another_ca_is_refused(void **state)
{
    static const char *const names[] = {"localhost"};
    struct fixture *f = *state;
    char *other_chain = NULL, *other_key = NULL;
    struct err e = {0};
    struct client bad = {.host = "localhost", .request = "GET / HTTP/1.1\r\n\r\n"};
    struct client good = {.host = "localhost", .request = "GET /again HTTP/1.1\r\n\r\n"};

    assert_int_equal(pki_tls_self_signed(names, 1, 0, &other_chain, &other_key, &e), 0);
    bad.ca_pem = ca_of(other_chain);
    roundtrip(f, &bad);
    assert_true(bad.handshake_failed);
    assert_string_equal(bad.response, "");
    /* The server goes on serving. */
    good.ca_pem = ca_of(f->chain);
    roundtrip(f, &good);
    assert_true(str_has_suffix(good.response, "path=/again authorization=(none)\n"));
    free(other_chain);
    free(other_key);
}

static void test_tls__plain_http_on_the_tls_port_gets_no_answer(void **state)
{
    struct fixture *f = *state;
    struct client c = {.request = "GET /metrics HTTP/1.1\r\n\r\n"};

    roundtrip(f, &c);
    assert_null(strstr(c.response, "HTTP/1.1 200"));
    assert_null(strstr(c.response, "path="));
}

static void test_tls__a_key_that_does_not_match_is_refused(void **state)
{
    static const char *const names[] = {"localhost"};
    struct fixture *f = *state;
    char *other_chain = NULL, *other_key = NULL;
    SSL_CTX *ctx = NULL;
    struct err e = {0};

    assert_int_equal(pki_tls_self_signed(names, 1, 0, &other_chain, &other_key, &e), 0);
    assert_int_equal(pki_tls_server_ctx(f->chain, other_key, "--metrics-cert-dir /x", &ctx, &e),
                     -EINVAL);
    assert_non_null(strstr(e.msg, "--metrics-cert-dir /x: the key does not match"));
    assert_int_equal(pki_tls_server_ctx("not a certificate", f->key, "pair", &ctx, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "pair: no PEM certificate"));
    assert_int_equal(pki_tls_server_ctx(f->chain, "no key", "pair", &ctx, &e), -EINVAL);
    assert_null(ctx);
    free(other_chain);
    free(other_key);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tls__a_self_signed_pair_serves_and_verifies, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tls__a_client_that_trusts_another_ca_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tls__plain_http_on_the_tls_port_gets_no_answer, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tls__a_key_that_does_not_match_is_refused, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
