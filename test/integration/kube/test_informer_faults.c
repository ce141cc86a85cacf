/* Informers against the real API server, through the TLS + HTTP/2 fault proxy: every way a
 * watch or a list can fail, and what the informer does about it. Each test uses its own
 * client (a stall or a reset must not reach the next test) and its own label, and checks that
 * the cache ends equal to what the server holds. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/kube/informer.h"
#include "test/support/kube_faultproxy.h"
#include "test/support/kube_testenv.h"

static struct kt T; /* straight to the API server: changes and the truth */
static struct kfp *P;
static struct kube_config *proxied_cfg;

static int setup(void **state)
{
    kt_setup(&T, "kube-inf-faults");
    assert_int_equal(kfp_start(T.cfg, &P), 0);
    proxied_cfg = kfp_client_config(P);
    assert_non_null(proxied_cfg);
    return 0;
}

static int teardown(void **state)
{
    kfp_stop(P);
    kube_config_free(proxied_cfg);
    kt_teardown(&T);
    return 0;
}

static int clear_rules(void **state)
{
    kfp_clear_rules(P);
    return 0;
}

static struct kube_client *proxied_client(void)
{
    struct kube_client *c = NULL;
    struct err e;

    assert_int_equal(kube_client_new(T.loop, proxied_cfg, &c, &e), 0);
    return c;
}

static void add_rule(struct kfp_rule r)
{
    assert_int_equal(kfp_add_rule(P, &r), 0);
}

/* An informer of `resource` in the test namespace, objects labelled test=<label>. */
static struct kube_informer *start_informer(struct kube_client *c,
                                            const struct kube_resource *resource, const char *label,
                                            long watch_timeout, bool no_bookmarks)
{
    char sel[64];
    struct kube_informer_opts o = {.resource = resource,
                                   .namespace_ = T.ns,
                                   .label_selector = sel,
                                   .watch_timeout_seconds = watch_timeout,
                                   .disable_bookmarks = no_bookmarks};
    struct kube_informer *inf = NULL;

    snprintf(sel, sizeof(sel), "test=%s", label);
    assert_int_equal(kube_informer_new(c, &o, NULL, NULL, &inf), 0);
    assert_int_equal(kube_informer_start(inf), 0);
    return inf;
}

static bool synced(void *inf)
{
    return kube_informer_synced(inf);
}

static struct kube_informer_stats stats_of(const struct kube_informer *inf)
{
    struct kube_informer_stats st;

    kube_informer_get_stats(inf, &st);
    return st;
}

/* True when the cache holds exactly what a fresh list from the server holds, at the same
 * resourceVersions. */
struct converge {
    struct kube_informer *inf;
    const struct kube_resource *resource;
    const char *label;
};

static bool converged(void *arg)
{
    struct converge *cv = arg;
    char sel[64];
    cJSON *list = NULL, *it;
    bool ok = true;
    int n = 0;

    snprintf(sel, sizeof(sel), "test=%s", cv->label);
    if (kt_sync(&T,
                &(struct kube_request){.verb = KUBE_LIST,
                                       .resource = cv->resource,
                                       .namespace_ = T.ns,
                                       .label_selector = sel},
                &list) < 0)
        return false;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(list, "items")) {
        const cJSON *c = kube_informer_get(cv->inf, kube_obj_namespace(it), kube_obj_name(it));

        n++;
        if (!c || strcmp(kube_obj_resource_version(c), kube_obj_resource_version(it)) != 0)
            ok = false;
    }
    cJSON_Delete(list);
    return ok && (size_t)n == kube_informer_count(cv->inf);
}

static void assert_converges(struct kube_informer *inf, const struct kube_resource *resource,
                             const char *label)
{
    struct converge cv = {inf, resource, label};

    assert_true(kt_wait(&T, converged, &cv, 30));
}

/* Creates a ConfigMap test=<label>; returns its resourceVersion in rv (may be NULL). */
static void create_cm(const char *name, const char *label, char *rv, size_t rvlen)
{
    cJSON *created = NULL;

    assert_int_equal(kt_create_cm(&T, T.ns, name, label, "v", &created), 0);
    if (rv)
        snprintf(rv, rvlen, "%s", kube_obj_resource_version(created));
    cJSON_Delete(created);
}

static void create_secret(const char *name, const char *label)
{
    char json[512];
    cJSON *o;

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\",\"labels\":{\"test\":\"%s\"}},\"stringData\":{\"k\":\"v\"}}",
             name, T.ns, label);
    o = kt_obj(json);
    assert_int_equal(
        kt_sync(&T,
                &(struct kube_request){.verb = KUBE_CREATE, .resource = &KUBE_SECRETS, .body = o},
                NULL),
        0);
    cJSON_Delete(o);
}

struct has {
    struct kube_informer *inf;
    const char *name;
};

static bool has_object(void *arg)
{
    struct has *h = arg;

    return kube_informer_get(h->inf, T.ns, h->name) != NULL;
}

static void wait_for_object(struct kube_informer *inf, const char *name, double timeout)
{
    struct has h = {inf, name};

    assert_true(kt_wait(&T, has_object, &h, timeout));
}

/* The requests for objects test=<label> since log entry `from`, one letter each: "L" a list
 * that reads the latest state, "R" a list at a resourceVersion (NotOlderThan), "C" a one-item
 * read at a resourceVersion (the check after a silent watch), "W" a watch. */
static void request_sequence(int from, const char *label, char *out, size_t len)
{
    char sel[64], line[8192];
    size_t n = 0;

    snprintf(sel, sizeof(sel), "test%%3D%s", label);
    out[0] = '\0';
    for (int i = from; kfp_request_line(P, i, line, sizeof(line)) && n + 2 < len; i++) {
        if (!strstr(line, sel) || strstr(line, "/version"))
            continue;
        if (strstr(line, "watch=1"))
            out[n++] = 'W';
        else if (strstr(line, "resourceVersionMatch=NotOlderThan") && strstr(line, "limit=1&"))
            out[n++] = 'C';
        else if (strstr(line, "resourceVersionMatch=NotOlderThan"))
            out[n++] = 'R';
        else
            out[n++] = 'L';
        out[n] = '\0';
    }
}

struct sequence {
    int from;
    const char *label, *want;
    char seen[64];
};

static bool sequence_is(void *arg)
{
    struct sequence *q = arg;

    request_sequence(q->from, q->label, q->seen, sizeof(q->seen));
    return strcmp(q->seen, q->want) == 0;
}

/* Waits until the requests for test=<label> since `from` are exactly `want`. */
static void assert_sequence(int from, const char *label, const char *want)
{
    struct sequence q = {from, label, want, ""};

    if (!kt_wait(&T, sequence_is, &q, 30))
        fail_msg("requests for test=%s: %s, want %s", label, q.seen, want);
}

static int log_end(void)
{
    struct kfp_stats ps;

    kfp_get_stats(P, &ps);
    return ps.requests;
}

/* ---- a connection that goes silent ---- */

struct stall_check {
    struct kube_informer *cms, *secrets;
    bool *written;
};

static bool stall_recovered(void *arg)
{
    struct stall_check *s = arg;

    return *s->written && kube_informer_get(s->cms, T.ns, "stall-b") &&
           kube_informer_get(s->secrets, T.ns, "stall-s");
}

struct outcome {
    bool done;
    int code;
};

static void record(void *ud, const struct kube_result *res)
{
    struct outcome *o = ud;

    o->done = true;
    o->code = res->code;
}

static void
test_informer_faults__stalled_connection_is_found_and_every_informer_resumes(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer *cms = start_informer(c, &KUBE_CONFIGMAPS, "stall", 0, false);
    struct kube_informer *secrets = start_informer(c, &KUBE_SECRETS, "stall", 0, false);
    cJSON *patch = kt_obj("{\"data\":{\"k\":\"written through the stall\"}}");
    struct outcome w = {0};
    struct stall_check sc = {cms, secrets, &w.done};
    struct kube_client_stats cs;
    struct kfp_stats ps;
    cJSON *server = NULL;
    double t0, took;

    assert_true(kt_wait(&T, synced, cms, 30));
    assert_true(kt_wait(&T, synced, secrets, 30));
    create_cm("stall-a", "stall", NULL, 0);
    wait_for_object(cms, "stall-a", 30);

    /* From now on the connection carries nothing either way, and is not closed. */
    kfp_stall(P);
    t0 = time_mono();
    /* A write sent into the black hole, and changes the informers must catch up with. */
    assert_int_equal(kube_request_send(c,
                                       &(struct kube_request){.verb = KUBE_PATCH,
                                                              .resource = &KUBE_CONFIGMAPS,
                                                              .namespace_ = T.ns,
                                                              .name = "stall-a",
                                                              .body = patch},
                                       record, &w),
                     0);
    create_cm("stall-b", "stall", NULL, 0);
    create_secret("stall-s", "stall");

    assert_true(kt_wait(&T, stall_recovered, &sc, 60));
    took = time_mono() - t0;
    print_message("stalled connection found, informers resumed, write retried in %.1f s\n", took);
    assert_true(took < 60);
    assert_int_equal(w.code, 0);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_GET,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = "stall-a"},
                             &server),
                     0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(server, "data"), "k")->valuestring,
                        "written through the stall");
    cJSON_Delete(server);

    kube_client_get_stats(c, &cs);
    assert_true(cs.health_checks >= 1);
    assert_int_equal(cs.dead_connections, 1);
    assert_int_equal(cs.reconnect_retries, 1);
    kfp_get_stats(P, &ps);
    assert_true(ps.connections >= 2); /* the dead one and a new one */
    /* Resumed from their last resourceVersion, not relisted. */
    assert_int_equal(stats_of(cms).lists, 1);
    assert_int_equal(stats_of(secrets).lists, 1);
    assert_converges(cms, &KUBE_CONFIGMAPS, "stall");
    assert_converges(secrets, &KUBE_SECRETS, "stall");

    kube_informer_free(cms);
    kube_informer_free(secrets);
    kube_client_free(c);
    cJSON_Delete(patch);
}

/* ---- connection and stream resets ---- */

static bool first_watch_seen(void *from)
{
    return kfp_count(P, *(int *)from, "watch=1", "test%3Dreset") >= 1;
}

static bool four_watches(void *from)
{
    return kfp_count(P, *(int *)from, "watch=1", "test%3Dreset") >= 4;
}

static void test_informer_faults__reset_connection_resumes_without_relist(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer *inf = start_informer(c, &KUBE_CONFIGMAPS, "reset", 0, false);
    struct kube_informer_stats st;
    char seq[64];
    int from = log_end();

    assert_true(kt_wait(&T, synced, inf, 30));
    assert_true(kt_wait(&T, first_watch_seen, &from, 30));
    add_rule((struct kfp_rule){.match = {"watch=1", "test%3Dreset"},
                               .count = 1,
                               .action = KFP_RESET_CONNECTION,
                               .after = 1});
    add_rule((struct kfp_rule){
        .match = {"watch=1", "test%3Dreset"}, .count = 1, .action = KFP_RESET_STREAM, .after = 1});
    /* The running watch was opened before the rules: end it once, so the next ones get them. */
    kfp_reset_connections(P);
    create_cm("reset-a", "reset", NULL, 0);
    create_cm("reset-b", "reset", NULL, 0);
    create_cm("reset-c", "reset", NULL, 0);
    wait_for_object(inf, "reset-c", 30);
    /* The first watch, the one reset with its connection, the one reset alone, and one that
     * stays (libcurl may itself send a watch again whose connection died before any answer):
     * every one resumed, none relisted. */
    assert_true(kt_wait(&T, four_watches, &from, 30));
    assert_converges(inf, &KUBE_CONFIGMAPS, "reset");
    assert_int_equal(kfp_rules_armed(P), 0);

    st = stats_of(inf);
    assert_int_equal(st.lists, 1);
    assert_int_equal(st.list_failures, 0);
    assert_true(st.watch_errors >= 2);
    request_sequence(from, "reset", seq, sizeof(seq));
    assert_true(seq[0] == 'L' && strspn(seq + 1, "W") == strlen(seq + 1));
    kube_informer_free(inf);
    kube_client_free(c);
}

/* ---- 410 and 504: the resourceVersion is gone, or ahead of the server ---- */

static void test_informer_faults__410_relists_at_last_rv_then_without(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer *one, *two;
    int from = log_end();

    create_cm("expire1-a", "expire1", NULL, 0);
    create_cm("expire2-a", "expire2", NULL, 0);
    /* One informer: the watch is 410, the relist at the last resourceVersion works. */
    add_rule((struct kfp_rule){
        .match = {"watch=1", "test%3Dexpire1"}, .count = 1, .action = KFP_REPLY, .status = 410});
    /* The other: that relist is 410 too, and the one after reads the latest state. */
    add_rule((struct kfp_rule){
        .match = {"watch=1", "test%3Dexpire2"}, .count = 1, .action = KFP_REPLY, .status = 410});
    add_rule((struct kfp_rule){.match = {"NotOlderThan", "test%3Dexpire2"},
                               .count = 1,
                               .action = KFP_REPLY,
                               .status = 410});
    one = start_informer(c, &KUBE_CONFIGMAPS, "expire1", 0, false);
    two = start_informer(c, &KUBE_CONFIGMAPS, "expire2", 0, false);
    assert_true(kt_wait(&T, synced, one, 30));
    assert_true(kt_wait(&T, synced, two, 30));
    create_cm("expire1-b", "expire1", NULL, 0);
    create_cm("expire2-b", "expire2", NULL, 0);
    wait_for_object(one, "expire1-b", 30);
    wait_for_object(two, "expire2-b", 30);
    assert_converges(one, &KUBE_CONFIGMAPS, "expire1");
    assert_converges(two, &KUBE_CONFIGMAPS, "expire2");

    assert_sequence(from, "expire1", "LWRW");
    assert_sequence(from, "expire2", "LWRLW");
    assert_int_equal(stats_of(one).watch_expired, 1);
    assert_int_equal(stats_of(one).missed_deletes, 0);
    assert_int_equal(stats_of(two).watch_expired, 1);
    kube_informer_free(one);
    kube_informer_free(two);
    kube_client_free(c);
}

static const char too_large[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"Timeout: Too large resource version: 99999999, current: 1\",\"reason\":"
    "\"Timeout\",\"details\":{\"causes\":[{\"reason\":\"ResourceVersionTooLarge\",\"message\":"
    "\"Too large resource version\"}],\"retryAfterSeconds\":1},\"code\":504}";

static void test_informer_faults__504_too_large_rv_on_watch_relists_latest(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer *inf;
    int from = log_end();

    create_cm("large-a", "large", NULL, 0);
    add_rule((struct kfp_rule){.match = {"watch=1", "test%3Dlarge"},
                               .count = 1,
                               .action = KFP_REPLY,
                               .status = 504,
                               .body = too_large});
    inf = start_informer(c, &KUBE_CONFIGMAPS, "large", 0, false);
    assert_true(kt_wait(&T, synced, inf, 30));
    create_cm("large-b", "large", NULL, 0);
    wait_for_object(inf, "large-b", 30);
    assert_converges(inf, &KUBE_CONFIGMAPS, "large");
    /* No list at the version the server has not reached. */
    assert_sequence(from, "large", "LWLW");
    assert_int_equal(stats_of(inf).rv_too_large, 1);
    kube_informer_free(inf);
    kube_client_free(c);
}

/* The server's own 504: the informer holds a resourceVersion the server never reached (as
 * after an etcd restore). The API server answers a watch from it with silence, filtering out
 * every event as older; the informer notices the silent watch, reads one item at its version,
 * gets the real 504 ResourceVersionTooLarge, and lists what the server has. */
static void test_informer_faults__server_behind_our_rv_is_found_and_relisted(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer *inf;
    struct kube_informer_stats st;
    int from = log_end();

    create_cm("behind-a", "behind", NULL, 0);
    add_rule((struct kfp_rule){
        .match = {"GET", "test%3Dbehind"}, .count = 1, .action = KFP_FUTURE_RV, .after = 1000000});
    inf = start_informer(c, &KUBE_CONFIGMAPS, "behind", 2, false);
    assert_true(kt_wait(&T, synced, inf, 30));
    create_cm("behind-b", "behind", NULL, 0); /* filtered out by the server as too old */
    wait_for_object(inf, "behind-b", 40);
    assert_converges(inf, &KUBE_CONFIGMAPS, "behind");
    st = stats_of(inf);
    assert_true(st.silent_watches >= 1);
    assert_int_equal(st.rv_too_large, 1); /* from the real API server */
    assert_sequence(from, "behind", "LWCLW");
    kube_informer_free(inf);
    kube_client_free(c);
}

/* ---- bookmarks ---- */

struct rv_is {
    struct kube_informer *inf;
    char rv[64];
};

static bool informer_at_bookmark(void *arg)
{
    struct rv_is *r = arg;

    kfp_last_bookmark_rv(P, r->rv, sizeof(r->rv));
    return r->rv[0] && strcmp(kube_informer_resource_version(r->inf), r->rv) == 0;
}

struct resumed_at {
    int from;
    char needle[96];
};

static bool watch_resumed_at(void *arg)
{
    struct resumed_at *r = arg;

    return kfp_count(P, r->from, "watch=1", r->needle) >= 1;
}

static void test_informer_faults__bookmarks_advance_rv_and_resume_from_it(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer *inf;
    struct rv_is at = {0};
    struct resumed_at res = {0};
    char other_rv[64];

    /* Watches of 3-6 s: the server sends a bookmark 2 s before each one ends. */
    inf = start_informer(c, &KUBE_CONFIGMAPS, "bm", 3, false);
    assert_true(kt_wait(&T, synced, inf, 30));
    res.from = log_end();
    /* A change the informer's selector filters out: the bookmark carries its version. */
    create_cm("bm-other", "not-bm", other_rv, sizeof(other_rv));
    at.inf = inf;
    assert_true(kt_wait(&T, informer_at_bookmark, &at, 30));
    assert_true(strtoull(at.rv, NULL, 10) >= strtoull(other_rv, NULL, 10));
    assert_null(kube_informer_get(inf, T.ns, "bm-other"));
    /* The next watch starts from the bookmark's resourceVersion. */
    snprintf(res.needle, sizeof(res.needle), "resourceVersion=%s", at.rv);
    assert_true(kt_wait(&T, watch_resumed_at, &res, 30));
    assert_int_equal(stats_of(inf).lists, 1);
    kube_informer_free(inf);
    kube_client_free(c);
}

static void test_informer_faults__correct_without_bookmarks(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer *off, *dropped;
    int from = log_end();

    /* One informer does not ask for bookmarks; the other asks, and gets none. */
    add_rule((struct kfp_rule){
        .match = {"watch=1", "test%3Dnobm"}, .count = -1, .action = KFP_DROP_BOOKMARKS});
    off = start_informer(c, &KUBE_CONFIGMAPS, "bmoff", 3, true);
    dropped = start_informer(c, &KUBE_CONFIGMAPS, "nobm", 3, false);
    assert_true(kt_wait(&T, synced, off, 30));
    assert_true(kt_wait(&T, synced, dropped, 30));
    create_cm("nobm-a", "nobm", NULL, 0);
    create_cm("bmoff-a", "bmoff", NULL, 0);
    wait_for_object(dropped, "nobm-a", 30);
    wait_for_object(off, "bmoff-a", 30);
    /* Several watch periods later (3-6 s each), still equal to the server. */
    kt_run_for(&T, 8);
    create_cm("nobm-b", "nobm", NULL, 0);
    create_cm("bmoff-b", "bmoff", NULL, 0);
    assert_converges(dropped, &KUBE_CONFIGMAPS, "nobm");
    assert_converges(off, &KUBE_CONFIGMAPS, "bmoff");
    assert_int_equal(kfp_count(P, from, "test%3Dbmoff", "allowWatchBookmarks"), 0);
    assert_true(kfp_count(P, from, "test%3Dnobm", "allowWatchBookmarks=true") >= 1);
    assert_true(stats_of(off).watch_timeouts >= 1);
    kube_informer_free(off);
    kube_informer_free(dropped);
    kube_client_free(c);
}

/* A server that sends no bookmark (and nothing else): the client ends each silent watch after
 * its idle timeout (the second line behind the connection health check), as a quiet end, not
 * an error: no backoff, a one-item read at the last resourceVersion, and the next watch. */
static void test_informer_faults__silent_watches_end_at_the_idle_timeout_quietly(void **state)
{
    struct kube_client *c = proxied_client();
    char sel[] = "test=idle";
    struct kube_informer_opts o = {.resource = &KUBE_CONFIGMAPS,
                                   .namespace_ = T.ns,
                                   .label_selector = sel,
                                   .watch_timeout_seconds = 300,
                                   .watch_idle_seconds = 2};
    struct kube_informer *inf = NULL;
    struct kube_informer_stats st;
    int from = log_end();

    add_rule((struct kfp_rule){
        .match = {"watch=1", "test%3Didle"}, .count = -1, .action = KFP_DROP_BOOKMARKS});
    assert_int_equal(kube_informer_new(c, &o, NULL, NULL, &inf), 0);
    assert_int_equal(kube_informer_start(inf), 0);
    assert_true(kt_wait(&T, synced, inf, 30));
    assert_sequence(from, "idle", "LWCWCW");
    st = stats_of(inf);
    assert_true(st.watch_timeouts >= 2);
    assert_int_equal(st.watch_errors, 0);
    assert_true(st.rv_checks >= 2);
    assert_int_equal(st.lists, 1);
    create_cm("idle-a", "idle", NULL, 0);
    wait_for_object(inf, "idle-a", 30);
    kube_informer_free(inf);
    kube_client_free(c);
}

/* ---- watches that end at once ---- */

static void test_informer_faults__short_empty_watches_back_off(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer *inf;
    struct kube_informer_stats st;
    int from, watches;

    add_rule((struct kfp_rule){.match = {"watch=1", "test%3Dshort"},
                               .count = -1,
                               .action = KFP_REPLY,
                               .status = 200,
                               .body = ""});
    inf = start_informer(c, &KUBE_CONFIGMAPS, "short", 0, false);
    assert_true(kt_wait(&T, synced, inf, 30));
    from = log_end();
    kt_run_for(&T, 15);
    /* Backoff 0.8 s doubling (jitter 0.5-1): 4 to 6 watches in 15 s, not hundreds. */
    watches = kfp_count(P, from, "watch=1", "test%3Dshort");
    print_message("%d watches in 15 s, last backoff %.1f s\n", watches, stats_of(inf).last_backoff);
    assert_true(watches >= 3 && watches <= 6);
    st = stats_of(inf);
    assert_true(st.last_backoff >= 3.2);
    assert_int_equal(st.lists, 1);
    kube_informer_free(inf);
    kube_client_free(c);
}

/* ---- lines that are not events ---- */

static void test_informer_faults__unparseable_events_are_skipped_and_counted(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer *inf;
    struct kube_informer_stats st;

    /* A truncated event, and one of a type nobody knows, before the first real one. */
    add_rule((struct kfp_rule){.match = {"watch=1", "test%3Dbad"},
                               .count = 1,
                               .action = KFP_INJECT_LINE,
                               .line = "{\"type\":\"ADDED\",\"obj\n"
                                       "{\"type\":\"SOMETHING\",\"object\":{}}"});
    inf = start_informer(c, &KUBE_CONFIGMAPS, "bad", 0, false);
    assert_true(kt_wait(&T, synced, inf, 30));
    create_cm("bad-a", "bad", NULL, 0);
    wait_for_object(inf, "bad-a", 30);
    st = stats_of(inf);
    assert_int_equal(st.bad_events, 2);
    assert_int_equal(st.watches, 1); /* the same stream goes on */
    assert_int_equal(st.watch_errors, 0);
    kube_informer_free(inf);
    kube_client_free(c);
}

/* ---- lists that fail ---- */

static void test_informer_faults__list_5xx_and_429_back_off_then_sync(void **state)
{
    struct kube_client *c = proxied_client();
    struct kube_informer *inf;
    struct kube_informer_stats st;

    create_cm("flaky-a", "flaky", NULL, 0);
    add_rule((struct kfp_rule){
        .match = {"GET", "test%3Dflaky"}, .count = 1, .action = KFP_REPLY, .status = 500});
    add_rule((struct kfp_rule){
        .match = {"GET", "test%3Dflaky"}, .count = 1, .action = KFP_REPLY, .status = 503});
    add_rule((struct kfp_rule){.match = {"GET", "test%3Dflaky"},
                               .count = 1,
                               .action = KFP_REPLY,
                               .status = 429}); /* no Retry-After */
    inf = start_informer(c, &KUBE_CONFIGMAPS, "flaky", 0, false);
    assert_true(kt_wait(&T, synced, inf, 30));
    st = stats_of(inf);
    assert_int_equal(st.list_failures, 3);
    assert_int_equal(st.lists, 1);
    assert_true(st.last_backoff >= 1.6); /* the third wait: 3.2 s with jitter 0.5-1 */
    assert_converges(inf, &KUBE_CONFIGMAPS, "flaky");
    kube_informer_free(inf);
    kube_client_free(c);
}

/* ---- a resource no longer served (its CRD deleted) ---- */

struct gone {
    struct kube_informer *inf;
    int told;
};

/* The owner is told, and frees the informer there, as the header allows. */
static void on_gone(void *userdata)
{
    struct gone *g = userdata;

    g->told++;
    kube_informer_free(g->inf);
    g->inf = NULL;
}

static bool told(void *arg)
{
    return ((struct gone *)arg)->told > 0;
}

static void start_gone_informer(struct kube_client *c, const char *label, struct gone *g)
{
    char sel[64];
    struct kube_informer_opts o = {
        .resource = &KUBE_CONFIGMAPS, .namespace_ = T.ns, .label_selector = sel};
    struct kube_informer_handlers h = {.on_gone = on_gone};

    snprintf(sel, sizeof(sel), "test=%s", label);
    assert_int_equal(kube_informer_new(c, &o, &h, g, &g->inf), 0);
    assert_int_equal(kube_informer_start(g->inf), 0);
}

/* A 404 on the first list, or on a watch after the list, ends an informer with on_gone: the
 * handler is told once and nothing is retried. Without on_gone, a 404 is retried as any other
 * failure. */
static void test_informer_faults__404_tells_on_gone_or_is_retried(void **state)
{
    struct kube_client *c = proxied_client();
    struct gone listed = {0}, watched = {0};
    struct kube_informer *retried;
    int from = log_end();

    create_cm("gone-l", "gonelist", NULL, 0);
    create_cm("gone-w", "gonewatch", NULL, 0);
    create_cm("gone-r", "goneretry", NULL, 0);
    add_rule((struct kfp_rule){
        .match = {"GET", "test%3Dgonelist"}, .count = -1, .action = KFP_REPLY, .status = 404});
    add_rule((struct kfp_rule){
        .match = {"watch=1", "test%3Dgonewatch"}, .count = -1, .action = KFP_REPLY, .status = 404});
    add_rule((struct kfp_rule){
        .match = {"GET", "test%3Dgoneretry"}, .count = 1, .action = KFP_REPLY, .status = 404});
    start_gone_informer(c, "gonelist", &listed);
    start_gone_informer(c, "gonewatch", &watched);
    retried = start_informer(c, &KUBE_CONFIGMAPS, "goneretry", 0, false);

    assert_true(kt_wait(&T, told, &listed, 30));
    assert_true(kt_wait(&T, told, &watched, 30));
    assert_null(listed.inf);
    assert_null(watched.inf);
    /* The retried one lists again after its backoff, by which time neither of the others has
     * sent anything more. */
    assert_true(kt_wait(&T, synced, retried, 30));
    assert_int_equal(stats_of(retried).list_failures, 1);
    assert_converges(retried, &KUBE_CONFIGMAPS, "goneretry");
    assert_sequence(from, "gonelist", "L");
    assert_sequence(from, "gonewatch", "LW");
    assert_int_equal(listed.told, 1);
    assert_int_equal(watched.told, 1);
    kube_informer_free(retried);
    kube_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_informer_faults__stalled_connection_is_found_and_every_informer_resumes,
            clear_rules),
        cmocka_unit_test_teardown(test_informer_faults__reset_connection_resumes_without_relist,
                                  clear_rules),
        cmocka_unit_test_teardown(test_informer_faults__410_relists_at_last_rv_then_without,
                                  clear_rules),
        cmocka_unit_test_teardown(test_informer_faults__504_too_large_rv_on_watch_relists_latest,
                                  clear_rules),
        cmocka_unit_test_teardown(test_informer_faults__server_behind_our_rv_is_found_and_relisted,
                                  clear_rules),
        cmocka_unit_test_teardown(test_informer_faults__bookmarks_advance_rv_and_resume_from_it,
                                  clear_rules),
        cmocka_unit_test_teardown(test_informer_faults__correct_without_bookmarks, clear_rules),
        cmocka_unit_test_teardown(
            test_informer_faults__silent_watches_end_at_the_idle_timeout_quietly, clear_rules),
        cmocka_unit_test_teardown(test_informer_faults__short_empty_watches_back_off, clear_rules),
        cmocka_unit_test_teardown(test_informer_faults__unparseable_events_are_skipped_and_counted,
                                  clear_rules),
        cmocka_unit_test_teardown(test_informer_faults__list_5xx_and_429_back_off_then_sync,
                                  clear_rules),
        cmocka_unit_test_teardown(test_informer_faults__404_tells_on_gone_or_is_retried,
                                  clear_rules),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
