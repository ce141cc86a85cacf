#ifndef NESTCP_KUBE_WORKQUEUE_H
#define NESTCP_KUBE_WORKQUEUE_H

/*
 * A rate-limited work queue of string keys ("namespace/name") on a libev loop, with the
 * semantics of client-go's workqueue:
 *
 *   - a key is queued at most once: adding a queued key again does nothing (FIFO order is kept);
 *   - a key is never handed out twice at once; adding it while it is being processed marks it,
 *     and it is queued once more when that processing is done;
 *   - workqueue_add_after() waits before adding; a key already waiting keeps the earlier time;
 *   - a failed key is retried after max(per-key exponential backoff, overall token bucket):
 *     base_delay * 2^failures capped at max_delay, and at most qps retries per second after a
 *     burst (client-go's default controller rate limiter); success resets the key's backoff.
 *
 * The queue hands out up to `concurrency` keys at once by calling process() from the loop (never
 * from inside workqueue_add). The callback, or any later callback once the work it started has
 * finished, reports the outcome with workqueue_done(). Keys are copied; the key passed to
 * process() stays valid until workqueue_done() is called for it.
 */

#include <stdbool.h>
#include <stdint.h>

struct ev_loop;
struct workqueue;

typedef void (*workqueue_process_fn)(void *userdata, const char *key);

struct workqueue_opts {
    int concurrency;   /* keys processed at once; 0: 1 */
    double base_delay; /* first retry delay in seconds; 0: 0.005 */
    double max_delay;  /* longest retry delay in seconds; 0: 1000 */
    double qps;        /* overall retry rate; 0: 10; negative: no overall bound */
    int burst;         /* retries allowed at once before qps applies; 0: 100 */
};

enum workqueue_outcome {
    WORKQUEUE_SUCCESS,       /* forget the key's failures */
    WORKQUEUE_ERROR,         /* retry after the rate-limited delay */
    WORKQUEUE_REQUEUE_AFTER, /* forget the key's failures and process it again after `after` */
};

struct workqueue_result {
    enum workqueue_outcome outcome;
    /* Seconds. WORKQUEUE_REQUEUE_AFTER: the delay. WORKQUEUE_ERROR: the least delay (a
     * server's Retry-After), whatever the backoff says; 0: the backoff alone. */
    double after;
};

#define WORKQUEUE_RESULT_SUCCESS ((struct workqueue_result){WORKQUEUE_SUCCESS, 0})
#define WORKQUEUE_RESULT_ERROR ((struct workqueue_result){WORKQUEUE_ERROR, 0})
#define WORKQUEUE_RESULT_ERROR_AFTER(s) ((struct workqueue_result){WORKQUEUE_ERROR, (s)})
#define WORKQUEUE_RESULT_REQUEUE_AFTER(s) ((struct workqueue_result){WORKQUEUE_REQUEUE_AFTER, (s)})

/* Counters for export as Prometheus metrics (names follow client-go's workqueue_*). */
struct workqueue_metrics {
    uint64_t depth;                /* keys queued and ready, now (gauge) */
    uint64_t waiting;              /* keys waiting for a delay to pass, now (gauge) */
    uint64_t in_flight;            /* keys being processed, now (gauge) */
    uint64_t adds;                 /* adds that queued a key (not deduplicated ones) */
    uint64_t retries;              /* rate-limited re-adds after an error */
    double queue_duration_sum;     /* seconds between queueing and handing out */
    uint64_t queue_duration_count; /* keys handed out */
    double work_duration_sum;      /* seconds between handing out and workqueue_done */
    uint64_t work_duration_count;  /* keys done */
};

/* Creates a queue on loop; opts may be NULL for the defaults. process and userdata are borrowed.
 * Returns 0, -EINVAL (bad option), -ENOMEM. */
int workqueue_new(struct ev_loop *loop, const struct workqueue_opts *opts,
                  workqueue_process_fn process, void *userdata, struct workqueue **ret_queue);

/* Stops every timer and frees the queue. Keys still being processed are abandoned: do not call
 * workqueue_done for them afterwards. Accepts NULL. */
void workqueue_free(struct workqueue *q);

/* Queues key unless it is already queued. Returns 0, -ESHUTDOWN after shutdown, -ENOMEM. */
int workqueue_add(struct workqueue *q, const char *key);

/* Queues key after delay seconds (now, if delay <= 0); a key already waiting keeps the earlier
 * of the two times. Returns 0, -ESHUTDOWN, -ENOMEM. */
int workqueue_add_after(struct workqueue *q, const char *key, double delay);

/* Queues key after its rate-limited retry delay and counts one more failure for it.
 * Returns 0, -ESHUTDOWN, -ENOMEM. */
int workqueue_add_rate_limited(struct workqueue *q, const char *key);

/* Resets key's failure count (its backoff starts again from base_delay). */
void workqueue_forget(struct workqueue *q, const char *key);

/* Failures counted for key since it was last forgotten. */
unsigned workqueue_num_requeues(const struct workqueue *q, const char *key);

/* The delay in seconds a failure of key reported now would get (the larger of its backoff and
 * the overall bucket's wait), without counting that failure. For log lines ("retry in 0.32s"). */
double workqueue_retry_delay(const struct workqueue *q, const char *key);

/* Reports that processing of key (handed out by process()) has finished with result, and
 * applies it: SUCCESS forgets the key, ERROR re-adds it rate-limited and not before
 * result.after, REQUEUE_AFTER forgets it and re-adds it after result.after. A key added during
 * processing is queued again.
 * Returns 0, or -ENOENT if key is not being processed. After shutdown, nothing is re-added. */
int workqueue_done(struct workqueue *q, const char *key, struct workqueue_result result);

/* Stops handing out keys, drops queued and waiting keys, and refuses new ones. Keys being
 * processed still report workqueue_done; once none is left, drained (if not NULL) runs once,
 * from the loop. */
void workqueue_shutdown(struct workqueue *q, void (*drained)(void *userdata), void *userdata);

bool workqueue_shutting_down(const struct workqueue *q);

/* Live counters, borrowed for the queue's lifetime. */
const struct workqueue_metrics *workqueue_metrics(const struct workqueue *q);

#endif
