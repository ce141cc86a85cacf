#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "lib/kube/config.h"
#include "lib/kube/informer.h"
#include "lib/kube/store.h"

struct seen {
    char log[2048];
    int synced;
};

static void logf_(struct seen *s, const char *what, const cJSON *obj)
{
    size_t n = strlen(s->log);

    snprintf(s->log + n, sizeof(s->log) - n, "%s %s/%s@%s;", what, kube_obj_namespace(obj),
             kube_obj_name(obj), kube_obj_resource_version(obj));
}

static void on_add(void *ud, const cJSON *obj)
{
    logf_(ud, "add", obj);
}

static void on_update(void *ud, const cJSON *old_obj, const cJSON *new_obj)
{
    logf_(ud, "update", new_obj);
}

static void on_delete(void *ud, const cJSON *obj, bool unknown)
{
    logf_(ud, unknown ? "missed-delete" : "delete", obj);
}

static void on_synced(void *ud)
{
    ((struct seen *)ud)->synced++;
}

static const struct kube_informer_handlers handlers = {
    .on_add = on_add, .on_update = on_update, .on_delete = on_delete, .on_synced = on_synced};

static cJSON *obj(const char *ns, const char *name, const char *rv, const char *owner)
{
    char text[1024];

    snprintf(text, sizeof(text),
             "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"resourceVersion\":\"%s\","
             "\"uid\":\"uid-%s\",\"managedFields\":[{\"manager\":\"x\"}]%s%s%s}}",
             ns, name, rv, name,
             owner ? ",\"ownerReferences\":[{\"uid\":\"other\"},{\"uid\":\"" : "",
             owner ? owner : "", owner ? "\",\"controller\":true}]" : "");
    return cJSON_Parse(text);
}

static cJSON *list(const char *rv, int n, cJSON **items)
{
    cJSON *l = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(l, "items");

    cJSON_AddStringToObject(l, "kind", "ConfigMapList");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(l, "metadata"), "resourceVersion", rv);
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, items[i]);
    return l;
}

struct fixture {
    struct ev_loop *loop;
    struct kube_client *c;
};

static int setup(void **state)
{
    static struct fixture f;
    struct kube_config cfg = {.server = (char *)"http://127.0.0.1:1", .allow_plain_http = true};

    f.loop = ev_loop_new(0);
    assert_int_equal(kube_client_new(f.loop, &cfg, &f.c, NULL), 0);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    kube_client_free(f->c);
    ev_loop_destroy(f->loop);
    return 0;
}

static bool count_cb(void *ud, const cJSON *o)
{
    (*(int *)ud)++;
    return true;
}

static void test_informer__relist_diff_delivers_missed_deletes(void **state)
{
    struct fixture *f = *state;
    struct kube_informer_opts o = {.resource = &KUBE_CONFIGMAPS};
    struct kube_informer *inf = NULL;
    struct seen s = {0};
    cJSON *items[3], *l;
    int n = 0;

    assert_int_equal(kube_informer_new(f->c, &o, &handlers, &s, &inf), 0);
    assert_false(kube_informer_synced(inf));
    items[0] = obj("a", "x", "1", NULL);
    items[1] = obj("a", "y", "2", "owner-1");
    items[2] = obj("b", "x", "3", "owner-1");
    l = list("3", 3, items);
    assert_int_equal(kube_informer_apply_list(inf, l), 0);
    cJSON_Delete(l);
    assert_string_equal(s.log, "add a/x@1;add a/y@2;add b/x@3;");
    assert_int_equal(s.synced, 1);
    assert_true(kube_informer_synced(inf));
    assert_string_equal(kube_informer_resource_version(inf), "3");

    /* While "disconnected": a/y was deleted, b/x changed, c/z appeared, a/x unchanged. */
    s.log[0] = '\0';
    items[0] = obj("a", "x", "1", NULL);
    items[1] = obj("b", "x", "7", NULL);
    items[2] = obj("c", "z", "8", "owner-1");
    l = list("9", 3, items);
    assert_int_equal(kube_informer_apply_list(inf, l), 0);
    cJSON_Delete(l);
    assert_string_equal(s.log, "update b/x@7;add c/z@8;missed-delete a/y@2;");
    assert_int_equal(s.synced, 1);
    assert_int_equal(kube_informer_count(inf), 3);
    assert_null(kube_informer_get(inf, "a", "y"));
    assert_string_equal(kube_obj_resource_version(kube_informer_get(inf, "b", "x")), "7");
    /* managedFields never reach the cache. */
    assert_null(cJSON_GetObjectItem(
        cJSON_GetObjectItem(kube_informer_get(inf, "a", "x"), "metadata"), "managedFields"));
    /* Owner index follows the change of controller: b/x lost its owner. */
    assert_int_equal(kube_informer_count_owned(inf, "owner-1"), 1);
    assert_int_equal(kube_informer_count_owned(inf, "other"), 0);
    kube_informer_foreach_in_namespace(inf, "a", count_cb, &n);
    assert_int_equal(n, 1);
    assert_int_equal(kube_informer_count_in_namespace(inf, "b"), 1);

    {
        struct kube_informer_stats st;

        kube_informer_get_stats(inf, &st);
        assert_int_equal(st.lists, 2);
        assert_int_equal(st.missed_deletes, 1);
    }
    /* A list without a resourceVersion is refused. */
    l = cJSON_Parse("{\"items\":[]}");
    assert_int_equal(kube_informer_apply_list(inf, l), -EINVAL);
    cJSON_Delete(l);
    kube_informer_free(inf);
}

static bool stop_after_one(void *ud, const cJSON *o)
{
    (*(int *)ud)++;
    return false;
}

static void test_informer__store_indexes(void **state)
{
    struct kube_store s;
    cJSON *old = NULL;
    char name[32];
    int n = 0;

    kube_store_init(&s);
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "o%d", i);
        assert_int_equal(
            kube_store_put(&s, obj(i % 2 ? "odd" : "even", name, "1", i % 10 == 0 ? "ten" : NULL),
                           &old),
            0);
        assert_null(old);
    }
    assert_int_equal(kube_store_count(&s), 1000);
    assert_int_equal(kube_store_count_in_namespace(&s, "odd"), 500);
    assert_int_equal(kube_store_count_owned(&s, "ten"), 100);
    kube_store_foreach_owned(&s, "ten", count_cb, &n);
    assert_int_equal(n, 100);
    n = 0;
    kube_store_foreach(&s, stop_after_one, &n);
    assert_int_equal(n, 1);
    assert_non_null(kube_store_get(&s, "even", "o10"));
    assert_null(kube_store_get(&s, "odd", "o10"));

    assert_int_equal(kube_store_remove(&s, "even", "o10", &old), 0);
    assert_string_equal(kube_obj_name(old), "o10");
    cJSON_Delete(old);
    assert_int_equal(kube_store_remove(&s, "even", "o10", &old), -ENOENT);
    assert_int_equal(kube_store_count_owned(&s, "ten"), 99);

    /* Cluster-scoped objects have no namespace. */
    assert_int_equal(kube_store_put(&s, cJSON_Parse("{\"metadata\":{\"name\":\"n1\"}}"), &old), 0);
    assert_non_null(kube_store_get(&s, NULL, "n1"));
    assert_int_equal(kube_store_put(&s, cJSON_Parse("{\"metadata\":{}}"), &old), -EINVAL);

    kube_store_mark_begin(&s);
    assert_int_equal(kube_store_put(&s, obj("odd", "o1", "2", NULL), &old), 0);
    cJSON_Delete(old);
    assert_int_equal(kube_store_sweep(&s, NULL, NULL), 999);
    assert_int_equal(kube_store_count(&s), 1);
    assert_int_equal(kube_store_count_owned(&s, "ten"), 0);
    assert_int_equal(kube_store_count_in_namespace(&s, "even"), 0);
    kube_store_done(&s);
}

/* Leaves out objects named x* and those at resourceVersion 9; keeps the rest without uid. */
static bool keep_some(void *ctx, cJSON *o)
{
    (*(int *)ctx)++;
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "uid");
    return kube_obj_name(o)[0] != 'x' && strcmp(kube_obj_resource_version(o), "9") != 0;
}

static void test_informer__transform_shapes_and_leaves_out_what_is_cached(void **state)
{
    struct fixture *f = *state;
    int calls = 0;
    struct kube_informer_opts o = {
        .resource = &KUBE_CONFIGMAPS, .transform = keep_some, .transform_ctx = &calls};
    struct kube_informer *inf = NULL;
    struct kube_informer_stats st;
    struct seen s = {0};
    cJSON *items[3], *l;

    assert_int_equal(kube_informer_new(f->c, &o, &handlers, &s, &inf), 0);
    items[0] = obj("a", "k1", "1", NULL);
    items[1] = obj("a", "x1", "2", NULL);
    items[2] = obj("a", "k2", "3", NULL);
    l = list("3", 3, items);
    assert_int_equal(kube_informer_apply_list(inf, l), 0);
    cJSON_Delete(l);
    /* Handlers see what the cache holds, and nothing of what it leaves out. */
    assert_string_equal(s.log, "add a/k1@1;add a/k2@3;");
    assert_int_equal(calls, 3);
    assert_int_equal(kube_informer_count(inf), 2);
    assert_null(kube_informer_get(inf, "a", "x1"));
    assert_null(kube_obj_uid(kube_informer_get(inf, "a", "k1")));
    assert_null(cJSON_GetObjectItem(
        cJSON_GetObjectItem(kube_informer_get(inf, "a", "k1"), "metadata"), "managedFields"));

    /* An object the transform no longer keeps leaves the cache as a deletion (of what was
     * cached), not as one missed. */
    s.log[0] = '\0';
    items[0] = obj("a", "k1", "9", NULL);
    items[1] = obj("a", "x1", "2", NULL);
    items[2] = obj("a", "k2", "3", NULL);
    l = list("9", 3, items);
    assert_int_equal(kube_informer_apply_list(inf, l), 0);
    cJSON_Delete(l);
    assert_string_equal(s.log, "delete a/k1@1;");
    assert_int_equal(kube_informer_count(inf), 1);
    assert_null(kube_informer_get(inf, "a", "k1"));
    kube_informer_get_stats(inf, &st);
    assert_int_equal(st.left_out, 3);
    assert_int_equal(st.missed_deletes, 0);
    kube_informer_free(inf);
}

/* What the program wrote replaces the cached object when it is newer, through the transform
 * and without a handler; an older or foreign write, or an object not cached, changes nothing. */
static void test_informer__a_write_is_cached_before_its_watch_event(void **state)
{
    struct fixture *f = *state;
    int calls = 0;
    struct kube_informer_opts o = {
        .resource = &KUBE_CONFIGMAPS, .transform = keep_some, .transform_ctx = &calls};
    struct kube_informer *inf = NULL;
    struct seen s = {0};
    cJSON *items[1], *l, *w;

    assert_int_equal(kube_informer_new(f->c, &o, &handlers, &s, &inf), 0);
    items[0] = obj("a", "k1", "10", NULL);
    l = list("10", 1, items);
    assert_int_equal(kube_informer_apply_list(inf, l), 0);
    cJSON_Delete(l);
    s.log[0] = '\0';

    w = obj("a", "k1", "12", NULL);
    assert_int_equal(kube_informer_observe_write(inf, w), 1);
    cJSON_Delete(w);
    assert_string_equal(kube_obj_resource_version(kube_informer_get(inf, "a", "k1")), "12");
    assert_null(kube_obj_uid(kube_informer_get(inf, "a", "k1"))); /* transformed */
    assert_string_equal(s.log, "");                               /* no handler */

    w = obj("a", "k1", "11", NULL); /* older than what is cached */
    assert_int_equal(kube_informer_observe_write(inf, w), 0);
    cJSON_Delete(w);
    w = obj("a", "k2", "13", NULL); /* not cached: it may not match the selector */
    assert_int_equal(kube_informer_observe_write(inf, w), 0);
    cJSON_Delete(w);
    w = obj("a", "k1", "x14", NULL); /* not a number */
    assert_int_equal(kube_informer_observe_write(inf, w), 0);
    cJSON_Delete(w);
    assert_string_equal(kube_obj_resource_version(kube_informer_get(inf, "a", "k1")), "12");
    assert_null(kube_informer_get(inf, "a", "k2"));
    kube_informer_free(inf);
}

/* What nestcp_informer_bytes reports: the heap of what is cached, and nothing once it is gone.
 * Objects are kept compressed: one whose data cannot be compressed counts at least its
 * entropy, one like the first object of the store (its dictionary) little. */
static void test_informer__store_counts_the_bytes_it_holds(void **state)
{
    struct kube_store s;
    cJSON *old = NULL, *big = obj("a", "x", "2", "owner-1");
    const char *b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint64_t rng = 0x9e3779b97f4a7c15u;
    char data[4096];
    size_t small_bytes, big_bytes, both;

    kube_store_init(&s);
    assert_int_equal(kube_store_bytes(&s), 0);
    assert_int_equal(kube_store_put(&s, obj("a", "x", "1", NULL), &old), 0);
    small_bytes = kube_store_bytes(&s);
    /* Its entry, its compressed text, and the dictionary it made: its text. */
    assert_true(small_bytes > 200);

    /* Replacing an object counts the new one instead of the old. Random base64, as a
     * Secret's keys are, keeps six bits of every eight. */
    for (size_t i = 0; i < sizeof(data) - 1; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        data[i] = b64[rng & 63];
    }
    data[sizeof(data) - 1] = '\0';
    cJSON_AddStringToObject(cJSON_AddObjectToObject(big, "data"), "key", data);
    assert_int_equal(kube_store_put(&s, big, &old), 0);
    assert_string_equal(kube_obj_resource_version(old), "1");
    cJSON_Delete(old);
    big_bytes = kube_store_bytes(&s);
    assert_true(big_bytes >= small_bytes + 3 * sizeof(data) / 4 - 64);
    assert_true(big_bytes < small_bytes + sizeof(data));

    /* An object like the dictionary costs its entry and a few bytes more. */
    assert_int_equal(kube_store_put(&s, obj("b", "y", "1", NULL), &old), 0);
    both = kube_store_bytes(&s);
    assert_true(both > big_bytes);
    assert_true(both < big_bytes + 300);
    assert_int_equal(kube_store_remove(&s, "a", "x", &old), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(old, "data")), 1);
    cJSON_Delete(old);
    assert_true(kube_store_bytes(&s) < both - 3 * sizeof(data) / 4 + 64);
    /* Emptied, the store lets its dictionary go too. */
    kube_store_mark_begin(&s);
    assert_int_equal(kube_store_sweep(&s, NULL, NULL), 1);
    assert_int_equal(kube_store_bytes(&s), 0);
    kube_store_done(&s);
}

struct kept {
    char names[256];
};

static void keep_name(void *ud, const cJSON *obj)
{
    struct kept *k = ud;
    size_t n = strlen(k->names);

    snprintf(k->names + n, sizeof(k->names) - n, "%s@%s;", kube_obj_name(obj),
             kube_obj_resource_version(obj));
}

static void on_add_kept(void *ud, const cJSON *obj)
{
    keep_name(ud, obj);
}

static void on_update_kept(void *ud, const cJSON *old_obj, const cJSON *new_obj)
{
    keep_name(ud, old_obj);
    keep_name(ud, new_obj);
}

/* Cached objects are kept as their text after the transform and parsed when read; handlers see
 * both the old and the new of an update, a write-through replaces an object whole, and what a
 * lookup reads after a trim is the same object parsed again. */
static void test_informer__caches_each_object_as_text(void **state)
{
    struct fixture *f = *state;
    int calls = 0;
    struct kube_informer_opts o = {
        .resource = &KUBE_CONFIGMAPS, .transform = keep_some, .transform_ctx = &calls};
    const struct kube_informer_handlers h = {.on_add = on_add_kept, .on_update = on_update_kept};
    struct kube_informer *inf = NULL;
    struct kept k = {{0}};
    cJSON *items[2], *l, *w;
    const cJSON *got;
    char *before;

    assert_int_equal(kube_informer_new(f->c, &o, &h, &k, &inf), 0);
    items[0] = obj("a", "k1", "1", "owner-1");
    items[1] = obj("a", "k2", "2", NULL);
    l = list("2", 2, items);
    assert_int_equal(kube_informer_apply_list(inf, l), 0);
    cJSON_Delete(l);
    items[0] = obj("a", "k1", "3", "owner-1");
    l = list("3", 1, items);
    assert_int_equal(kube_informer_apply_list(inf, l), 0);
    cJSON_Delete(l);
    assert_string_equal(k.names, "k1@1;k2@2;k1@1;k1@3;");

    got = kube_informer_get(inf, "a", "k1");
    assert_null(kube_obj_uid(got)); /* transformed before it was kept */
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(got, "metadata"), "managedFields"));
    assert_ptr_equal(kube_informer_get(inf, "a", "k1"), got); /* read again: not parsed again */
    assert_int_equal(kube_informer_count_owned(inf, "owner-1"), 1);
    before = cJSON_PrintUnformatted(got);
    assert_non_null(before);

    /* Trimmed to nothing (as the manager never does), it is parsed again from the text: the
     * same object. */
    kube_store_trim_to((struct kube_store *)kube_informer_store(inf), 0);
    assert_int_equal(kube_store_hot_bytes(kube_informer_store(inf)), 0);
    got = kube_informer_get(inf, "a", "k1");
    assert_non_null(got);
    {
        char *after = cJSON_PrintUnformatted(got);
        assert_string_equal(after, before);
        free(after);
    }
    free(before);

    w = obj("a", "k1", "5", "owner-1");
    assert_int_equal(kube_informer_observe_write(inf, w), 1);
    cJSON_Delete(w);
    got = kube_informer_get(inf, "a", "k1");
    assert_string_equal(kube_obj_resource_version(got), "5");
    assert_int_equal(kube_informer_count_owned(inf, "owner-1"), 1);
    kube_informer_free(inf);
}

/* Heap bytes of a cJSON tree as cJSON_Parse builds it. */
static size_t tree_bytes(const cJSON *o)
{
    size_t n = 0;

    for (; o; o = o->next) {
        n += malloc_usable_size((void *)o);
        if (o->string)
            n += malloc_usable_size(o->string);
        if (o->valuestring)
            n += malloc_usable_size(o->valuestring);
        n += tree_bytes(o->child);
    }
    return n;
}

/* An object counts as its text and its entry, less than the same object parsed; the trees
 * parsed for reading are counted apart, and a trim frees those read longest ago first. */
static void test_informer__store_counts_an_object_as_its_text(void **state)
{
    struct kube_store s;
    cJSON *old = NULL, *tree;
    const cJSON *x0, *x7;
    size_t trees = 0, held, one;
    char name[16];

    kube_store_init(&s);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "x%d", i);
        tree = obj("a", name, "1", "owner-1");
        trees += tree_bytes(tree);
        assert_int_equal(kube_store_put(&s, tree, &old), 0);
        assert_null(old);
    }
    assert_true(kube_store_bytes(&s) < trees);
    assert_int_equal(kube_store_count_owned(&s, "owner-1"), 8);

    /* What was put is hot, and weighs as much as its text estimates, whoever trims. */
    one = kube_store_hot_bytes(&s) / 8;
    assert_true(one > 0);
    kube_store_trim_to(&s, one);
    assert_int_equal(kube_store_hot_bytes(&s), one);
    x7 = kube_store_get(&s, "a", "x7"); /* the one put last stayed parsed */
    assert_int_equal(kube_store_hot_bytes(&s), one);
    x0 = kube_store_get(&s, "a", "x0"); /* parsed again */
    assert_string_equal(kube_obj_name(x0), "x0");
    assert_int_equal(kube_store_hot_bytes(&s), 2 * one);
    /* Read most recently, x0 outlives x7 in the next trim. */
    kube_store_trim_to(&s, one);
    assert_ptr_equal(kube_store_get(&s, "a", "x0"), x0);
    assert_int_equal(kube_store_hot_bytes(&s), one);
    (void)x7;

    /* Removing one gives back its object and what its text and entry held. */
    held = kube_store_bytes(&s);
    tree = NULL;
    assert_int_equal(kube_store_remove(&s, "a", "x7", &tree), 0);
    assert_string_equal(kube_obj_name(tree), "x7");
    assert_true(held - kube_store_bytes(&s) > 100);
    assert_true(held - kube_store_bytes(&s) < tree_bytes(tree));
    cJSON_Delete(tree);
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof(name), "x%d", i);
        assert_int_equal(kube_store_remove(&s, "a", name, i % 2 ? &old : NULL), 0);
        cJSON_Delete(i % 2 ? old : NULL);
    }
    assert_int_equal(kube_store_bytes(&s), 0);
    assert_int_equal(kube_store_hot_bytes(&s), 0);
    kube_store_done(&s);
}

static void test_informer__backoff_grows_to_30s_with_jitter(void **state)
{
    assert_true(kube_informer_backoff(0, 0.3) == 0.0);
    assert_true(kube_informer_backoff(1, 1.0) == 0.8);
    assert_true(kube_informer_backoff(1, 0.0) == 0.4);
    assert_true(kube_informer_backoff(2, 1.0) == 1.6);
    assert_true(kube_informer_backoff(6, 1.0) == 25.6);
    assert_true(kube_informer_backoff(7, 1.0) == 30.0);
    assert_true(kube_informer_backoff(100, 1.0) == 30.0);
    assert_true(kube_informer_backoff(100, 0.0) == 15.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_informer__relist_diff_delivers_missed_deletes),
        cmocka_unit_test(test_informer__store_indexes),
        cmocka_unit_test(test_informer__transform_shapes_and_leaves_out_what_is_cached),
        cmocka_unit_test(test_informer__a_write_is_cached_before_its_watch_event),
        cmocka_unit_test(test_informer__store_counts_the_bytes_it_holds),
        cmocka_unit_test(test_informer__caches_each_object_as_text),
        cmocka_unit_test(test_informer__store_counts_an_object_as_its_text),
        cmocka_unit_test(test_informer__backoff_grows_to_30s_with_jitter),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
