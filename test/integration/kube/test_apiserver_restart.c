/* The informer across an API server restart on the same port, in a super cluster of its own
 * (so the shared one is not disturbed). While the API server is down, one object is deleted
 * straight from etcd; after the restart the watch cache starts fresh, the informer's resume
 * gets 410 "too old resource version", and it must relist, deliver the missed deletion, and
 * converge with objects changed meanwhile. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/kube/informer.h"
#include "lib/util/buf.h"
#include "test/support/kube_testenv.h"

static struct kt T;
static char envdir[128];
static char script[512];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    struct buf b;
    va_list ap;
    int r;

    buf_init(&b, 0);
    va_start(ap, fmt);
    assert_int_equal(buf_vprintf(&b, fmt, ap), 0);
    va_end(ap);
    r = system(b.data);
    buf_done(&b);
    return r;
}

static int setup(void **state)
{
    const char *src = getenv("NESTCP_SOURCE_DIR");
    char kubeconfig[256];

    if (src && src[0]) {
        snprintf(script, sizeof(script), "%s/hack/kube-env.sh", src);
    } else {
        /* Run by hand from a build directory: find the script next to this source file. */
        snprintf(script, sizeof(script), "%s", __FILE__);
        *strstr(script, "/test/integration/kube/") = '\0';
        strncat(script, "/hack/kube-env.sh", sizeof(script) - strlen(script) - 1);
    }
    snprintf(envdir, sizeof(envdir), "/tmp/nestcp-kube-restart-XXXXXX");
    assert_non_null(mkdtemp(envdir));
    if (sh("'%s' up --dir '%s' >/dev/null", script, envdir) != 0) {
        fprintf(stderr, "could not start a super cluster in %s\n", envdir);
        return -1;
    }
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", envdir);
    kt_setup_from(&T, kubeconfig, "restart");
    return 0;
}

static int teardown(void **state)
{
    if (T.c)
        kt_teardown(&T);
    sh("'%s' down --dir '%s' >/dev/null 2>&1", script, envdir);
    sh("rm -rf '%s'", envdir);
    return 0;
}

struct counts {
    int adds, updates, deletes, missed;
    char missed_names[256];
};

static void on_add(void *ud, const cJSON *obj)
{
    ((struct counts *)ud)->adds++;
}

static void on_update(void *ud, const cJSON *old_obj, const cJSON *new_obj)
{
    ((struct counts *)ud)->updates++;
}

static void on_delete(void *ud, const cJSON *obj, bool unknown)
{
    struct counts *c = ud;
    size_t n = strlen(c->missed_names);

    if (!unknown) {
        c->deletes++;
        return;
    }
    c->missed++;
    snprintf(c->missed_names + n, sizeof(c->missed_names) - n, "%s,", kube_obj_name(obj));
}

static bool synced(void *inf)
{
    return kube_informer_synced(inf);
}

static bool converged(void *arg)
{
    struct kube_informer *inf = arg;
    cJSON *list = NULL, *it;
    bool ok = true;
    int n = 0;

    if (kt_sync(&T,
                &(struct kube_request){.verb = KUBE_LIST,
                                       .resource = &KUBE_CONFIGMAPS,
                                       .namespace_ = T.ns,
                                       .label_selector = "test=restart"},
                &list) < 0)
        return false;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(list, "items")) {
        const cJSON *c = kube_informer_get(inf, T.ns, kube_obj_name(it));

        n++;
        if (!c || strcmp(kube_obj_resource_version(c), kube_obj_resource_version(it)) != 0)
            ok = false;
    }
    cJSON_Delete(list);
    return ok && (size_t)n == kube_informer_count(inf);
}

static void patch_value(const char *name, const char *value)
{
    char json[128];
    cJSON *p;

    snprintf(json, sizeof(json), "{\"data\":{\"k\":\"%s\"}}", value);
    p = kt_obj(json);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_PATCH,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = name,
                                                    .body = p},
                             NULL),
                     0);
    cJSON_Delete(p);
}

static int etcd_port(void)
{
    char path[256], line[128];
    int port = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/ports", envdir);
    f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "etcd_port=%d", &port) == 1)
            break;
    fclose(f);
    assert_true(port > 0);
    return port;
}

static void test_apiserver_restart__informer_relists_and_delivers_missed_delete(void **state)
{
    struct kube_informer_opts o = {
        .resource = &KUBE_CONFIGMAPS, .namespace_ = T.ns, .label_selector = "test=restart"};
    struct kube_informer_handlers h = {
        .on_add = on_add, .on_update = on_update, .on_delete = on_delete};
    struct kube_informer *inf = NULL;
    struct kube_informer_stats st;
    struct counts c = {0};
    const cJSON *cached;
    char name[16];

    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "a%d", i);
        assert_int_equal(kt_create_cm(&T, T.ns, name, "restart", "0", NULL), 0);
    }
    assert_int_equal(kube_informer_new(T.c, &o, &h, &c, &inf), 0);
    assert_int_equal(kube_informer_start(inf), 0);
    assert_true(kt_wait(&T, synced, inf, 30));
    assert_int_equal(c.adds, 5);
    /* The watch is live: a change arrives through it. */
    patch_value("a0", "1");
    assert_true(kt_wait(&T, converged, inf, 30));
    assert_int_equal(c.updates, 1);

    /* Down: the watch breaks; meanwhile a1 disappears behind the API server's back. */
    assert_int_equal(sh("'%s' stop apiserver --dir '%s' >/dev/null", script, envdir), 0);
    kt_run_for(&T, 2.0);
    assert_int_equal(sh("ETCDCTL_API=3 etcdctl --endpoints=http://127.0.0.1:%d del "
                        "/registry/configmaps/%s/a1 >/dev/null",
                        etcd_port(), T.ns),
                     0);
    kt_run_for(&T, 2.0);
    assert_int_equal(sh("'%s' start apiserver --dir '%s' >/dev/null", script, envdir), 0);

    /* Up again: more changes while the informer finds its way back. */
    patch_value("a2", "2");
    assert_int_equal(kt_create_cm(&T, T.ns, "a5", "restart", "0", NULL), 0);
    assert_true(kt_wait(&T, converged, inf, 90));

    kube_informer_get_stats(inf, &st);
    assert_true(st.watch_expired >= 1); /* the resume was answered with 410 */
    assert_true(st.lists >= 2);         /* so it relisted */
    assert_int_equal(c.missed, 1);
    assert_string_equal(c.missed_names, "a1,");
    assert_null(kube_informer_get(inf, T.ns, "a1"));
    cached = kube_informer_get(inf, T.ns, "a2");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cached, "data"), "k")->valuestring,
                        "2");
    assert_non_null(kube_informer_get(inf, T.ns, "a5"));
    assert_int_equal(kube_informer_count(inf), 5);
    kube_informer_free(inf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apiserver_restart__informer_relists_and_delivers_missed_delete),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
