#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "lib/kube/workqueue.h"
#include "lib/util/strutil.h"

/*
 * The queue runs on a real libev loop. Timing is only ever asserted as a lower bound (a delay
 * is never shorter than promised), which a slow machine cannot break; where an upper bound
 * matters (a cap, "the earlier time wins") it is checked through state instead of the clock.
 */

#define MAX_KEYS 64
#define MAX_RUNS 32
#define SLACK 0.002 /* seconds of timer granularity tolerated in lower bounds */

struct fixture;

/* Decides the outcome of one run of key (run counts from 0). */
typedef struct workqueue_result (*decide_fn)(struct fixture *f, int key, int run);

struct fixture {
    struct ev_loop *loop;
    struct workqueue *q;
    decide_fn decide;
    double work_time; /* 0: report done inside process(); otherwise after this many seconds */
    int nkeys;
    char keys[MAX_KEYS][32];
    int runs[MAX_KEYS];
    double started[MAX_KEYS][MAX_RUNS];
    int active[MAX_KEYS];
    int max_active_per_key;
    int in_flight;
    int max_in_flight;
    void (*during)(struct fixture *f, int key, int run); /* runs inside process() */
    int drained;
};

struct completion {
    ev_timer timer;
    struct fixture *f;
    int key;
    struct workqueue_result result;
};

static int key_index(struct fixture *f, const char *key)
{
    for (int i = 0; i < f->nkeys; i++)
        if (strcmp(f->keys[i], key) == 0)
            return i;
    assert_true(f->nkeys < MAX_KEYS);
    snprintf(f->keys[f->nkeys], sizeof(f->keys[0]), "%s", key);
    return f->nkeys++;
}

static void finish(struct fixture *f, int k, struct workqueue_result r)
{
    f->active[k]--;
    f->in_flight--;
    assert_int_equal(workqueue_done(f->q, f->keys[k], r), 0);
}

static void on_complete(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct completion *c = w->data;

    finish(c->f, c->key, c->result);
    free(c);
}

static void process(void *userdata, const char *key)
{
    struct fixture *f = userdata;
    int k = key_index(f, key);
    int run = f->runs[k]++;
    struct workqueue_result r = f->decide ? f->decide(f, k, run) : WORKQUEUE_RESULT_SUCCESS;

    assert_true(run < MAX_RUNS);
    f->started[k][run] = time_mono();
    f->active[k]++;
    if (f->active[k] > f->max_active_per_key)
        f->max_active_per_key = f->active[k];
    f->in_flight++;
    if (f->in_flight > f->max_in_flight)
        f->max_in_flight = f->in_flight;
    if (f->during)
        f->during(f, k, run);
    if (f->work_time == 0) {
        finish(f, k, r);
        return;
    }
    struct completion *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->f = f;
    c->key = k;
    c->result = r;
    ev_now_update(f->loop); /* count work_time from now, not from the iteration's start */
    ev_timer_init(&c->timer, on_complete, f->work_time, 0);
    c->timer.data = c;
    ev_timer_start(f->loop, &c->timer);
}

static struct fixture *fixture_new(const struct workqueue_opts *opts)
{
    struct fixture *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    f->loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(f->loop);
    assert_int_equal(workqueue_new(f->loop, opts, process, f, &f->q), 0);
    return f;
}

static void fixture_free(struct fixture *f)
{
    workqueue_free(f->q);
    ev_loop_destroy(f->loop);
    free(f);
}

/* Runs the loop until nothing is queued, waiting or in flight (the loop has no watchers left). */
static void run_until_idle(struct fixture *f)
{
    ev_run(f->loop, 0);
}

static int runs_of(struct fixture *f, const char *key)
{
    for (int i = 0; i < f->nkeys; i++)
        if (strcmp(f->keys[i], key) == 0)
            return f->runs[i];
    return 0;
}

static void test_workqueue__duplicate_adds_collapse_in_fifo_order(void **state)
{
    struct fixture *f = fixture_new(NULL);

    assert_int_equal(workqueue_add(f->q, "ns/a"), 0);
    assert_int_equal(workqueue_add(f->q, "ns/b"), 0);
    assert_int_equal(workqueue_add(f->q, "ns/a"), 0);
    assert_int_equal(workqueue_add(f->q, "ns/a"), 0);
    assert_int_equal(workqueue_metrics(f->q)->depth, 2);
    /* Nothing is processed from inside add. */
    assert_int_equal(f->nkeys, 0);

    run_until_idle(f);
    assert_int_equal(runs_of(f, "ns/a"), 1);
    assert_int_equal(runs_of(f, "ns/b"), 1);
    assert_string_equal(f->keys[0], "ns/a");
    assert_string_equal(f->keys[1], "ns/b");
    assert_int_equal(workqueue_metrics(f->q)->adds, 2);
    assert_int_equal(workqueue_metrics(f->q)->depth, 0);
    fixture_free(f);
}

static void add_many_during_processing(struct fixture *f, int key, int run)
{
    if (run == 0)
        for (int i = 0; i < 1000; i++)
            assert_int_equal(workqueue_add(f->q, f->keys[key]), 0);
}

static void
test_workqueue__key_added_while_processing_runs_once_more_never_concurrently(void **state)
{
    struct workqueue_opts opts = {.concurrency = 4};
    struct fixture *f = fixture_new(&opts);

    f->work_time = 0.01;
    f->during = add_many_during_processing;
    assert_int_equal(workqueue_add(f->q, "ns/hot"), 0);
    run_until_idle(f);
    /* 1000 adds during the first run collapse into exactly one more run, and with four
     * workers free the key was still never handed out twice at once. */
    assert_int_equal(runs_of(f, "ns/hot"), 2);
    assert_int_equal(f->max_active_per_key, 1);
    assert_true(f->started[0][1] >= f->started[0][0] + f->work_time - SLACK);
    fixture_free(f);
}

static void test_workqueue__concurrency_bounds_keys_in_flight(void **state)
{
    struct workqueue_opts opts = {.concurrency = 3};
    struct fixture *f = fixture_new(&opts);
    char key[32];

    f->work_time = 0.005;
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "ns/k%d", i);
        assert_int_equal(workqueue_add(f->q, key), 0);
    }
    run_until_idle(f);
    assert_int_equal(f->nkeys, 10);
    for (int i = 0; i < 10; i++)
        assert_int_equal(f->runs[i], 1);
    assert_int_equal(f->max_in_flight, 3);
    assert_int_equal(workqueue_metrics(f->q)->work_duration_count, 10);
    assert_int_equal(workqueue_metrics(f->q)->queue_duration_count, 10);
    assert_true(workqueue_metrics(f->q)->work_duration_sum >= 10 * (0.005 - SLACK));
    fixture_free(f);
}

static struct workqueue_result fail_six_times(struct fixture *f, int key, int run)
{
    return run < 6 ? WORKQUEUE_RESULT_ERROR : WORKQUEUE_RESULT_SUCCESS;
}

static void check_requeues(struct fixture *f, int key, int run)
{
    /* Each run sees the failures counted so far. */
    assert_int_equal(workqueue_num_requeues(f->q, f->keys[key]), (unsigned)run);
}

static void test_workqueue__backoff_doubles_per_failure_and_success_resets_it(void **state)
{
    struct workqueue_opts opts = {.base_delay = 0.002, .max_delay = 1, .qps = -1};
    struct fixture *f = fixture_new(&opts);

    f->decide = fail_six_times;
    f->during = check_requeues;
    assert_int_equal(workqueue_add(f->q, "ns/flaky"), 0);
    run_until_idle(f);
    assert_int_equal(runs_of(f, "ns/flaky"), 7);
    for (int i = 1; i < 7; i++) {
        double want = 0.002 * (1 << (i - 1)); /* 2, 4, 8, 16, 32, 64 ms */

        assert_true(f->started[0][i] - f->started[0][i - 1] >= want - SLACK);
    }
    assert_int_equal(workqueue_metrics(f->q)->retries, 6);
    /* Success forgot the failures: the next failure starts again from base_delay. */
    assert_int_equal(workqueue_num_requeues(f->q, "ns/flaky"), 0);
    assert_true(workqueue_retry_delay(f->q, "ns/flaky") == 0.002);
    fixture_free(f);
}

static void test_workqueue__backoff_is_capped_at_max_delay(void **state)
{
    struct workqueue_opts opts = {.base_delay = 0.005, .max_delay = 1000, .qps = -1};
    struct fixture *f = fixture_new(&opts);

    assert_true(workqueue_retry_delay(f->q, "ns/x") == 0.005);
    for (int i = 0; i < 40; i++)
        assert_int_equal(workqueue_add_rate_limited(f->q, "ns/x"), 0);
    assert_int_equal(workqueue_num_requeues(f->q, "ns/x"), 40);
    /* 0.005 * 2^40 would be 174 years. */
    assert_true(workqueue_retry_delay(f->q, "ns/x") == 1000);
    assert_true(workqueue_retry_delay(f->q, "ns/y") == 0.005);
    workqueue_forget(f->q, "ns/x");
    assert_int_equal(workqueue_num_requeues(f->q, "ns/x"), 0);
    assert_true(workqueue_retry_delay(f->q, "ns/x") == 0.005);
    fixture_free(f);
}

/* Three keys wait; when the n-th of them runs, at most 3 - n still wait (fewer when a slow
 * iteration saw several delays end at once). */
static void check_one_wait_per_key(struct fixture *f, int key, int run)
{
    assert_true(workqueue_metrics(f->q)->waiting <= (uint64_t)(3 - f->nkeys));
}

static void test_workqueue__add_after_waits_and_keeps_the_earlier_time(void **state)
{
    struct fixture *f = fixture_new(NULL);
    double t0 = time_mono();

    f->during = check_one_wait_per_key;
    assert_int_equal(workqueue_add_after(f->q, "ns/later", 0.03), 0);
    assert_int_equal(workqueue_add_after(f->q, "ns/later", 5), 0);
    assert_int_equal(workqueue_add_after(f->q, "ns/sooner", 5), 0);
    assert_int_equal(workqueue_add_after(f->q, "ns/sooner", 0.02), 0);
    assert_int_equal(workqueue_add_after(f->q, "ns/last", 0.2), 0);
    assert_int_equal(workqueue_metrics(f->q)->waiting, 3);
    assert_int_equal(workqueue_metrics(f->q)->depth, 0);
    run_until_idle(f);
    /* Each key ran once, in the order of the earlier of its two times (libev fires timers in
     * due order even when several expire in one iteration), and the 5 s waits were dropped. */
    assert_int_equal(f->nkeys, 3);
    assert_string_equal(f->keys[0], "ns/sooner");
    assert_string_equal(f->keys[1], "ns/later");
    assert_string_equal(f->keys[2], "ns/last");
    for (int i = 0; i < 3; i++)
        assert_int_equal(f->runs[i], 1);
    assert_true(f->started[0][0] - t0 >= 0.02 - SLACK);
    assert_true(f->started[1][0] - t0 >= 0.03 - SLACK);
    fixture_free(f);
}

static struct workqueue_result requeue_once(struct fixture *f, int key, int run)
{
    return run == 0 ? WORKQUEUE_RESULT_REQUEUE_AFTER(0.02) : WORKQUEUE_RESULT_SUCCESS;
}

static void test_workqueue__requeue_after_result_runs_again_later_without_backoff(void **state)
{
    struct fixture *f = fixture_new(NULL);

    f->decide = requeue_once;
    assert_int_equal(workqueue_add_rate_limited(f->q, "ns/poll"), 0);
    assert_int_equal(workqueue_num_requeues(f->q, "ns/poll"), 1);
    run_until_idle(f);
    assert_int_equal(runs_of(f, "ns/poll"), 2);
    assert_true(f->started[0][1] - f->started[0][0] >= 0.02 - SLACK);
    assert_int_equal(workqueue_num_requeues(f->q, "ns/poll"), 0);
    assert_int_equal(workqueue_metrics(f->q)->retries, 1);
    fixture_free(f);
}

static struct workqueue_result fail_with_retry_after(struct fixture *f, int key, int run)
{
    return run == 0 ? WORKQUEUE_RESULT_ERROR_AFTER(0.05) : WORKQUEUE_RESULT_SUCCESS;
}

static void test_workqueue__error_with_retry_after_waits_at_least_that_long(void **state)
{
    /* The backoff alone would retry after 1 ms; the server asked for 50 ms. */
    struct workqueue_opts opts = {.base_delay = 0.001, .qps = -1};
    struct fixture *f = fixture_new(&opts);

    f->decide = fail_with_retry_after;
    assert_int_equal(workqueue_add(f->q, "ns/throttled"), 0);
    run_until_idle(f);
    assert_int_equal(runs_of(f, "ns/throttled"), 2);
    assert_true(f->started[0][1] - f->started[0][0] >= 0.05 - SLACK);
    /* It still counts as a failure for the backoff. */
    assert_int_equal(workqueue_metrics(f->q)->retries, 1);
    fixture_free(f);
}

static struct workqueue_result fail_first_run(struct fixture *f, int key, int run)
{
    return run == 0 ? WORKQUEUE_RESULT_ERROR : WORKQUEUE_RESULT_SUCCESS;
}

static void test_workqueue__overall_bucket_bounds_retry_rate(void **state)
{
    /* 25 keys fail at once. With burst 5 and 20 retries per second, retry n (n > 5) cannot start
     * before (n - 5) / 20 s, whatever the per-key backoff says; the last one no sooner than 1 s. */
    struct workqueue_opts opts = {.concurrency = 25, .base_delay = 0.001, .qps = 20, .burst = 5};
    struct fixture *f = fixture_new(&opts);
    char key[32];
    double t0 = time_mono(), first_retry = 1e9, last_retry = 0;

    f->decide = fail_first_run;
    for (int i = 0; i < 25; i++) {
        snprintf(key, sizeof(key), "ns/k%02d", i);
        assert_int_equal(workqueue_add(f->q, key), 0);
    }
    run_until_idle(f);
    assert_int_equal(f->nkeys, 25);
    for (int i = 0; i < 25; i++) {
        assert_int_equal(f->runs[i], 2);
        if (f->started[i][1] < first_retry)
            first_retry = f->started[i][1];
        if (f->started[i][1] > last_retry)
            last_retry = f->started[i][1];
    }
    assert_int_equal(workqueue_metrics(f->q)->retries, 25);
    assert_true(first_retry >= t0 + 0.001 - SLACK);
    assert_true(last_retry - t0 >= 20 / 20.0 - SLACK);
    /* Sorted retry times: the n-th (counting from 1) is at least (n - 5) / 20 s after t0. */
    for (int n = 6; n <= 25; n++) {
        int earlier = 0;
        double bound = t0 + (n - 5) / 20.0 - SLACK;

        for (int i = 0; i < 25; i++)
            if (f->started[i][1] < bound)
                earlier++;
        assert_true(earlier < n);
    }
    fixture_free(f);
}

static void on_drained(void *userdata)
{
    struct fixture *f = userdata;

    f->drained++;
}

static void shut_down_during_first_run(struct fixture *f, int key, int run)
{
    if (f->nkeys == 1 && run == 0) {
        assert_int_equal(workqueue_add_after(f->q, "ns/waiting", 0.01), 0);
        workqueue_shutdown(f->q, on_drained, f);
        assert_true(workqueue_shutting_down(f->q));
        assert_int_equal(workqueue_add(f->q, "ns/late"), -ESHUTDOWN);
        assert_int_equal(workqueue_add_rate_limited(f->q, "ns/late"), -ESHUTDOWN);
        /* Drained only runs once the key in flight is done. */
        assert_int_equal(f->drained, 0);
    }
}

static void test_workqueue__shutdown_drops_queued_keys_and_reports_drained(void **state)
{
    struct fixture *f = fixture_new(NULL);

    f->work_time = 0.01;
    f->decide = fail_first_run;
    f->during = shut_down_during_first_run;
    assert_int_equal(workqueue_add(f->q, "ns/first"), 0);
    assert_int_equal(workqueue_add(f->q, "ns/second"), 0);
    run_until_idle(f);
    /* The failing key in flight finished but was not retried; the queued and waiting keys were
     * dropped. */
    assert_int_equal(f->nkeys, 1);
    assert_int_equal(runs_of(f, "ns/first"), 1);
    assert_int_equal(f->drained, 1);
    assert_int_equal(workqueue_metrics(f->q)->depth, 0);
    assert_int_equal(workqueue_metrics(f->q)->waiting, 0);
    assert_int_equal(workqueue_metrics(f->q)->in_flight, 0);
    fixture_free(f);
}

static void test_workqueue__done_for_a_key_not_in_flight_is_refused(void **state)
{
    struct fixture *f = fixture_new(NULL);
    struct workqueue *q;
    struct workqueue_opts bad = {.base_delay = 2, .max_delay = 1};

    assert_int_equal(workqueue_done(f->q, "ns/none", WORKQUEUE_RESULT_SUCCESS), -ENOENT);
    assert_int_equal(workqueue_add(f->q, "ns/queued"), 0);
    assert_int_equal(workqueue_done(f->q, "ns/queued", WORKQUEUE_RESULT_SUCCESS), -ENOENT);
    assert_int_equal(workqueue_new(f->loop, &bad, process, f, &q), -EINVAL);
    fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workqueue__duplicate_adds_collapse_in_fifo_order),
        cmocka_unit_test(
            test_workqueue__key_added_while_processing_runs_once_more_never_concurrently),
        cmocka_unit_test(test_workqueue__concurrency_bounds_keys_in_flight),
        cmocka_unit_test(test_workqueue__backoff_doubles_per_failure_and_success_resets_it),
        cmocka_unit_test(test_workqueue__backoff_is_capped_at_max_delay),
        cmocka_unit_test(test_workqueue__add_after_waits_and_keeps_the_earlier_time),
        cmocka_unit_test(test_workqueue__requeue_after_result_runs_again_later_without_backoff),
        cmocka_unit_test(test_workqueue__error_with_retry_after_waits_at_least_that_long),
        cmocka_unit_test(test_workqueue__overall_bucket_bounds_retry_rate),
        cmocka_unit_test(test_workqueue__shutdown_drops_queued_keys_and_reports_drained),
        cmocka_unit_test(test_workqueue__done_for_a_key_not_in_flight_is_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
