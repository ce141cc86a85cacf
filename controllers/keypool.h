#ifndef NESTCP_CONTROLLERS_KEYPOOL_H
#define NESTCP_CONTROLLERS_KEYPOOL_H

/*
 * Private keys generated off the event loop. An ECDSA key costs about 0.06 ms and is
 * generated where it is needed; an RSA key costs 0.2-0.6 s (docs/certificates.md, "Cost, and
 * the event loop"), so RSA keys come from a stock that one worker thread fills. The worker
 * hands each key back through an ev_async watcher; the stock is only touched on the loop.
 *
 * A reconcile that needs RSA keys first reserves as many as it needs, then takes them one by
 * one; a take that finds the stock empty returns -EAGAIN, and the reconcile gives back what it
 * took and asks to be requeued shortly (NESTED_KEY_WAIT). Keys never leave the process and
 * are wiped when freed.
 */

#include <stddef.h>

#include "lib/pki/key.h"
#include "lib/util/err.h"

struct ev_loop;
struct keypool;

/* Bound on the keys of one algorithm held or being generated at once. */
#define KEYPOOL_MAX_STOCK 64

/* Creates a pool whose worker reports to loop. loop NULL: no thread, every key is generated
 * inline (tools and tests). Returns 0, -ENOMEM, or a negative code if the thread cannot start
 * (detail in e). */
int keypool_new(struct ev_loop *loop, struct keypool **ret_pool, struct err *e);

/* Stops the worker (waiting for the key it is generating), wipes and frees every key. Only on
 * the loop's thread. Accepts NULL. */
void keypool_free(struct keypool *kp);

/* Asks for at least n keys of alg to be in stock or on their way (up to KEYPOOL_MAX_STOCK).
 * Does nothing for algorithms generated inline. */
void keypool_reserve(struct keypool *kp, enum pki_key_alg alg, size_t n);

/* Takes a key of alg: generated now for ECDSA (or without a worker), else from the stock.
 * Returns 0 with *ret_key_pem (the caller frees it, after wiping), -EAGAIN when the stock is
 * empty (one more key is then on its way), -EINVAL (unknown alg), -ENOMEM. */
int keypool_take(struct keypool *kp, enum pki_key_alg alg, char **ret_key_pem, struct err *e);

/* Returns an unused key to the stock (takes key_pem; it is wiped if the stock is full). */
void keypool_give_back(struct keypool *kp, enum pki_key_alg alg, char *key_pem);

/* Keys of alg in stock now (for tests and metrics). */
size_t keypool_stock(const struct keypool *kp, enum pki_key_alg alg);

/* Whether keys of alg come from the worker (RSA with a worker). */
int keypool_is_async(const struct keypool *kp, enum pki_key_alg alg);

/* Wipes and frees a key PEM. Accepts NULL. */
void keypool_key_free(char *key_pem);

#endif
