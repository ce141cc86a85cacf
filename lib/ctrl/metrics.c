#include "lib/ctrl/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/buf.h"
#include "lib/util/strmap.h"

const double METRICS_BUCKETS_DEFAULT[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                          1,     2.5,  5,     10,   30,  60};
const size_t METRICS_BUCKETS_DEFAULT_LEN =
    sizeof(METRICS_BUCKETS_DEFAULT) / sizeof(METRICS_BUCKETS_DEFAULT[0]);

struct series {
    char *key; /* the label values, each as "<length>:<value>", so distinct tuples differ */
    char **values;
    double value;     /* counter, gauge */
    uint64_t *counts; /* histogram: per bucket, not cumulative */
    double sum;
    uint64_t count;
    struct series *next;
};

struct metric {
    enum metric_type type;
    char *name, *help;
    char **labels;
    size_t n_labels;
    double *buckets;
    size_t n_buckets;
    struct strmap by_key;
    struct series *head, *tail;
    struct metric *next;
};

struct collector {
    metrics_collect_fn fn;
    void *userdata;
    struct collector *next;
};

struct metrics {
    struct metric *head, *tail;
    struct strmap by_name;
    struct collector *collectors;
};

int metrics_new(struct metrics **ret_metrics)
{
    struct metrics *r = calloc(1, sizeof(*r));

    if (!r)
        return -ENOMEM;
    *ret_metrics = r;
    return 0;
}

static void series_free(struct series *s, size_t n_labels)
{
    if (!s)
        return;
    for (size_t i = 0; s->values && i < n_labels; i++)
        free(s->values[i]);
    free(s->values);
    free(s->counts);
    free(s->key);
    free(s);
}

void metric_clear(struct metric *m)
{
    struct series *s, *next;

    for (s = m->head; s; s = next) {
        next = s->next;
        series_free(s, m->n_labels);
    }
    m->head = m->tail = NULL;
    strmap_done(&m->by_key, NULL);
}

static void metric_free(struct metric *m)
{
    if (!m)
        return;
    metric_clear(m);
    for (size_t i = 0; m->labels && i < m->n_labels; i++)
        free(m->labels[i]);
    free(m->labels);
    free(m->buckets);
    free(m->name);
    free(m->help);
    free(m);
}

void metrics_free(struct metrics *r)
{
    struct metric *m, *mnext;
    struct collector *c, *cnext;

    if (!r)
        return;
    for (m = r->head; m; m = mnext) {
        mnext = m->next;
        metric_free(m);
    }
    for (c = r->collectors; c; c = cnext) {
        cnext = c->next;
        free(c);
    }
    strmap_done(&r->by_name, NULL);
    free(r);
}

static bool valid_name(const char *s, bool colon)
{
    if (!s || !*s)
        return false;
    for (size_t i = 0; s[i]; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
                  (colon && ch == ':') || (i > 0 && ch >= '0' && ch <= '9');
        if (!ok)
            return false;
    }
    return true;
}

int metrics_register(struct metrics *r, enum metric_type type, const char *name, const char *help,
                     const char *const *labels, const double *buckets, size_t n_buckets,
                     struct metric **ret_metric)
{
    struct metric *m = NULL;
    size_t n = 0;
    int ret = -EINVAL;

    if (!valid_name(name, true) || type > METRIC_SUMMARY)
        return -EINVAL;
    if (strmap_get(&r->by_name, name))
        return -EEXIST;
    for (; labels && labels[n]; n++)
        if (!valid_name(labels[n], false) || strcmp(labels[n], "le") == 0)
            return -EINVAL;
    if (type == METRIC_HISTOGRAM && !buckets) {
        buckets = METRICS_BUCKETS_DEFAULT;
        n_buckets = METRICS_BUCKETS_DEFAULT_LEN;
    }
    if (type != METRIC_HISTOGRAM)
        n_buckets = 0;
    for (size_t i = 0; i < n_buckets; i++)
        if (!isfinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1]))
            return -EINVAL;

    ret = -ENOMEM;
    m = calloc(1, sizeof(*m));
    if (!m)
        goto out;
    m->type = type;
    m->name = strdup(name);
    m->help = strdup(help ? help : "");
    if (!m->name || !m->help)
        goto out;
    if (n > 0) {
        m->labels = calloc(n, sizeof(*m->labels));
        if (!m->labels)
            goto out;
        for (m->n_labels = 0; m->n_labels < n; m->n_labels++)
            if (!(m->labels[m->n_labels] = strdup(labels[m->n_labels])))
                goto out;
    }
    if (n_buckets > 0) {
        m->buckets = malloc(n_buckets * sizeof(*m->buckets));
        if (!m->buckets)
            goto out;
        memcpy(m->buckets, buckets, n_buckets * sizeof(*m->buckets));
        m->n_buckets = n_buckets;
    }
    if (strmap_put(&r->by_name, m->name, m) < 0)
        goto out;
    if (r->tail)
        r->tail->next = m;
    else
        r->head = m;
    r->tail = m;
    if (ret_metric)
        *ret_metric = m;
    return 0;
out:
    metric_free(m);
    return ret;
}

struct metric *metrics_find(const struct metrics *r, const char *name)
{
    return strmap_get(&r->by_name, name);
}

static int series_key(const struct metric *m, const char *const *values, struct buf *key)
{
    for (size_t i = 0; i < m->n_labels; i++) {
        const char *v = values && values[i] ? values[i] : "";
        if (buf_printf(key, "%zu:", strlen(v)) < 0 || buf_puts(key, v) < 0)
            return -ENOMEM;
    }
    return buf_puts(key, "") < 0 ? -ENOMEM : 0;
}

static struct series *series_lookup(const struct metric *m, const char *const *values)
{
    struct buf key = BUF_INIT;
    struct series *s = NULL;

    if (series_key(m, values, &key) == 0)
        s = strmap_get(&m->by_key, key.data);
    buf_done(&key);
    return s;
}

/* The series for values, created if needed; NULL when out of memory. */
static struct series *series_get(struct metric *m, const char *const *values)
{
    struct buf key = BUF_INIT;
    struct series *s;

    if (series_key(m, values, &key) < 0)
        goto oom;
    s = strmap_get(&m->by_key, key.data);
    if (s) {
        buf_done(&key);
        return s;
    }
    s = calloc(1, sizeof(*s));
    if (!s)
        goto oom;
    if (m->n_labels > 0) {
        s->values = calloc(m->n_labels, sizeof(*s->values));
        if (!s->values)
            goto oom_series;
        for (size_t i = 0; i < m->n_labels; i++)
            if (!(s->values[i] = strdup(values && values[i] ? values[i] : "")))
                goto oom_series;
    }
    if (m->n_buckets > 0 && !(s->counts = calloc(m->n_buckets, sizeof(*s->counts))))
        goto oom_series;
    s->key = buf_steal(&key);
    if (!s->key || strmap_put(&m->by_key, s->key, s) < 0)
        goto oom_series;
    if (m->tail)
        m->tail->next = s;
    else
        m->head = s;
    m->tail = s;
    return s;
oom_series:
    series_free(s, m->n_labels);
oom:
    buf_done(&key);
    return NULL;
}

int metric_add(struct metric *m, const char *const *label_values, double delta)
{
    struct series *s;

    if (m->type != METRIC_COUNTER && m->type != METRIC_GAUGE)
        return -EINVAL;
    if (!(s = series_get(m, label_values)))
        return -ENOMEM;
    s->value += delta;
    return 0;
}

int metric_set(struct metric *m, const char *const *label_values, double value)
{
    struct series *s;

    if (m->type != METRIC_COUNTER && m->type != METRIC_GAUGE)
        return -EINVAL;
    if (!(s = series_get(m, label_values)))
        return -ENOMEM;
    s->value = value;
    return 0;
}

int metric_observe(struct metric *m, const char *const *label_values, double value)
{
    struct series *s;

    if (m->type != METRIC_HISTOGRAM && m->type != METRIC_SUMMARY)
        return -EINVAL;
    if (!(s = series_get(m, label_values)))
        return -ENOMEM;
    for (size_t i = 0; i < m->n_buckets; i++) {
        if (value <= m->buckets[i]) {
            s->counts[i]++;
            break;
        }
    }
    s->sum += value;
    s->count++;
    return 0;
}

int metric_set_summary(struct metric *m, const char *const *label_values, double sum,
                       uint64_t count)
{
    struct series *s;

    if (m->type != METRIC_SUMMARY)
        return -EINVAL;
    if (!(s = series_get(m, label_values)))
        return -ENOMEM;
    s->sum = sum;
    s->count = count;
    return 0;
}

double metric_value(const struct metric *m, const char *const *label_values)
{
    const struct series *s = series_lookup(m, label_values);

    if (!s)
        return 0;
    if (m->type == METRIC_HISTOGRAM || m->type == METRIC_SUMMARY)
        return (double)s->count;
    return s->value;
}

int metrics_add_collector(struct metrics *r, metrics_collect_fn fn, void *userdata)
{
    struct collector *c = calloc(1, sizeof(*c)), **tail = &r->collectors;

    if (!c)
        return -ENOMEM;
    c->fn = fn;
    c->userdata = userdata;
    while (*tail)
        tail = &(*tail)->next;
    *tail = c;
    return 0;
}

void metrics_remove_collector(struct metrics *r, metrics_collect_fn fn, void *userdata)
{
    for (struct collector **p = &r->collectors; *p; p = &(*p)->next) {
        if ((*p)->fn == fn && (*p)->userdata == userdata) {
            struct collector *c = *p;
            *p = c->next;
            free(c);
            return;
        }
    }
}

/* ---- text format ---- */

/* Formats v as Prometheus writes numbers: integers without a fraction, +Inf, NaN. */
static void format_number(char out[static 32], double v)
{
    if (isnan(v))
        snprintf(out, 32, "NaN");
    else if (isinf(v))
        snprintf(out, 32, "%s", v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        snprintf(out, 32, "%.0f", v);
    else {
        /* The shortest of %.15g..%.17g that reads back as v: 0.1, not 0.10000000000000001. */
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(out, 32, "%.*g", prec, v);
            if (strtod(out, NULL) == v)
                break;
        }
    }
}

/* Escapes \ and newline (HELP), and " too in label values. */
static int put_escaped(struct buf *out, const char *s, bool quote)
{
    for (; *s; s++) {
        int r;
        if (*s == '\\')
            r = buf_puts(out, "\\\\");
        else if (*s == '\n')
            r = buf_puts(out, "\\n");
        else if (quote && *s == '"')
            r = buf_puts(out, "\\\"");
        else
            r = buf_append(out, s, 1);
        if (r < 0)
            return r;
    }
    return 0;
}

/* `{a="x",b="y"` plus `le` when not NULL, then `}`; nothing when there are no labels. */
static int put_labels(struct buf *out, const struct metric *m, const struct series *s,
                      const char *le)
{
    int r = 0;

    if (m->n_labels == 0 && !le)
        return 0;
    r = buf_puts(out, "{");
    for (size_t i = 0; r >= 0 && i < m->n_labels; i++) {
        r = buf_printf(out, "%s%s=\"", i ? "," : "", m->labels[i]);
        if (r >= 0)
            r = put_escaped(out, s->values[i], true);
        if (r >= 0)
            r = buf_puts(out, "\"");
    }
    if (r >= 0 && le)
        r = buf_printf(out, "%sle=\"%s\"", m->n_labels ? "," : "", le);
    if (r >= 0)
        r = buf_puts(out, "}");
    return r;
}

static int put_sample(struct buf *out, const struct metric *m, const char *suffix,
                      const struct series *s, const char *le, double v)
{
    int r = buf_printf(out, "%s%s", m->name, suffix);
    char num[32];

    if (r >= 0)
        r = put_labels(out, m, s, le);
    format_number(num, v);
    if (r >= 0)
        r = buf_printf(out, " %s\n", num);
    return r;
}

static int put_series(struct buf *out, const struct metric *m, const struct series *s)
{
    uint64_t cumulative = 0;
    char le[32];
    int r = 0;

    switch (m->type) {
    case METRIC_COUNTER:
    case METRIC_GAUGE:
        return put_sample(out, m, "", s, NULL, s->value);
    case METRIC_HISTOGRAM:
        for (size_t i = 0; r >= 0 && i < m->n_buckets; i++) {
            cumulative += s->counts[i];
            format_number(le, m->buckets[i]);
            r = put_sample(out, m, "_bucket", s, le, (double)cumulative);
        }
        if (r >= 0)
            r = put_sample(out, m, "_bucket", s, "+Inf", (double)s->count);
        /* fall through */
    case METRIC_SUMMARY:
        if (r >= 0)
            r = put_sample(out, m, "_sum", s, NULL, s->sum);
        if (r >= 0)
            r = put_sample(out, m, "_count", s, NULL, (double)s->count);
        return r;
    }
    return -EINVAL;
}

int metrics_render(struct metrics *r, struct buf *out)
{
    static const char *const type_names[] = {"counter", "gauge", "histogram", "summary"};
    int ret = 0;

    for (struct collector *c = r->collectors; c; c = c->next)
        c->fn(c->userdata, r);
    for (const struct metric *m = r->head; ret >= 0 && m; m = m->next) {
        ret = buf_printf(out, "# HELP %s ", m->name);
        if (ret >= 0)
            ret = put_escaped(out, m->help, false);
        if (ret >= 0)
            ret = buf_printf(out, "\n# TYPE %s %s\n", m->name, type_names[m->type]);
        for (const struct series *s = m->head; ret >= 0 && s; s = s->next)
            ret = put_series(out, m, s);
    }
    return ret < 0 ? ret : 0;
}
