#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/nestcp/rolldiff.h"

/* A StatefulSet as the packages render it: config hash, image, flags, the certs volume. */
static cJSON *sts(const char *hash, const char *image, const char *args, const char *certs,
                  const char *extra_container)
{
    char json[4096];
    cJSON *o;

    snprintf(
        json, sizeof(json),
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"spec\":{\"replicas\":1,"
        "\"template\":{\"metadata\":{\"annotations\":{\"nestcp.x-k8s.io/config-hash\":\"%s\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"kube-apiserver\",\"image\":\"%s\","
        "\"command\":[\"kube-apiserver\"],\"args\":[%s]%s}],"
        "\"volumes\":[{\"name\":\"certs\",\"secret\":{\"secretName\":\"%s\"}}]}}}}",
        hash, image, args, extra_container, certs);
    o = cJSON_Parse(json);
    assert_non_null(o);
    return o;
}

static const struct rolldiff_change *find(const struct rolldiff *d, enum rolldiff_kind kind,
                                          const char *what)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->changes[i].kind == kind && strcmp(d->changes[i].what, what) == 0)
            return &d->changes[i];
    return NULL;
}

static void test_rolldiff__same_hash_rolls_nothing(void **state)
{
    cJSON *a = sts("h1", "k:v1.36.3", "\"--a=1\"", "c-1", "");
    cJSON *b = sts("h1", "k:v1.36.3", "\"--a=2\"", "c-1", "");
    struct rolldiff d;
    (void)state;

    assert_int_equal(rolldiff_statefulset(a, b, &d), 0);
    assert_false(d.roll);
    assert_int_equal(d.n, 0);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void test_rolldiff__a_changed_flag_names_its_old_and_new_value(void **state)
{
    cJSON *r =
        sts("h2", "k:v1.36.3",
            "\"--enable-admission-plugins=NodeRestriction,AlwaysPullImages\",\"--x=1\"", "c-1", "");
    cJSON *l = sts("h1", "k:v1.36.3", "\"--enable-admission-plugins=NodeRestriction\",\"--x=1\"",
                   "c-1", "");
    const struct rolldiff_change *c;
    struct rolldiff d;
    (void)state;

    assert_int_equal(rolldiff_statefulset(r, l, &d), 0);
    assert_true(d.roll);
    assert_string_equal(d.running_hash, "h1");
    assert_string_equal(d.rendered_hash, "h2");
    assert_int_equal(d.n, 1);
    c = find(&d, ROLLDIFF_FLAG, "--enable-admission-plugins");
    assert_non_null(c);
    assert_string_equal(c->container, "kube-apiserver");
    assert_string_equal(c->from, "NodeRestriction");
    assert_string_equal(c->to, "NodeRestriction,AlwaysPullImages");
    cJSON_Delete(r);
    cJSON_Delete(l);
}

static void test_rolldiff__added_and_removed_flags(void **state)
{
    cJSON *r = sts("h2", "k:v1", "\"--keep=1\",\"--new=2\",\"--bare\"", "c-1", "");
    cJSON *l = sts("h1", "k:v1", "\"--keep=1\",\"--old=3\"", "c-1", "");
    const struct rolldiff_change *c;
    struct rolldiff d;
    (void)state;

    assert_int_equal(rolldiff_statefulset(r, l, &d), 0);
    assert_int_equal(d.n, 3);
    c = find(&d, ROLLDIFF_FLAG, "--new");
    assert_non_null(c);
    assert_string_equal(c->from, ROLLDIFF_UNSET);
    assert_string_equal(c->to, "2");
    c = find(&d, ROLLDIFF_FLAG, "--bare");
    assert_non_null(c);
    assert_string_equal(c->to, "");
    c = find(&d, ROLLDIFF_FLAG, "--old");
    assert_non_null(c);
    assert_string_equal(c->from, "3");
    assert_string_equal(c->to, ROLLDIFF_UNSET);
    cJSON_Delete(r);
    cJSON_Delete(l);
}

static void test_rolldiff__a_version_is_the_image_tag(void **state)
{
    cJSON *r = sts("h2", "registry.k8s.io/kube-apiserver:v1.37.2", "\"--a=1\"", "c-1", "");
    cJSON *l = sts("h1", "registry.k8s.io/kube-apiserver:v1.36.3", "\"--a=1\"", "c-1", "");
    const struct rolldiff_change *c;
    struct rolldiff d;
    (void)state;

    assert_int_equal(rolldiff_statefulset(r, l, &d), 0);
    assert_int_equal(d.n, 1);
    c = find(&d, ROLLDIFF_VERSION, "kube-apiserver");
    assert_non_null(c);
    assert_string_equal(c->from, "v1.36.3");
    assert_string_equal(c->to, "v1.37.2");
    cJSON_Delete(r);
    cJSON_Delete(l);
}

static void test_rolldiff__new_certificates_name_both_secrets(void **state)
{
    cJSON *r = sts("h2", "k:v1", "\"--a=1\"", "c-apiserver-certs-bbb", "");
    cJSON *l = sts("h1", "k:v1", "\"--a=1\"", "c-apiserver-certs-aaa", "");
    const struct rolldiff_change *c;
    struct rolldiff d;
    (void)state;

    assert_int_equal(rolldiff_statefulset(r, l, &d), 0);
    assert_int_equal(d.n, 1);
    c = find(&d, ROLLDIFF_CERTIFICATES, "certs");
    assert_non_null(c);
    assert_string_equal(c->from, "c-apiserver-certs-aaa");
    assert_string_equal(c->to, "c-apiserver-certs-bbb");
    cJSON_Delete(r);
    cJSON_Delete(l);
}

static void test_rolldiff__other_fields_by_path_and_server_defaults_ignored(void **state)
{
    cJSON *r = sts("h2", "k:v1", "\"--a=1\"", "c-1", ",\"readinessProbe\":{\"periodSeconds\":1}");
    /* The running one has what the API server fills in besides. */
    cJSON *l = sts("h1", "k:v1", "\"--a=1\"", "c-1",
                   ",\"readinessProbe\":{\"periodSeconds\":10,\"timeoutSeconds\":1},"
                   "\"terminationMessagePath\":\"/dev/termination-log\"");
    const struct rolldiff_change *c;
    struct rolldiff d;
    (void)state;

    assert_int_equal(rolldiff_statefulset(r, l, &d), 0);
    assert_int_equal(d.n, 1);
    c = find(&d, ROLLDIFF_FIELD,
             "spec.template.spec.containers[kube-apiserver].readinessProbe.periodSeconds");
    assert_non_null(c);
    assert_string_equal(c->from, "10");
    assert_string_equal(c->to, "1");
    cJSON_Delete(r);
    cJSON_Delete(l);
}

static void test_rolldiff__many_changes_are_counted_past_the_cap(void **state)
{
    char rargs[4096] = "", largs[4096] = "";
    size_t rn = 0, ln = 0;
    struct rolldiff d;
    cJSON *r, *l;
    (void)state;

    for (int i = 0; i < ROLLDIFF_MAX + 5; i++) {
        rn += (size_t)snprintf(rargs + rn, sizeof(rargs) - rn, "%s\"--f%d=new\"", i ? "," : "", i);
        ln += (size_t)snprintf(largs + ln, sizeof(largs) - ln, "%s\"--f%d=old\"", i ? "," : "", i);
    }
    r = sts("h2", "k:v1", rargs, "c-1", "");
    l = sts("h1", "k:v1", largs, "c-1", "");
    assert_int_equal(rolldiff_statefulset(r, l, &d), 0);
    assert_int_equal(d.n, ROLLDIFF_MAX);
    assert_int_equal(d.more, 5);
    cJSON_Delete(r);
    cJSON_Delete(l);
}

static void test_rolldiff__not_a_statefulset_is_refused(void **state)
{
    cJSON *o = cJSON_Parse("{\"kind\":\"Service\",\"spec\":{}}");
    struct rolldiff d;
    (void)state;

    assert_int_equal(rolldiff_statefulset(o, o, &d), -EINVAL);
    assert_int_equal(rolldiff_statefulset(NULL, o, &d), -EINVAL);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rolldiff__same_hash_rolls_nothing),
        cmocka_unit_test(test_rolldiff__a_changed_flag_names_its_old_and_new_value),
        cmocka_unit_test(test_rolldiff__added_and_removed_flags),
        cmocka_unit_test(test_rolldiff__a_version_is_the_image_tag),
        cmocka_unit_test(test_rolldiff__new_certificates_name_both_secrets),
        cmocka_unit_test(test_rolldiff__other_fields_by_path_and_server_defaults_ignored),
        cmocka_unit_test(test_rolldiff__many_changes_are_counted_past_the_cap),
        cmocka_unit_test(test_rolldiff__not_a_statefulset_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
