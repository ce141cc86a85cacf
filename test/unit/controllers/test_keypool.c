#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "controllers/keypool.h"
#include "lib/pki/key.h"

static void tick(struct ev_loop *loop, ev_timer *w, int revents)
{
}

/* Runs the loop until the pool holds n keys of alg, or 60 s pass. */
static void wait_stock(struct ev_loop *loop, struct keypool *kp, enum pki_key_alg alg, size_t n)
{
    ev_timer t;
    ev_tstamp start = ev_time();

    ev_timer_init(&t, tick, 0.01, 0.01);
    ev_timer_start(loop, &t);
    while (keypool_stock(kp, alg) < n && ev_time() - start < 60)
        ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &t);
}

static void assert_key(const char *pem, enum pki_key_alg want)
{
    enum pki_key_alg alg;

    assert_int_equal(pki_key_alg_of(pem, &alg, NULL), 0);
    assert_int_equal(alg, want);
}

static void test_keypool__ecdsa_keys_are_generated_at_once(void **state)
{
    struct ev_loop *loop = ev_loop_new(0);
    struct keypool *kp = NULL;
    char *key = NULL;

    assert_int_equal(keypool_new(loop, &kp, NULL), 0);
    assert_false(keypool_is_async(kp, PKI_KEY_ECDSA_P256));
    assert_int_equal(keypool_take(kp, PKI_KEY_ECDSA_P256, &key, NULL), 0);
    assert_key(key, PKI_KEY_ECDSA_P256);
    keypool_key_free(key);
    keypool_free(kp);
    ev_loop_destroy(loop);
}

static void test_keypool__rsa_comes_from_the_worker_after_eagain(void **state)
{
    struct ev_loop *loop = ev_loop_new(0);
    struct keypool *kp = NULL;
    char *key = NULL;
    struct err e;

    assert_int_equal(keypool_new(loop, &kp, NULL), 0);
    assert_true(keypool_is_async(kp, PKI_KEY_RSA_2048));
    /* The take does not make the key on this thread: it says to come back, with no key. */
    assert_int_equal(keypool_take(kp, PKI_KEY_RSA_2048, &key, &e), -EAGAIN);
    assert_null(key);
    assert_string_equal(e.msg, "waiting for a RSA-2048 key");
    wait_stock(loop, kp, PKI_KEY_RSA_2048, 1);
    assert_int_equal(keypool_take(kp, PKI_KEY_RSA_2048, &key, NULL), 0);
    assert_key(key, PKI_KEY_RSA_2048);
    /* a key given back is taken again */
    keypool_give_back(kp, PKI_KEY_RSA_2048, key);
    assert_int_equal(keypool_stock(kp, PKI_KEY_RSA_2048), 1);
    key = NULL;
    assert_int_equal(keypool_take(kp, PKI_KEY_RSA_2048, &key, NULL), 0);
    keypool_key_free(key);
    keypool_free(kp);
    ev_loop_destroy(loop);
}

static void test_keypool__reserve_fills_the_stock(void **state)
{
    struct ev_loop *loop = ev_loop_new(0);
    struct keypool *kp = NULL;

    assert_int_equal(keypool_new(loop, &kp, NULL), 0);
    keypool_reserve(kp, PKI_KEY_RSA_2048, 3);
    keypool_reserve(kp, PKI_KEY_RSA_2048, 3); /* asks for nothing more */
    wait_stock(loop, kp, PKI_KEY_RSA_2048, 3);
    assert_int_equal(keypool_stock(kp, PKI_KEY_RSA_2048), 3);
    keypool_free(kp);
    ev_loop_destroy(loop);
}

static void test_keypool__free_while_generating_does_not_wait_for_the_queue(void **state)
{
    struct ev_loop *loop = ev_loop_new(0);
    struct keypool *kp = NULL;
    ev_tstamp t0;

    assert_int_equal(keypool_new(loop, &kp, NULL), 0);
    keypool_reserve(kp, PKI_KEY_RSA_4096, 20);
    t0 = ev_time();
    keypool_free(kp); /* waits for at most the key being generated */
    assert_true(ev_time() - t0 < 30);
    ev_loop_destroy(loop);
}

static void test_keypool__without_a_loop_every_key_is_inline(void **state)
{
    struct keypool *kp = NULL;
    char *key = NULL;

    assert_int_equal(keypool_new(NULL, &kp, NULL), 0);
    assert_false(keypool_is_async(kp, PKI_KEY_RSA_2048));
    assert_int_equal(keypool_take(kp, PKI_KEY_RSA_2048, &key, NULL), 0);
    assert_key(key, PKI_KEY_RSA_2048);
    keypool_key_free(key);
    assert_int_equal(keypool_take(kp, (enum pki_key_alg)42, &key, NULL), -EINVAL);
    keypool_free(kp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keypool__ecdsa_keys_are_generated_at_once),
        cmocka_unit_test(test_keypool__rsa_comes_from_the_worker_after_eagain),
        cmocka_unit_test(test_keypool__reserve_fills_the_stock),
        cmocka_unit_test(test_keypool__free_while_generating_does_not_wait_for_the_queue),
        cmocka_unit_test(test_keypool__without_a_loop_every_key_is_inline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
