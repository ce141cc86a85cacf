/* The client-wide rate limit (pace.h). */

#include "lib/kube/pace.h"

static bool take_token(struct kube_pacer *p)
{
    double now = ev_now(p->loop);

    if (p->qps <= 0)
        return true;
    p->tokens += (now - p->filled) * p->qps;
    p->filled = now;
    if (p->tokens > p->burst)
        p->tokens = p->burst;
    if (p->tokens < 1)
        return false;
    p->tokens -= 1;
    return true;
}

/* Runs the timer for the first waiter's token, if there is a waiter. */
static void arm(struct kube_pacer *p)
{
    if (ev_is_active(&p->timer) || list_empty(&p->waiting))
        return;
    ev_timer_set(&p->timer, (1 - p->tokens) / p->qps, 0.);
    ev_timer_start(p->loop, &p->timer);
}

static void timer_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
    struct kube_pacer *p = t->data;

    while (!list_empty(&p->waiting) && take_token(p)) {
        struct kube_pace *w = list_entry(list_first(&p->waiting), struct kube_pace, link);

        list_remove(&w->link);
        w->go(w);
    }
    arm(p);
}

void kube_pacer_init(struct kube_pacer *p, struct ev_loop *loop)
{
    *p = (struct kube_pacer){.loop = loop, .burst = 1};
    list_init(&p->waiting);
    ev_timer_init(&p->timer, timer_cb, 0., 0.);
    p->timer.data = p;
}

void kube_pacer_done(struct kube_pacer *p)
{
    ev_timer_stop(p->loop, &p->timer);
}

void kube_pacer_set(struct kube_pacer *p, double qps, int burst)
{
    p->qps = qps > 0 ? qps : 0;
    p->burst = burst > 0 ? burst : 1;
    p->tokens = p->burst;
    p->filled = ev_now(p->loop);
}

void kube_pace_init(struct kube_pace *w, void (*go)(struct kube_pace *w))
{
    list_init(&w->link);
    w->go = go;
}

bool kube_pacer_take(struct kube_pacer *p, struct kube_pace *w)
{
    if (list_empty(&p->waiting) && take_token(p))
        return true;
    list_add_tail(&p->waiting, &w->link);
    p->throttled++;
    arm(p);
    return false;
}

void kube_pace_cancel(struct kube_pace *w)
{
    list_remove(&w->link);
}
