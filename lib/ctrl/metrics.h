#ifndef NESTCP_CTRL_METRICS_H
#define NESTCP_CTRL_METRICS_H

/*
 * A registry of metrics, rendered in the Prometheus text exposition format (version 0.0.4).
 *
 * A family has a type, a name, help text and fixed label names; each distinct tuple of label
 * values is one series, created on first use. Collectors registered with
 * metrics_add_collector() run at the start of every render, to copy values from live sources
 * (workqueue counters, informer statistics) or to rebuild gauges whose series come and go
 * (metric_clear(), then metric_set() for each current series).
 *
 *     struct metric *m;
 *     metrics_register(r, METRIC_GAUGE, "app_widgets", "Widgets by phase.",
 *                      (const char *[]){"phase", NULL}, NULL, 0, &m);
 *     metric_set(m, (const char *[]){"Ready"}, 3);
 *
 * Everything runs on the loop; nothing here is thread-safe. Families are borrowed from the
 * registry and live until metrics_free().
 */

#include <stddef.h>
#include <stdint.h>

struct buf;
struct metric;
struct metrics;

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Bound on the rendered text. */
#define METRICS_TEXT_MAX ((size_t)16 << 20)

enum metric_type {
    METRIC_COUNTER,
    METRIC_GAUGE,
    METRIC_HISTOGRAM,
    METRIC_SUMMARY, /* only _sum and _count, no quantiles */
};

int metrics_new(struct metrics **ret_metrics);
void metrics_free(struct metrics *r);

/* Registers a family. name matches [a-zA-Z_:][a-zA-Z0-9_:]*, labels is a NULL-terminated array
 * of label names matching [a-zA-Z_][a-zA-Z0-9_]* (NULL: none); both are copied. buckets
 * (histograms only) are ascending finite upper bounds, copied; NULL takes METRICS_BUCKETS_DEFAULT.
 * Returns 0, -EEXIST (the name is taken), -EINVAL (bad name, label or buckets), -ENOMEM. */
int metrics_register(struct metrics *r, enum metric_type type, const char *name, const char *help,
                     const char *const *labels, const double *buckets, size_t n_buckets,
                     struct metric **ret_metric);

/* The family registered under name, or NULL. */
struct metric *metrics_find(const struct metrics *r, const char *name);

/* label_values holds one string per label name (NULL when the family has no labels); they are
 * copied when a series is created. Each returns 0 or -ENOMEM (the series could not be created),
 * or -EINVAL when the call does not fit the family's type. */

/* Counters and gauges: adds delta. */
int metric_add(struct metric *m, const char *const *label_values, double delta);
/* Gauges, and counters mirrored from a live source: sets the value. */
int metric_set(struct metric *m, const char *const *label_values, double value);
/* Histograms and summaries: records one observation. */
int metric_observe(struct metric *m, const char *const *label_values, double value);
/* Summaries mirrored from a live source: sets the sum and count. */
int metric_set_summary(struct metric *m, const char *const *label_values, double sum,
                       uint64_t count);
/* The current value of a counter or gauge series, or the count of a histogram or summary
 * series; 0 when the series does not exist. */
double metric_value(const struct metric *m, const char *const *label_values);
/* Drops every series of the family. */
void metric_clear(struct metric *m);

typedef void (*metrics_collect_fn)(void *userdata, struct metrics *r);

/* Adds a collector, run at the start of each metrics_render() in the order added.
 * Returns 0 or -ENOMEM. */
int metrics_add_collector(struct metrics *r, metrics_collect_fn fn, void *userdata);
/* Removes the collector added with the same fn and userdata, if any. */
void metrics_remove_collector(struct metrics *r, metrics_collect_fn fn, void *userdata);

/* Runs the collectors, then appends every family (in registration order, each series in
 * creation order) to out. Returns 0, -ENOBUFS (out's cap), -ENOMEM. */
int metrics_render(struct metrics *r, struct buf *out);

/* Request durations from 5 ms to 60 s. */
extern const double METRICS_BUCKETS_DEFAULT[];
extern const size_t METRICS_BUCKETS_DEFAULT_LEN;

#endif
