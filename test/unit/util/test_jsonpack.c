#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/jsonpack.h"

static const char doc[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
    "\"metadata\":{\"name\":\"p-0\",\"namespace\":\"ns\",\"labels\":{\"app\":\"etcd\","
    "\"name\":\"p\"},\"ownerReferences\":[{\"kind\":\"StatefulSet\",\"name\":\"p\","
    "\"controller\":true}],\"generation\":3},"
    "\"spec\":{\"volumes\":[],\"schedulingGates\":[{\"name\":\"g\"}],\"n\":-1.5e3},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":null,\"ready\":false,\"empty\":{},"
    "\"ips\":[\"10.0.0.1\",\"10.0.0.2\",\"10.0.0.1\"],\"nested\":[[1,2],[3]]}}";

/* Heap of a tree as cJSON_Parse allocated it. */
static size_t tree_bytes(const cJSON *o)
{
    size_t n = 0;

    for (; o; o = o->next) {
        n += malloc_usable_size((void *)o);
        n += o->string ? malloc_usable_size(o->string) : 0;
        n += o->valuestring ? malloc_usable_size(o->valuestring) : 0;
        n += tree_bytes(o->child);
    }
    return n;
}

/* Checks the prev links as cJSON keeps them: each node's prev is its predecessor, the first
 * one's the last sibling. */
static void assert_links(const cJSON *o)
{
    const cJSON *first = o, *last = NULL;

    for (; o; last = o, o = o->next) {
        if (o != first)
            assert_ptr_equal(o->prev, last);
        assert_links(o->child);
    }
    if (first)
        assert_ptr_equal(first->prev, last);
}

static void test_jsonpack__copy_reads_as_the_tree_it_was_copied_from(void **state)
{
    cJSON *tree = cJSON_Parse(doc), *p;
    char *a, *b;

    assert_non_null(tree);
    p = jsonpack_copy(tree, NULL);
    assert_non_null(p);
    assert_true(jsonpack_is_packed(p));
    assert_false(jsonpack_is_packed(tree));
    assert_true(cJSON_IsObject(p));
    assert_true(cJSON_Compare(tree, p, true));
    a = cJSON_PrintUnformatted(tree);
    b = cJSON_PrintUnformatted(p);
    assert_string_equal(a, b);
    assert_links(p->child);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                                                   cJSON_GetObjectItemCaseSensitive(p, "metadata"),
                                                   "ownerReferences"),
                                               0),
                            "kind")),
                        "StatefulSet");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(p, "status"), "ips")),
                     3);
    /* One block, smaller than the tree's many. */
    assert_true(jsonpack_bytes(p) < tree_bytes(tree));
    free(a);
    free(b);
    cJSON_Delete(tree);
    cJSON_Delete(p); /* frees the block: the sanitizers' leak check sees nothing left */
}

static void test_jsonpack__a_repeated_string_is_kept_once(void **state)
{
    cJSON *tree = cJSON_Parse(doc), *p = jsonpack_copy(tree, NULL);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(p, "metadata");
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    const cJSON *ips =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "status"), "ips");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");

    assert_non_null(p);
    /* The key "name" of metadata and of a label, and a value repeated in a list. */
    assert_ptr_equal(name->string, cJSON_GetObjectItemCaseSensitive(labels, "name")->string);
    assert_ptr_equal(cJSON_GetArrayItem(ips, 0)->valuestring,
                     cJSON_GetArrayItem(ips, 2)->valuestring);
    /* Every string lies in the block. */
    assert_true((char *)name->valuestring > (char *)p);
    assert_true((char *)name->valuestring < (char *)p + jsonpack_bytes(p));
    cJSON_Delete(tree);
    cJSON_Delete(p);
}

/* What a reader keeps of a packed object outlives it only as a cJSON_Duplicate, an ordinary
 * tree with strings of its own (the sanitizers would see a read of the freed block). */
static void test_jsonpack__a_duplicate_is_independent_of_the_block(void **state)
{
    cJSON *tree = cJSON_Parse(doc), *p = jsonpack_copy(tree, NULL), *d;

    assert_non_null(p);
    d = cJSON_Duplicate(p, true);
    assert_non_null(d);
    assert_false(jsonpack_is_packed(d));
    cJSON_Delete(p);
    assert_true(cJSON_Compare(tree, d, true));
    cJSON_DeleteItemFromObjectCaseSensitive(d, "spec"); /* an ordinary tree: it may change */
    assert_null(cJSON_GetObjectItemCaseSensitive(d, "spec"));
    cJSON_Delete(d);
    cJSON_Delete(tree);
}

/* An object taken out of a watch event keeps its key ("object"); the copy does not need it. */
static void test_jsonpack__a_detached_root_and_small_roots(void **state)
{
    cJSON *ev = cJSON_Parse("{\"type\":\"ADDED\",\"object\":{\"a\":\"b\"}}");
    cJSON *obj = cJSON_DetachItemFromObjectCaseSensitive(ev, "object"), *p;

    assert_string_equal(obj->string, "object");
    p = jsonpack_copy(obj, NULL);
    assert_non_null(p);
    assert_null(p->string);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "a")), "b");
    cJSON_Delete(p);
    cJSON_Delete(obj);
    cJSON_Delete(ev);

    obj = cJSON_CreateObject();
    p = jsonpack_copy(obj, NULL);
    assert_true(cJSON_IsObject(p) && !p->child);
    assert_true(cJSON_Compare(obj, p, true));
    cJSON_Delete(p);
    cJSON_Delete(obj);

    obj = cJSON_CreateString("only");
    p = jsonpack_copy(obj, NULL);
    assert_string_equal(cJSON_GetStringValue(p), "only");
    cJSON_Delete(p);
    cJSON_Delete(obj);

    assert_null(jsonpack_copy(NULL, NULL));
    assert_false(jsonpack_is_packed(NULL));
    assert_int_equal(jsonpack_bytes(NULL), 0);
}

/* Trees packed with one table share its keys, each tree holding only its values; a key past
 * the table's bounds stays in the tree. */
static void test_jsonpack__trees_share_the_keys_of_a_table(void **state)
{
    struct jsonpack_keys keys = {0};
    cJSON *tree = cJSON_Parse(doc), *a, *b, *alone, *d, *big;
    char name[JSONPACK_KEY_LEN_MAX + 2];
    size_t table;

    a = jsonpack_copy(tree, &keys);
    table = jsonpack_keys_bytes(&keys);
    assert_true(table > 0);
    b = jsonpack_copy(tree, &keys);
    alone = jsonpack_copy(tree, NULL);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(alone);
    assert_int_equal(jsonpack_keys_bytes(&keys), table); /* nothing new to share */
    assert_true(cJSON_Compare(tree, b, true));
    assert_ptr_equal(cJSON_GetObjectItemCaseSensitive(a, "metadata")->string,
                     cJSON_GetObjectItemCaseSensitive(b, "metadata")->string);
    assert_true(jsonpack_bytes(b) < jsonpack_bytes(alone));
    cJSON_Delete(alone);
    /* A copy owns its keys: it outlives the table. */
    d = cJSON_Duplicate(b, true);
    cJSON_Delete(a);
    cJSON_Delete(b);
    jsonpack_keys_done(&keys);
    assert_true(cJSON_Compare(tree, d, true));
    cJSON_Delete(d);

    /* A full table shares what it has and no more; a long key is never shared. */
    big = cJSON_CreateObject();
    for (int i = 0; i < JSONPACK_KEYS_MAX; i++) {
        snprintf(name, sizeof(name), "k%d", i);
        cJSON_AddNumberToObject(big, name, i);
    }
    a = jsonpack_copy(big, &keys);
    assert_non_null(a);
    assert_int_equal(strmap_size(&keys.map), JSONPACK_KEYS_MAX);
    memset(name, 'x', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    cJSON_AddNumberToObject(tree, name, 1);
    b = jsonpack_copy(tree, &keys);
    assert_non_null(b);
    assert_int_equal(strmap_size(&keys.map), JSONPACK_KEYS_MAX);
    assert_true(cJSON_Compare(tree, b, true));
    assert_true(cJSON_GetObjectItemCaseSensitive(b, name)->string > (char *)b);
    assert_true(cJSON_GetObjectItemCaseSensitive(b, name)->string < (char *)b + jsonpack_bytes(b));
    assert_ptr_equal(cJSON_GetObjectItemCaseSensitive(a, "k7")->string,
                     strmap_get(&keys.map, "k7"));
    cJSON_Delete(a);
    cJSON_Delete(b);
    jsonpack_keys_done(&keys);
    assert_int_equal(strmap_size(&keys.map), 0);
    cJSON_Delete(big);
    cJSON_Delete(tree);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonpack__copy_reads_as_the_tree_it_was_copied_from),
        cmocka_unit_test(test_jsonpack__a_repeated_string_is_kept_once),
        cmocka_unit_test(test_jsonpack__a_duplicate_is_independent_of_the_block),
        cmocka_unit_test(test_jsonpack__a_detached_root_and_small_roots),
        cmocka_unit_test(test_jsonpack__trees_share_the_keys_of_a_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
