/*
 * What assembling one tenant control plane costs: resolve + every CA, certs Secret and
 * kubeconfig generated + every component rendered (render_cluster_all, 3 etcd members), for
 * ECDSA-P256 and RSA-2048 keys; and the same with every Secret already there (what a
 * controller pays on a steady-state reconcile: checks, no key generation).
 *
 *   bench_render [runs] [templates-dir]       (defaults: 5, the source tree's templates/,
 *                                             found from this file's path)
 *
 * Prints figures and ratios; asserts nothing about speed.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/render/catalog.h"
#include "lib/render/cluster.h"
#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"

#include "bench_inputs.h"

static const char input_fmt[] = BENCH_CLUSTER(", certificates: {keyAlgorithm: %s}");

struct figures {
    double full_mean, full_min, steady_mean, steady_min;
};

/* One resolve + render_cluster_all over objs; returns seconds, or -1. The output is appended
 * to objs when keep is set (so the next call finds every Secret). */
static double once(const struct render_catalog *cat, cJSON *objs, int keep)
{
    struct api_errors errs = API_ERRORS_INIT;
    struct render_source src;
    struct render_cluster *rc = NULL;
    cJSON *out = NULL;
    double t0 = time_mono(), dt;

    render_source_from_objects(objs, &src);
    if (render_cluster_resolve(cat, &src, "bench", "b", &rc, &errs) < 0 ||
        render_cluster_all(cat, rc, &src, 0, &out, &errs) < 0) {
        fprintf(stderr, "bench_render: %s\n", errs.n ? errs.lines[0] : "failed");
        render_cluster_free(rc);
        api_errors_done(&errs);
        return -1;
    }
    dt = time_mono() - t0;
    if (keep)
        while (out->child)
            cJSON_AddItemToArray(objs, cJSON_DetachItemViaPointer(out, out->child));
    cJSON_Delete(out);
    render_cluster_free(rc);
    api_errors_done(&errs);
    return dt;
}

static int measure(const struct render_catalog *cat, const char *alg, int runs, struct figures *f)
{
    char text[4096];
    struct err e = {0};

    snprintf(text, sizeof(text), input_fmt, alg);
    *f = (struct figures){0, 1e9, 0, 1e9};
    for (int i = 0; i < runs; i++) {
        cJSON *objs = NULL;
        double full, steady;
        if (yamlconv_parse_all(text, strlen(text), "bench", &objs, &e) < 0)
            return -1;
        full = once(cat, objs, 1);
        steady = full >= 0 ? once(cat, objs, 0) : -1;
        cJSON_Delete(objs);
        if (full < 0 || steady < 0)
            return -1;
        f->full_mean += full / runs;
        f->steady_mean += steady / runs;
        if (full < f->full_min)
            f->full_min = full;
        if (steady < f->steady_min)
            f->steady_min = steady;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    const char *me = __FILE__, *at = strstr(me, "/test/bench/");
    char dir[4096];
    struct render_catalog *cat = NULL;
    struct figures ec, rsa;
    struct err e = {0};

    if (runs < 1)
        runs = 1;
    if (argc > 2)
        snprintf(dir, sizeof(dir), "%s", argv[2]);
    else
        snprintf(dir, sizeof(dir), "%.*s/templates", at ? (int)(at - me) : 1, at ? me : ".");
    if (render_catalog_open(dir, &cat, &e) < 0) {
        fprintf(stderr, "bench_render: templates %s: %s\n", dir, e.msg);
        return 1;
    }
    if (measure(cat, "ECDSA-P256", runs, &ec) < 0 || measure(cat, "RSA-2048", runs, &rsa) < 0) {
        render_catalog_free(cat);
        return 1;
    }
    printf("one cluster, 3 etcd members, %d runs each (mean / min):\n", runs);
    printf("  %-44s %9s %9s %9s\n", "", "ECDSA-P256", "RSA-2048", "ratio");
    printf("  %-44s %6.1f ms %6.0f ms %8.0fx\n", "full render, every key generated (mean)",
           ec.full_mean * 1e3, rsa.full_mean * 1e3, rsa.full_mean / ec.full_mean);
    printf("  %-44s %6.1f ms %6.0f ms %8.0fx\n", "full render, every key generated (min)",
           ec.full_min * 1e3, rsa.full_min * 1e3, rsa.full_min / ec.full_min);
    printf("  %-44s %6.1f ms %6.1f ms %8.1fx\n", "again, every Secret reused (mean)",
           ec.steady_mean * 1e3, rsa.steady_mean * 1e3, rsa.steady_mean / ec.steady_mean);
    printf("  %-44s %6.1f ms %6.1f ms %8.1fx\n", "again, every Secret reused (min)",
           ec.steady_min * 1e3, rsa.steady_min * 1e3, rsa.steady_min / ec.steady_min);
    render_catalog_free(cat);
    return 0;
}
