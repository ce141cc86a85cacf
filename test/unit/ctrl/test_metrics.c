#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ctrl/metrics.h"
#include "lib/util/buf.h"

/* One parsed sample line: name{labels} value. */
struct sample {
    char name[128];
    char labels[512]; /* the text between the braces, unescaped, or "" */
    double value;
};

/* Parses a label set `{a="x",b="y\"z"}` starting at *p; leaves unescaped `a=x,b=y"z` in out. */
static bool parse_labels(const char **p, char *out, size_t size)
{
    const char *s = *p;
    size_t n = 0;

    if (*s != '{')
        return false;
    s++;
    while (*s != '}') {
        while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' ||
               (*s >= '0' && *s <= '9')) {
            if (n + 1 >= size)
                return false;
            out[n++] = *s++;
        }
        if (*s++ != '=' || *s++ != '"')
            return false;
        if (n + 1 >= size)
            return false;
        out[n++] = '=';
        while (*s != '"') {
            char ch = *s++;
            if (ch == '\0' || ch == '\n')
                return false;
            if (ch == '\\') {
                ch = *s++;
                if (ch == 'n')
                    ch = '\n';
                else if (ch != '\\' && ch != '"')
                    return false;
            }
            if (n + 1 >= size)
                return false;
            out[n++] = ch;
        }
        s++;
        if (*s == ',') {
            if (n + 1 >= size)
                return false;
            out[n++] = *s++;
        } else if (*s != '}') {
            return false;
        }
    }
    out[n] = '\0';
    *p = s + 1;
    return true;
}

/* Every line of text is a comment (# HELP / # TYPE) or a sample; fills samples. Returns the
 * number of samples, or -1 at the first line that is neither. */
static int parse_exposition(const char *text, struct sample *samples, int max)
{
    int n = 0;

    while (*text) {
        const char *eol = strchr(text, '\n');
        char line[1024];
        const char *p;
        char *end;
        size_t len;

        assert_non_null(eol); /* every line ends with a newline */
        len = (size_t)(eol - text);
        assert_true(len < sizeof(line));
        memcpy(line, text, len);
        line[len] = '\0';
        text = eol + 1;
        if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0)
            continue;
        if (n >= max)
            return -1;
        p = line;
        len = 0;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == ':' ||
               (len > 0 && *p >= '0' && *p <= '9')) {
            samples[n].name[len++] = *p++;
            if (len >= sizeof(samples[n].name))
                return -1;
        }
        samples[n].name[len] = '\0';
        samples[n].labels[0] = '\0';
        if (len == 0)
            return -1;
        if (*p == '{' && !parse_labels(&p, samples[n].labels, sizeof(samples[n].labels)))
            return -1;
        if (*p++ != ' ')
            return -1;
        if (strcmp(p, "+Inf") == 0) {
            samples[n].value = INFINITY;
        } else {
            samples[n].value = strtod(p, &end);
            if (end == p || *end != '\0')
                return -1;
        }
        n++;
    }
    return n;
}

static const struct sample *find(const struct sample *s, int n, const char *name,
                                 const char *labels)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s[i].name, name) == 0 && strcmp(s[i].labels, labels) == 0)
            return &s[i];
    fail_msg("no sample %s{%s}", name, labels);
    return NULL;
}

static char *render(struct metrics *r)
{
    struct buf out = BUF_INIT;

    buf_init(&out, METRICS_TEXT_MAX);
    assert_int_equal(metrics_render(r, &out), 0);
    return buf_steal(&out);
}

static void test_metrics__text_parses_back(void **state)
{
    struct metrics *r;
    struct metric *total, *depth, *time, *wait;
    struct sample s[64];
    char *text;
    int n;

    assert_int_equal(metrics_new(&r), 0);
    assert_int_equal(metrics_register(r, METRIC_COUNTER, "controller_runtime_reconcile_total",
                                      "Reconciles by result.",
                                      (const char *[]){"controller", "result", NULL}, NULL, 0,
                                      &total),
                     0);
    assert_int_equal(metrics_register(r, METRIC_GAUGE, "workqueue_depth", "Queued keys.",
                                      (const char *[]){"name", NULL}, NULL, 0, &depth),
                     0);
    assert_int_equal(metrics_register(r, METRIC_HISTOGRAM, "reconcile_seconds", "Durations.",
                                      (const char *[]){"controller", NULL},
                                      (const double[]){0.1, 1, 10}, 3, &time),
                     0);
    assert_int_equal(
        metrics_register(r, METRIC_SUMMARY, "queue_seconds", "Waits.", NULL, NULL, 0, &wait), 0);
    metric_add(total, (const char *[]){"nestedetcd", "success"}, 1);
    metric_add(total, (const char *[]){"nestedetcd", "success"}, 2);
    metric_add(total, (const char *[]){"nestedetcd", "error"}, 1);
    metric_set(depth, (const char *[]){"nestedetcd"}, 7);
    metric_observe(time, (const char *[]){"nestedetcd"}, 0.05);
    metric_observe(time, (const char *[]){"nestedetcd"}, 0.5);
    metric_observe(time, (const char *[]){"nestedetcd"}, 50);
    metric_set_summary(wait, NULL, 1.25, 4);

    text = render(r);
    n = parse_exposition(text, s, 64);
    assert_true(n > 0);
    assert_non_null(strstr(text, "# TYPE controller_runtime_reconcile_total counter\n"));
    assert_non_null(strstr(text, "# HELP workqueue_depth Queued keys.\n"));
    assert_non_null(strstr(text, "# TYPE reconcile_seconds histogram\n"));
    assert_non_null(strstr(text, "# TYPE queue_seconds summary\n"));
    assert_true(
        find(s, n, "controller_runtime_reconcile_total", "controller=nestedetcd,result=success")
            ->value == 3);
    assert_true(
        find(s, n, "controller_runtime_reconcile_total", "controller=nestedetcd,result=error")
            ->value == 1);
    assert_true(find(s, n, "workqueue_depth", "name=nestedetcd")->value == 7);
    /* Buckets are cumulative and end with +Inf = count. */
    assert_true(find(s, n, "reconcile_seconds_bucket", "controller=nestedetcd,le=0.1")->value == 1);
    assert_true(find(s, n, "reconcile_seconds_bucket", "controller=nestedetcd,le=1")->value == 2);
    assert_true(find(s, n, "reconcile_seconds_bucket", "controller=nestedetcd,le=10")->value == 2);
    assert_true(find(s, n, "reconcile_seconds_bucket", "controller=nestedetcd,le=+Inf")->value ==
                3);
    assert_true(find(s, n, "reconcile_seconds_count", "controller=nestedetcd")->value == 3);
    assert_true(fabs(find(s, n, "reconcile_seconds_sum", "controller=nestedetcd")->value - 50.55) <
                1e-9);
    assert_true(find(s, n, "queue_seconds_sum", "")->value == 1.25);
    assert_true(find(s, n, "queue_seconds_count", "")->value == 4);
    free(text);
    metrics_free(r);
}

static void test_metrics__label_values_and_help_are_escaped(void **state)
{
    struct metrics *r;
    struct metric *g;
    struct sample s[4];
    char *text;
    int n;

    assert_int_equal(metrics_new(&r), 0);
    assert_int_equal(metrics_register(r, METRIC_GAUGE, "nestcp_thing", "Line one\nback\\slash",
                                      (const char *[]){"v", NULL}, NULL, 0, &g),
                     0);
    metric_set(g, (const char *[]){"a \"quoted\"\nline \\ end"}, 1.5);
    text = render(r);
    assert_non_null(strstr(text, "# HELP nestcp_thing Line one\\nback\\\\slash\n"));
    n = parse_exposition(text, s, 4);
    assert_int_equal(n, 1);
    assert_string_equal(s[0].labels, "v=a \"quoted\"\nline \\ end");
    assert_true(s[0].value == 1.5);
    free(text);
    metrics_free(r);
}

static void test_metrics__distinct_label_tuples_are_distinct_series(void **state)
{
    struct metrics *r;
    struct metric *c;

    assert_int_equal(metrics_new(&r), 0);
    assert_int_equal(metrics_register(r, METRIC_COUNTER, "c_total", "",
                                      (const char *[]){"a", "b", NULL}, NULL, 0, &c),
                     0);
    /* "x1" + "" and "x" + "1" must not collide. */
    metric_add(c, (const char *[]){"x1", ""}, 1);
    metric_add(c, (const char *[]){"x", "1"}, 5);
    assert_true(metric_value(c, (const char *[]){"x1", ""}) == 1);
    assert_true(metric_value(c, (const char *[]){"x", "1"}) == 5);
    assert_true(metric_value(c, (const char *[]){"y", "1"}) == 0);
    metrics_free(r);
}

static void test_metrics__bad_names_and_types_are_refused(void **state)
{
    struct metrics *r;
    struct metric *c, *h;

    assert_int_equal(metrics_new(&r), 0);
    assert_int_equal(metrics_register(r, METRIC_COUNTER, "9bad", "", NULL, NULL, 0, &c), -EINVAL);
    assert_int_equal(metrics_register(r, METRIC_COUNTER, "bad-name", "", NULL, NULL, 0, &c),
                     -EINVAL);
    assert_int_equal(
        metrics_register(r, METRIC_COUNTER, "ok", "", (const char *[]){"le", NULL}, NULL, 0, &c),
        -EINVAL);
    assert_int_equal(
        metrics_register(r, METRIC_HISTOGRAM, "h", "", NULL, (const double[]){1, 0.5}, 2, &h),
        -EINVAL);
    assert_int_equal(metrics_register(r, METRIC_COUNTER, "ok", "", NULL, NULL, 0, &c), 0);
    assert_int_equal(metrics_register(r, METRIC_GAUGE, "ok", "", NULL, NULL, 0, &c), -EEXIST);
    assert_ptr_equal(metrics_find(r, "ok"), c);
    assert_int_equal(metric_observe(c, NULL, 1), -EINVAL);
    assert_int_equal(metrics_register(r, METRIC_HISTOGRAM, "h", "", NULL, NULL, 0, &h), 0);
    assert_int_equal(metric_add(h, NULL, 1), -EINVAL);
    metrics_free(r);
}

struct phases {
    int runs;
    const char *phase;
};

static void collect_phases(void *userdata, struct metrics *r)
{
    struct phases *p = userdata;
    struct metric *m = metrics_find(r, "nestcp_clusters");

    p->runs++;
    metric_clear(m);
    metric_set(m, (const char *[]){p->phase}, 2);
}

static void test_metrics__collectors_refresh_series(void **state)
{
    struct metrics *r;
    struct phases p = {0, "Provisioning"};
    char *text;

    assert_int_equal(metrics_new(&r), 0);
    assert_int_equal(metrics_register(r, METRIC_GAUGE, "nestcp_clusters", "Clusters by phase.",
                                      (const char *[]){"phase", NULL}, NULL, 0, NULL),
                     0);
    assert_int_equal(metrics_add_collector(r, collect_phases, &p), 0);
    text = render(r);
    assert_non_null(strstr(text, "nestcp_clusters{phase=\"Provisioning\"} 2\n"));
    free(text);
    p.phase = "Ready";
    text = render(r);
    assert_null(strstr(text, "Provisioning"));
    assert_non_null(strstr(text, "nestcp_clusters{phase=\"Ready\"} 2\n"));
    free(text);
    metrics_remove_collector(r, collect_phases, &p);
    text = render(r);
    free(text);
    assert_int_equal(p.runs, 2);
    metrics_free(r);
}

static void test_metrics__render_respects_the_buffer_cap(void **state)
{
    struct metrics *r;
    struct metric *g;
    struct buf out = BUF_INIT;

    assert_int_equal(metrics_new(&r), 0);
    assert_int_equal(
        metrics_register(r, METRIC_GAUGE, "g", "", (const char *[]){"i", NULL}, NULL, 0, &g), 0);
    for (int i = 0; i < 100; i++) {
        char v[16];
        snprintf(v, sizeof(v), "%d", i);
        metric_set(g, (const char *[]){v}, i);
    }
    buf_init(&out, 256);
    assert_int_equal(metrics_render(r, &out), -ENOBUFS);
    buf_done(&out);
    metrics_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics__text_parses_back),
        cmocka_unit_test(test_metrics__label_values_and_help_are_escaped),
        cmocka_unit_test(test_metrics__distinct_label_tuples_are_distinct_series),
        cmocka_unit_test(test_metrics__bad_names_and_types_are_refused),
        cmocka_unit_test(test_metrics__collectors_refresh_series),
        cmocka_unit_test(test_metrics__render_respects_the_buffer_cap),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
