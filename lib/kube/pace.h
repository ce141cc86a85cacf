#ifndef NESTCP_KUBE_PACE_H
#define NESTCP_KUBE_PACE_H

/*
 * The client-wide rate limit: a token bucket of `burst` tokens refilled at `qps` a second, and
 * the queue, oldest first, of the requests and watches waiting for a token. A waiter is a
 * struct kube_pace embedded in its owner; its go callback runs from the loop when its turn
 * comes. Internal to lib/kube.
 */

#include <stdbool.h>

#include <ev.h>

#include "lib/util/list.h"

/* Embedded in a request or watch; in the pacer's queue by link while it waits. */
struct kube_pace {
    struct list_node link;
    void (*go)(struct kube_pace *w); /* sends the owner's request, from the loop */
};

/* Embedded in the client. */
struct kube_pacer {
    struct ev_loop *loop;
    double qps; /* 0: no limit */
    int burst;
    double tokens, filled;
    struct list_node waiting;
    ev_timer timer;
    unsigned long throttled; /* waiters that were queued, so far */
};

/* No limit until kube_pacer_set. */
void kube_pacer_init(struct kube_pacer *p, struct ev_loop *loop);

/* Stops the pacer's timer. Waiters still queued are their owners' to cancel. */
void kube_pacer_done(struct kube_pacer *p);

/* qps <= 0 lifts the limit; burst < 1 counts as 1. The bucket starts full. */
void kube_pacer_set(struct kube_pacer *p, double qps, int burst);

/* Makes w an idle waiter that will call go. */
void kube_pace_init(struct kube_pace *w, void (*go)(struct kube_pace *w));

/* Takes a token: true when the owner may send now; false when w was queued and w->go will
 * run from the loop when its turn comes. */
bool kube_pacer_take(struct kube_pacer *p, struct kube_pace *w);

/* Takes w out of the queue; a no-op when it is not queued. */
void kube_pace_cancel(struct kube_pace *w);

#endif
