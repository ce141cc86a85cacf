#ifndef NESTCP_TEST_SUPPORT_KUBE_TESTENV_H
#define NESTCP_TEST_SUPPORT_KUBE_TESTENV_H

/*
 * Helpers for integration tests of lib/kube against the real API server: a loop, a client from
 * $KUBECONFIG, a fresh namespace per test program, and running the loop until a condition holds.
 * Header-only so that tests linking only nestcp_kube can use it. Include after <cmocka.h>.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "lib/kube/client.h"
#include "lib/kube/config.h"
#include "lib/util/strutil.h"

struct kt {
    struct ev_loop *loop;
    struct kube_config *cfg;
    struct kube_client *c;
    char ns[64];
};

static inline struct kube_client *kt_client(struct kt *t)
{
    struct kube_client *c = NULL;
    struct err e;

    if (kube_client_new(t->loop, t->cfg, &c, &e) < 0) {
        fprintf(stderr, "kube client: %s\n", e.msg);
        fail();
    }
    return c;
}

static inline cJSON *kt_obj(const char *json)
{
    cJSON *o = cJSON_Parse(json);

    assert_non_null(o);
    return o;
}

static void kt_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
}

/* Runs the loop for `seconds`, serving whatever happens meanwhile. */
static inline void kt_run_for(struct kt *t, double seconds)
{
    double end = time_mono() + seconds;
    ev_timer tick;

    ev_timer_init(&tick, kt_tick_cb, 0.05, 0.05);
    ev_timer_start(t->loop, &tick);
    while (time_mono() < end)
        ev_run(t->loop, EVRUN_ONCE);
    ev_timer_stop(t->loop, &tick);
}

/* Polls pred (checked every 50 ms while the loop runs) for up to timeout seconds. */
static inline bool kt_wait(struct kt *t, bool (*pred)(void *), void *arg, double timeout)
{
    double end = time_mono() + timeout;
    ev_timer tick;
    bool ok;

    ev_timer_init(&tick, kt_tick_cb, 0.05, 0.05);
    ev_timer_start(t->loop, &tick);
    while (!(ok = pred(arg)) && time_mono() < end)
        ev_run(t->loop, EVRUN_ONCE);
    ev_timer_stop(t->loop, &tick);
    return ok;
}

static inline bool kt_flag_set(void *flag)
{
    return *(const bool *)flag;
}

/* Runs the loop until *flag is true or timeout seconds passed; returns *flag. */
static inline bool kt_run_until(struct kt *t, bool *flag, double timeout)
{
    return kt_wait(t, kt_flag_set, flag, timeout);
}

static inline int kt_sync(struct kt *t, const struct kube_request *req, cJSON **ret_body)
{
    struct err e;

    return kube_request_sync(t->c, req, ret_body, &e);
}

/* Creates a ConfigMap ns/name with data {k: value} and label test=<label>. */
static inline int kt_create_cm(struct kt *t, const char *ns, const char *name, const char *label,
                               const char *value, cJSON **ret)
{
    char json[1024];
    cJSON *o;
    int r;

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\",\"labels\":{\"test\":\"%s\"}},\"data\":{\"k\":\"%s\"}}",
             name, ns, label, value);
    o = kt_obj(json);
    r = kt_sync(
        t, &(struct kube_request){.verb = KUBE_CREATE, .resource = &KUBE_CONFIGMAPS, .body = o},
        ret);
    cJSON_Delete(o);
    return r;
}

static inline void kt_create_namespace(struct kt *t, const char *name)
{
    char json[256];
    cJSON *o;

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
             "\"metadata\":{\"name\":\"%s\"}}",
             name);
    o = kt_obj(json);
    assert_int_equal(
        kt_sync(
            t, &(struct kube_request){.verb = KUBE_CREATE, .resource = &KUBE_NAMESPACES, .body = o},
            NULL),
        0);
    cJSON_Delete(o);
}

/* Loads $KUBECONFIG (or the file given), makes a client and a namespace "<prefix>-<pid>-<n>". */
static inline void kt_setup_from(struct kt *t, const char *kubeconfig, const char *prefix)
{
    struct err e;
    static int n;

    memset(t, 0, sizeof(*t));
    /* As `nestcp manager` does: libcurl's TLS writes on a connection the peer (or the health
     * check) closed must fail with EPIPE, not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    if (!kubeconfig)
        kubeconfig = getenv("KUBECONFIG");
    if (!kubeconfig || !kubeconfig[0]) {
        fprintf(stderr,
                "KUBECONFIG is not set: run under ctest or eval \"$(hack/kube-env.sh up)\"\n");
        fail();
    }
    if (kube_config_load_file(kubeconfig, NULL, &t->cfg, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        fail();
    }
    t->loop = ev_loop_new(EVFLAG_AUTO);
    t->c = kt_client(t);
    snprintf(t->ns, sizeof(t->ns), "%s-%d-%d", prefix, (int)getpid(), n++);
    kt_create_namespace(t, t->ns);
}

static inline void kt_setup(struct kt *t, const char *prefix)
{
    kt_setup_from(t, NULL, prefix);
}

static inline void kt_teardown(struct kt *t)
{
    if (t->c && t->ns[0])
        kt_sync(t,
                &(struct kube_request){.verb = KUBE_DELETE,
                                       .resource = &KUBE_NAMESPACES,
                                       .name = t->ns,
                                       .propagation_policy = "Background"},
                NULL);
    kube_client_free(t->c);
    kube_config_free(t->cfg);
    ev_loop_destroy(t->loop);
    memset(t, 0, sizeof(*t));
}

#endif
