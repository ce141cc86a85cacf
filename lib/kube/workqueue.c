#include "lib/kube/workqueue.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "lib/util/list.h"
#include "lib/util/strmap.h"
#include "lib/util/strutil.h"

/*
 * Each key known to the queue has one item. An item lives while it is dirty (needs processing),
 * being processed, waiting on its delay timer, or has failures to remember; it is freed as soon
 * as none of these holds. A dirty item that is not being processed sits in the FIFO.
 */
struct item {
    struct workqueue *q;
    char *key;
    bool dirty;
    bool processing;
    bool queued; /* in the FIFO, by fifo_node */
    struct list_node fifo_node;
    struct list_node all_node;
    ev_timer delay;  /* active while waiting; data points back to the item */
    double ready_at; /* loop time the delay ends */
    unsigned failures;
    double queued_at; /* monotonic seconds, for the metrics */
    double started_at;
};

struct workqueue {
    struct ev_loop *loop;
    struct workqueue_opts opts;
    workqueue_process_fn process;
    void *userdata;
    struct strmap items;
    /* Every item, for shutdown and free; the dirty items waiting for a worker, oldest first. */
    struct list_node all, fifo;
    ev_timer kick; /* zero-delay timer that hands out keys on the next loop iteration */
    double tokens; /* overall retry bucket */
    double tokens_at;
    bool shutting_down;
    bool drained_pending;
    void (*drained)(void *userdata);
    void *drained_userdata;
    struct workqueue_metrics metrics;
};

static void on_delay(struct ev_loop *loop, ev_timer *w, int revents);
static void on_kick(struct ev_loop *loop, ev_timer *w, int revents);

static struct item *item_get_or_new(struct workqueue *q, const char *key)
{
    struct item *it = strmap_get(&q->items, key);

    if (it)
        return it;
    it = calloc(1, sizeof(*it));
    if (!it)
        return NULL;
    it->key = strdup(key);
    if (!it->key || strmap_put(&q->items, it->key, it) < 0) {
        free(it->key);
        free(it);
        return NULL;
    }
    it->q = q;
    ev_timer_init(&it->delay, on_delay, 0, 0);
    it->delay.data = it;
    list_init(&it->fifo_node);
    list_add_head(&q->all, &it->all_node);
    return it;
}

static void item_free(struct workqueue *q, struct item *it)
{
    ev_timer_stop(q->loop, &it->delay);
    strmap_remove(&q->items, it->key);
    list_remove(&it->fifo_node);
    list_remove(&it->all_node);
    free(it->key);
    free(it);
}

static void item_release_if_idle(struct workqueue *q, struct item *it)
{
    if (!it->dirty && !it->processing && !ev_is_active(&it->delay) && it->failures == 0)
        item_free(q, it);
}

static void schedule_dispatch(struct workqueue *q)
{
    bool work = !list_empty(&q->fifo) && q->metrics.in_flight < (uint64_t)q->opts.concurrency;

    if (q->shutting_down)
        work = q->drained_pending && q->metrics.in_flight == 0;
    if (work && !ev_is_active(&q->kick)) {
        ev_timer_set(&q->kick, 0, 0);
        ev_timer_start(q->loop, &q->kick);
    }
}

static void fifo_push(struct workqueue *q, struct item *it)
{
    it->queued = true;
    it->queued_at = time_mono();
    list_add_tail(&q->fifo, &it->fifo_node);
    q->metrics.depth++;
    schedule_dispatch(q);
}

static struct item *fifo_pop(struct workqueue *q)
{
    struct list_node *n = list_first(&q->fifo);
    struct item *it;

    if (!n)
        return NULL;
    it = list_entry(n, struct item, fifo_node);
    list_remove(n);
    it->queued = false;
    q->metrics.depth--;
    return it;
}

int workqueue_new(struct ev_loop *loop, const struct workqueue_opts *opts,
                  workqueue_process_fn process, void *userdata, struct workqueue **ret_queue)
{
    struct workqueue_opts o = opts ? *opts : (struct workqueue_opts){0};
    struct workqueue *q;

    if (!loop || !process || o.concurrency < 0 || o.base_delay < 0 || o.max_delay < 0 ||
        o.burst < 0)
        return -EINVAL;
    if (o.concurrency == 0)
        o.concurrency = 1;
    if (o.base_delay == 0)
        o.base_delay = 0.005;
    if (o.max_delay == 0)
        o.max_delay = 1000;
    if (o.qps == 0)
        o.qps = 10;
    if (o.burst == 0)
        o.burst = 100;
    if (o.max_delay < o.base_delay)
        return -EINVAL;

    q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->loop = loop;
    list_init(&q->all);
    list_init(&q->fifo);
    q->opts = o;
    q->process = process;
    q->userdata = userdata;
    q->tokens = o.burst;
    q->tokens_at = time_mono();
    ev_timer_init(&q->kick, on_kick, 0, 0);
    q->kick.data = q;
    *ret_queue = q;
    return 0;
}

void workqueue_free(struct workqueue *q)
{
    if (!q)
        return;
    ev_timer_stop(q->loop, &q->kick);
    while (!list_empty(&q->all))
        item_free(q, list_entry(list_first(&q->all), struct item, all_node));
    strmap_done(&q->items, NULL);
    free(q);
}

int workqueue_add(struct workqueue *q, const char *key)
{
    struct item *it;

    if (q->shutting_down)
        return -ESHUTDOWN;
    it = item_get_or_new(q, key);
    if (!it)
        return -ENOMEM;
    if (it->dirty)
        return 0;
    it->dirty = true;
    q->metrics.adds++;
    if (!it->processing)
        fifo_push(q, it);
    return 0;
}

int workqueue_add_after(struct workqueue *q, const char *key, double delay)
{
    struct item *it;
    double ready;

    if (q->shutting_down)
        return -ESHUTDOWN;
    if (delay <= 0)
        return workqueue_add(q, key);
    it = item_get_or_new(q, key);
    if (!it)
        return -ENOMEM;
    /* The loop's notion of now may be stale by the time spent in this iteration; refresh it so
     * the delay counts from the call. */
    ev_now_update(q->loop);
    ready = ev_now(q->loop) + delay;
    if (ev_is_active(&it->delay)) {
        if (it->ready_at <= ready)
            return 0;
        ev_timer_stop(q->loop, &it->delay);
        q->metrics.waiting--;
    }
    it->ready_at = ready;
    ev_timer_set(&it->delay, delay, 0);
    ev_timer_start(q->loop, &it->delay);
    q->metrics.waiting++;
    return 0;
}

/* base_delay * 2^failures, capped. */
static double backoff_delay(const struct workqueue *q, unsigned failures)
{
    double d = ldexp(q->opts.base_delay, failures < 1024 ? (int)failures : 1024);

    return d < q->opts.max_delay ? d : q->opts.max_delay;
}

/* A token bucket whose level may go negative, like golang.org/x/time/rate's Reserve: taking a
 * token returns how long until that token has been refilled. */
static double bucket_level(const struct workqueue *q, double now)
{
    double tokens = q->tokens + (now - q->tokens_at) * q->opts.qps;

    return tokens < q->opts.burst ? tokens : q->opts.burst;
}

static double bucket_take(struct workqueue *q)
{
    double now = time_mono();

    if (q->opts.qps < 0)
        return 0;
    q->tokens = bucket_level(q, now) - 1;
    q->tokens_at = now;
    return q->tokens >= 0 ? 0 : -q->tokens / q->opts.qps;
}

double workqueue_retry_delay(const struct workqueue *q, const char *key)
{
    const struct item *it = strmap_get(&q->items, key);
    double a = backoff_delay(q, it ? it->failures : 0);
    double b = 0;

    if (q->opts.qps >= 0) {
        double tokens = bucket_level(q, time_mono()) - 1;

        b = tokens >= 0 ? 0 : -tokens / q->opts.qps;
    }
    return a > b ? a : b;
}

/* The rate-limited re-add, waiting at least `least` seconds (a server's Retry-After). */
static int add_rate_limited(struct workqueue *q, const char *key, double least)
{
    struct item *it;
    double a, b;

    if (q->shutting_down)
        return -ESHUTDOWN;
    it = item_get_or_new(q, key);
    if (!it)
        return -ENOMEM;
    a = backoff_delay(q, it->failures);
    if (it->failures < UINT_MAX)
        it->failures++;
    b = bucket_take(q);
    q->metrics.retries++;
    if (b > a)
        a = b;
    return workqueue_add_after(q, key, a > least ? a : least);
}

int workqueue_add_rate_limited(struct workqueue *q, const char *key)
{
    return add_rate_limited(q, key, 0);
}

void workqueue_forget(struct workqueue *q, const char *key)
{
    struct item *it = strmap_get(&q->items, key);

    if (!it)
        return;
    it->failures = 0;
    item_release_if_idle(q, it);
}

unsigned workqueue_num_requeues(const struct workqueue *q, const char *key)
{
    const struct item *it = strmap_get(&q->items, key);

    return it ? it->failures : 0;
}

int workqueue_done(struct workqueue *q, const char *key, struct workqueue_result result)
{
    struct item *it = strmap_get(&q->items, key);
    int r = 0;

    if (!it || !it->processing)
        return -ENOENT;
    it->processing = false;
    q->metrics.in_flight--;
    q->metrics.work_duration_sum += time_mono() - it->started_at;
    q->metrics.work_duration_count++;

    if (q->shutting_down) {
        item_free(q, it);
        schedule_dispatch(q);
        return 0;
    }
    if (it->dirty)
        fifo_push(q, it);
    /* key may be it->key: from here on only it->key is used, and not after the release. */
    switch (result.outcome) {
    case WORKQUEUE_SUCCESS:
        it->failures = 0;
        break;
    case WORKQUEUE_ERROR:
        r = add_rate_limited(q, it->key, result.after);
        break;
    case WORKQUEUE_REQUEUE_AFTER:
        it->failures = 0;
        r = workqueue_add_after(q, it->key, result.after);
        break;
    }
    item_release_if_idle(q, it);
    schedule_dispatch(q);
    return r;
}

static void on_delay(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct item *it = w->data;
    struct workqueue *q = it->q;

    q->metrics.waiting--;
    /* The item exists, so adding cannot fail for lack of memory. */
    workqueue_add(q, it->key);
}

static void on_kick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct workqueue *q = w->data;
    uint64_t n = q->metrics.depth;
    struct item *it;

    if (q->shutting_down) {
        if (q->drained_pending && q->metrics.in_flight == 0) {
            q->drained_pending = false;
            if (q->drained)
                q->drained(q->drained_userdata);
        }
        return;
    }
    /* Hand out at most the keys queued now, so a key that is re-added and finished
     * synchronously inside process() waits for the next iteration instead of spinning here. */
    while (n-- > 0 && !q->shutting_down && q->metrics.in_flight < (uint64_t)q->opts.concurrency &&
           (it = fifo_pop(q))) {
        double now = time_mono();

        it->dirty = false;
        it->processing = true;
        it->started_at = now;
        q->metrics.in_flight++;
        q->metrics.queue_duration_sum += now - it->queued_at;
        q->metrics.queue_duration_count++;
        /* it may be freed by a synchronous workqueue_done inside process(). */
        q->process(q->userdata, it->key);
    }
    schedule_dispatch(q);
}

void workqueue_shutdown(struct workqueue *q, void (*drained)(void *userdata), void *userdata)
{
    struct list_node *n, *next;

    if (q->shutting_down)
        return;
    q->shutting_down = true;
    q->drained = drained;
    q->drained_userdata = userdata;
    q->drained_pending = true;
    q->metrics.depth = 0;
    q->metrics.waiting = 0;
    list_foreach_safe(n, next, &q->all) {
        struct item *it = list_entry(n, struct item, all_node);

        list_remove(&it->fifo_node);
        ev_timer_stop(q->loop, &it->delay);
        it->queued = false;
        it->dirty = false;
        it->failures = 0;
        item_release_if_idle(q, it);
    }
    ev_timer_stop(q->loop, &q->kick);
    schedule_dispatch(q);
}

bool workqueue_shutting_down(const struct workqueue *q)
{
    return q->shutting_down;
}

const struct workqueue_metrics *workqueue_metrics(const struct workqueue *q)
{
    return &q->metrics;
}
