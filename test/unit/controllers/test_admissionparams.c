#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/access.h"
#include "controllers/admissionparams.h"
#include "lib/kube/store.h"
#include "lib/render/catalog.h"

struct fx {
    struct render_catalog *cat;
    struct admissionparams ap;
    struct reconciler_def def;
    struct kube_store configmaps;
    struct cache_view view;
    struct plan plan;
};

static int setup(void **state)
{
    static struct fx f;
    const char *src = getenv("NESTCP_SOURCE_DIR");
    char dir[4096];
    struct err e = {0};

    memset(&f, 0, sizeof(f));
    snprintf(dir, sizeof(dir), "%s/templates", src ? src : ".");
    assert_int_equal(render_catalog_open(dir, &f.cat, &e), 0);
    assert_int_equal(admissionparams_init(&f.ap, f.cat, "nestcp-system", "nestcp-catalog", &e), 0);
    admissionparams_def(&f.ap, &f.def);
    kube_store_init(&f.configmaps);
    f.view.configmaps = &f.configmaps;
    plan_init(&f.plan);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    plan_done(&f->plan);
    kube_store_done(&f->configmaps);
    admissionparams_done(&f->ap);
    render_catalog_free(f->cat);
    return 0;
}

static void reconcile(struct fx *f, const char *ns, const char *name)
{
    struct err e = {0};

    plan_done(&f->plan);
    plan_init(&f->plan);
    assert_int_equal(f->def.reconcile(f->def.ctx, &f->view, ns, name, &f->plan, &e), 0);
}

static void put(struct fx *f, cJSON *obj)
{
    cJSON *old = NULL;

    assert_int_equal(kube_store_put(&f->configmaps, obj, &old), 0);
    cJSON_Delete(old);
}

static const char *data_of(const cJSON *cm, const char *key)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cm, "data"), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Missing: one server-side apply of the whole ConfigMap, which the access table allows. */
static void test_admissionparams__missing_configmap_is_applied(void **state)
{
    struct fx *f = *state;
    const struct plan_action *a;

    reconcile(f, "nestcp-system", "nestcp-catalog");
    assert_int_equal(f->plan.n_actions, 1);
    a = &f->plan.actions[0];
    assert_int_equal(a->verb, KUBE_PATCH);
    assert_int_equal(a->patch_type, KUBE_PATCH_APPLY);
    assert_true(a->force);
    assert_string_equal(a->resource->resource, "configmaps");
    assert_string_equal(a->namespace_, "nestcp-system");
    assert_string_equal(a->name, "nestcp-catalog");
    assert_string_equal(data_of(a->body, "kubernetes.lines"), "1.35, 1.36, 1.37");
    assert_non_null(
        strstr(data_of(a->body, "kube-apiserver.1.36.removedFlags"), "insecure-port\n"));
    assert_null(strstr(data_of(a->body, "kube-apiserver.1.36.flags"), "\ninsecure-port\n"));
    assert_true(access_allows_action(a));
}

/* Equal data and labels: nothing to do; a changed value or a label taken away: applied again. */
static void test_admissionparams__applied_only_when_it_differs(void **state)
{
    struct fx *f = *state;
    cJSON *have = cJSON_Duplicate(f->ap.desired, true), *labels;

    assert_non_null(have);
    cJSON_AddStringToObject(cJSON_GetObjectItem(have, "metadata"), "resourceVersion", "7");
    put(f, have);
    reconcile(f, "nestcp-system", "nestcp-catalog");
    assert_int_equal(f->plan.n_actions, 0);

    have = cJSON_Duplicate(f->ap.desired, true);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(have, "data"), "kubernetes.lines",
                              cJSON_CreateString("1.35"));
    put(f, have);
    reconcile(f, "nestcp-system", "nestcp-catalog");
    assert_int_equal(f->plan.n_actions, 1);
    assert_non_null(strstr(f->plan.actions[0].why, "differ from the package catalog"));

    have = cJSON_Duplicate(f->ap.desired, true);
    labels = cJSON_GetObjectItem(cJSON_GetObjectItem(have, "metadata"), "labels");
    cJSON_DeleteItemFromObject(labels, "app.kubernetes.io/component");
    put(f, have);
    reconcile(f, "nestcp-system", "nestcp-catalog");
    assert_int_equal(f->plan.n_actions, 1);
}

/* Any other ConfigMap, even one of the same name elsewhere, is never written. */
static void test_admissionparams__other_configmaps_are_left_alone(void **state)
{
    struct fx *f = *state;

    reconcile(f, "tenants", "nestcp-catalog");
    assert_int_equal(f->plan.n_actions, 0);
    reconcile(f, "nestcp-system", "c1-apiserver-authn");
    assert_int_equal(f->plan.n_actions, 0);
}

static void collect(void *q, const char *ns, const char *name)
{
    char *out = q;
    size_t n = strlen(out);

    snprintf(out + n, 256 - n, "%s/%s;", ns, name);
}

/* The key is queued at start (its object may not exist) and on changes of that ConfigMap only. */
static void test_admissionparams__queues_only_its_own_key(void **state)
{
    struct fx *f = *state;
    char got[256] = "";
    cJSON *other =
        cJSON_Parse("{\"metadata\":{\"namespace\":\"t\",\"name\":\"c1-apiserver-authn\"}}");

    assert_non_null(f->def.seed);
    f->def.seed(f->def.ctx, collect, got);
    assert_string_equal(got, "nestcp-system/nestcp-catalog;");
    got[0] = '\0';
    f->def.map(f->def.ctx, &f->view, &KUBE_CONFIGMAPS, other, collect, got);
    f->def.map(f->def.ctx, &f->view, &KUBE_CONFIGMAPS, f->ap.desired, collect, got);
    assert_string_equal(got, "nestcp-system/nestcp-catalog;");
    cJSON_Delete(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_admissionparams__missing_configmap_is_applied, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_admissionparams__applied_only_when_it_differs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_admissionparams__other_configmaps_are_left_alone,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_admissionparams__queues_only_its_own_key, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
