#include "controllers/keypool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#define N_ALGS 5

/* A list of key PEMs. */
struct keylist {
    char **keys;
    size_t n, cap;
};

struct keypool {
    struct ev_loop *loop;
    ev_async async;
    pthread_t thread;
    bool thread_started;

    /* Loop side only. */
    struct keylist stock[N_ALGS];
    size_t coming[N_ALGS]; /* requested from the worker, not yet in stock */

    /* Shared with the worker, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t todo[N_ALGS];         /* keys the worker still has to generate */
    struct keylist done[N_ALGS]; /* generated, not yet moved to stock */
    size_t failed[N_ALGS];       /* generations that failed */
    bool stop;
};

static bool is_rsa(enum pki_key_alg alg)
{
    return alg == PKI_KEY_RSA_2048 || alg == PKI_KEY_RSA_3072 || alg == PKI_KEY_RSA_4096;
}

void keypool_key_free(char *key_pem)
{
    if (!key_pem)
        return;
    explicit_bzero(key_pem, strlen(key_pem));
    free(key_pem);
}

static int keylist_push(struct keylist *l, char *key)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **k = realloc(l->keys, cap * sizeof(*k));
        if (!k)
            return -ENOMEM;
        l->keys = k;
        l->cap = cap;
    }
    l->keys[l->n++] = key;
    return 0;
}

static void keylist_done(struct keylist *l)
{
    for (size_t i = 0; i < l->n; i++)
        keypool_key_free(l->keys[i]);
    free(l->keys);
    memset(l, 0, sizeof(*l));
}

static void *worker(void *arg)
{
    struct keypool *kp = arg;

    pthread_mutex_lock(&kp->mu);
    for (;;) {
        int alg = -1;
        char *key = NULL;
        int r;

        while (!kp->stop) {
            for (int i = 0; i < N_ALGS && alg < 0; i++)
                if (kp->todo[i] > 0)
                    alg = i;
            if (alg >= 0)
                break;
            pthread_cond_wait(&kp->cv, &kp->mu);
        }
        if (kp->stop)
            break;
        kp->todo[alg]--;
        pthread_mutex_unlock(&kp->mu);
        r = pki_key_generate((enum pki_key_alg)alg, &key, NULL);
        pthread_mutex_lock(&kp->mu);
        if (r < 0 || keylist_push(&kp->done[alg], key) < 0) {
            keypool_key_free(key);
            kp->failed[alg]++;
        }
        ev_async_send(kp->loop, &kp->async);
    }
    pthread_mutex_unlock(&kp->mu);
    return NULL;
}

/* On the loop: moves generated keys into the stock. */
static void on_async(struct ev_loop *loop, ev_async *w, int revents)
{
    struct keypool *kp = w->data;

    pthread_mutex_lock(&kp->mu);
    for (int i = 0; i < N_ALGS; i++) {
        struct keylist *d = &kp->done[i];
        size_t arrived = d->n + kp->failed[i];

        for (size_t k = 0; k < d->n; k++) {
            if (keylist_push(&kp->stock[i], d->keys[k]) < 0)
                keypool_key_free(d->keys[k]);
        }
        d->n = 0;
        kp->failed[i] = 0;
        kp->coming[i] = kp->coming[i] > arrived ? kp->coming[i] - arrived : 0;
    }
    pthread_mutex_unlock(&kp->mu);
}

int keypool_new(struct ev_loop *loop, struct keypool **ret_pool, struct err *e)
{
    struct keypool *kp = calloc(1, sizeof(*kp));
    int r;

    if (!kp)
        return err_set(e, -ENOMEM, "key pool: out of memory");
    kp->loop = loop;
    pthread_mutex_init(&kp->mu, NULL);
    pthread_cond_init(&kp->cv, NULL);
    if (loop) {
        ev_async_init(&kp->async, on_async);
        kp->async.data = kp;
        ev_async_start(loop, &kp->async);
        ev_unref(loop); /* the pool alone does not keep the loop running */
        r = pthread_create(&kp->thread, NULL, worker, kp);
        if (r != 0) {
            keypool_free(kp);
            return err_set(e, -r, "key pool: cannot start the worker thread");
        }
        kp->thread_started = true;
    }
    *ret_pool = kp;
    return 0;
}

void keypool_free(struct keypool *kp)
{
    if (!kp)
        return;
    if (kp->thread_started) {
        pthread_mutex_lock(&kp->mu);
        kp->stop = true;
        pthread_cond_signal(&kp->cv);
        pthread_mutex_unlock(&kp->mu);
        pthread_join(kp->thread, NULL);
    }
    if (kp->loop) {
        ev_ref(kp->loop);
        ev_async_stop(kp->loop, &kp->async);
    }
    for (int i = 0; i < N_ALGS; i++) {
        keylist_done(&kp->stock[i]);
        keylist_done(&kp->done[i]);
    }
    pthread_cond_destroy(&kp->cv);
    pthread_mutex_destroy(&kp->mu);
    free(kp);
}

int keypool_is_async(const struct keypool *kp, enum pki_key_alg alg)
{
    return kp && kp->thread_started && is_rsa(alg);
}

/* Asks the worker for n more keys of alg. */
static void request(struct keypool *kp, enum pki_key_alg alg, size_t n)
{
    if (n == 0)
        return;
    pthread_mutex_lock(&kp->mu);
    kp->todo[alg] += n;
    pthread_cond_signal(&kp->cv);
    pthread_mutex_unlock(&kp->mu);
    kp->coming[alg] += n;
}

void keypool_reserve(struct keypool *kp, enum pki_key_alg alg, size_t n)
{
    size_t have;

    if (!keypool_is_async(kp, alg))
        return;
    if (n > KEYPOOL_MAX_STOCK)
        n = KEYPOOL_MAX_STOCK;
    have = kp->stock[alg].n + kp->coming[alg];
    if (have < n)
        request(kp, alg, n - have);
}

int keypool_take(struct keypool *kp, enum pki_key_alg alg, char **ret_key_pem, struct err *e)
{
    struct keylist *s;

    if ((unsigned)alg >= N_ALGS)
        return err_set(e, -EINVAL, "unknown key algorithm %d", (int)alg);
    if (!keypool_is_async(kp, alg))
        return pki_key_generate(alg, ret_key_pem, e);
    s = &kp->stock[alg];
    if (s->n == 0) {
        if (kp->coming[alg] == 0)
            request(kp, alg, 1);
        return err_set(e, -EAGAIN, "waiting for a %s key", pki_key_alg_name(alg));
    }
    *ret_key_pem = s->keys[--s->n];
    return 0;
}

void keypool_give_back(struct keypool *kp, enum pki_key_alg alg, char *key_pem)
{
    if (!key_pem)
        return;
    if (!keypool_is_async(kp, alg) || kp->stock[alg].n >= KEYPOOL_MAX_STOCK ||
        keylist_push(&kp->stock[alg], key_pem) < 0)
        keypool_key_free(key_pem);
}

size_t keypool_stock(const struct keypool *kp, enum pki_key_alg alg)
{
    return kp && (unsigned)alg < N_ALGS ? kp->stock[alg].n : 0;
}
