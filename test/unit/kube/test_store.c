#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/kube/object.h"
#include "lib/kube/store.h"

/* The index the tests give a store: tag 0 the label "cluster", tag 1 spec.ref. */
enum { TAG_CLUSTER, TAG_REF };

static size_t index_fn(const cJSON *obj, struct kube_store_index_key *keys)
{
    const cJSON *ref =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "spec"), "ref");
    size_t n = 0;

    keys[n] = (struct kube_store_index_key){TAG_CLUSTER, kube_obj_label(obj, "cluster")};
    if (keys[n].value)
        n++;
    if (cJSON_IsString(ref))
        keys[n++] = (struct kube_store_index_key){TAG_REF, ref->valuestring};
    return n;
}

static cJSON *obj_new(const char *ns, const char *name, const char *cluster, const char *ref)
{
    cJSON *o = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(o, "metadata");

    cJSON_AddStringToObject(md, "namespace", ns);
    cJSON_AddStringToObject(md, "name", name);
    if (cluster)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "labels"), "cluster", cluster);
    if (ref)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "spec"), "ref", ref);
    return o;
}

static void put(struct kube_store *s, const char *ns, const char *name, const char *cluster,
                const char *ref)
{
    cJSON *old = NULL;

    assert_int_equal(kube_store_put(s, obj_new(ns, name, cluster, ref), &old), 0);
    cJSON_Delete(old);
}

/* Names called, space-separated. */
struct names {
    char buf[65536];
    size_t len;
};

static bool add_name(void *userdata, const cJSON *obj)
{
    struct names *n = userdata;
    int w = snprintf(n->buf + n->len, sizeof(n->buf) - n->len, "%s ", kube_obj_name(obj));

    assert_true(w > 0 && (size_t)w < sizeof(n->buf) - n->len);
    n->len += (size_t)w;
    return true;
}

static const char *indexed(struct names *n, const struct kube_store *s, const char *ns,
                           const struct kube_store_index_key *keys, size_t nkeys)
{
    n->len = 0;
    n->buf[0] = '\0';
    kube_store_foreach_indexed(s, ns, keys, nkeys, add_name, n);
    return n->buf;
}

/* What the walk over the namespace finds with any of keys: what the index must give. */
struct filter {
    const struct kube_store_index_key *keys;
    size_t nkeys;
    struct names *out;
};

static bool filter_one(void *userdata, const cJSON *obj)
{
    struct filter *f = userdata;
    struct kube_store_index_key k[KUBE_STORE_INDEX_KEYS];
    size_t n = index_fn(obj, k);

    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < f->nkeys; j++)
            if (k[i].tag == f->keys[j].tag && strcmp(k[i].value, f->keys[j].value) == 0)
                return add_name(f->out, obj);
    return true;
}

static const char *walked(struct names *n, const struct kube_store *s, const char *ns,
                          const struct kube_store_index_key *keys, size_t nkeys)
{
    struct filter f = {keys, nkeys, n};

    n->len = 0;
    n->buf[0] = '\0';
    kube_store_foreach_in_namespace(s, ns, filter_one, &f);
    return n->buf;
}

static const struct kube_store_index_key KEY_A = {TAG_CLUSTER, "a"};
static const struct kube_store_index_key KEY_B = {TAG_CLUSTER, "b"};

static void test_store__index_finds_objects_by_key_in_namespace_order(void **state)
{
    struct kube_store s;
    struct names got;
    struct kube_store_index_key both[] = {{TAG_CLUSTER, "a"}, {TAG_REF, "a"}};

    (void)state;
    kube_store_init(&s);
    assert_int_equal(kube_store_set_index(&s, index_fn), 0);
    assert_true(kube_store_indexed(&s));
    put(&s, "ns1", "x1", "a", NULL);
    put(&s, "ns1", "x2", "b", "a");
    put(&s, "ns1", "x3", "a", "a"); /* under both keys: called once */
    put(&s, "ns2", "x4", "a", NULL);
    put(&s, "ns1", "x5", NULL, NULL);
    /* The namespace walks newest first; the index keeps that order. */
    assert_string_equal(indexed(&got, &s, "ns1", &KEY_A, 1), "x3 x1 ");
    assert_string_equal(indexed(&got, &s, "ns1", both, 2), "x3 x2 x1 ");
    assert_string_equal(indexed(&got, &s, "ns2", &KEY_A, 1), "x4 ");
    assert_string_equal(indexed(&got, &s, "ns1", &(struct kube_store_index_key){TAG_REF, "b"}, 1),
                        "");
    assert_string_equal(indexed(&got, &s, "ns3", &KEY_A, 1), "");
    /* A label value is not a ref value. */
    assert_string_equal(indexed(&got, &s, "ns1", &(struct kube_store_index_key){TAG_REF, "x"}, 1),
                        "");
    /* Replacing an object that keeps its keys keeps its place. */
    put(&s, "ns1", "x1", "a", NULL);
    assert_string_equal(indexed(&got, &s, "ns1", &KEY_A, 1), "x3 x1 ");
    kube_store_done(&s);
}

static void test_store__relabelled_object_moves_between_buckets(void **state)
{
    struct kube_store s;
    struct names got, want;

    (void)state;
    kube_store_init(&s);
    assert_int_equal(kube_store_set_index(&s, index_fn), 0);
    put(&s, "ns", "old", "a", NULL);
    put(&s, "ns", "mid", "b", NULL);
    put(&s, "ns", "new", "b", NULL);
    put(&s, "ns", "old", "b", NULL); /* relabelled: now in b, still the oldest */
    assert_string_equal(indexed(&got, &s, "ns", &KEY_A, 1), "");
    assert_string_equal(indexed(&got, &s, "ns", &KEY_B, 1), "new mid old ");
    assert_string_equal(indexed(&got, &s, "ns", &KEY_B, 1), walked(&want, &s, "ns", &KEY_B, 1));
    put(&s, "ns", "mid", NULL, NULL); /* label removed */
    assert_string_equal(indexed(&got, &s, "ns", &KEY_B, 1), "new old ");
    put(&s, "ns", "mid", "b", NULL); /* and back, between the two */
    assert_string_equal(indexed(&got, &s, "ns", &KEY_B, 1), "new mid old ");
    kube_store_done(&s);
}

static void test_store__removed_and_swept_objects_leave_the_index(void **state)
{
    struct kube_store s;
    struct names got;
    cJSON *old = NULL;

    (void)state;
    kube_store_init(&s);
    assert_int_equal(kube_store_set_index(&s, index_fn), 0);
    put(&s, "ns", "x1", "a", NULL);
    put(&s, "ns", "x2", "a", NULL);
    put(&s, "ns", "x3", "a", NULL);
    assert_int_equal(kube_store_remove(&s, "ns", "x2", &old), 0);
    assert_string_equal(kube_obj_name(old), "x2");
    cJSON_Delete(old);
    assert_string_equal(indexed(&got, &s, "ns", &KEY_A, 1), "x3 x1 ");

    /* A relist that no longer has x1, and has x3 relabelled. */
    kube_store_mark_begin(&s);
    put(&s, "ns", "x3", "b", NULL);
    assert_int_equal(kube_store_sweep(&s, NULL, NULL), 1);
    assert_string_equal(indexed(&got, &s, "ns", &KEY_A, 1), "");
    assert_string_equal(indexed(&got, &s, "ns", &KEY_B, 1), "x3 ");
    assert_int_equal(kube_store_remove(&s, "ns", "x3", &old), 0);
    cJSON_Delete(old);
    assert_string_equal(indexed(&got, &s, "ns", &KEY_B, 1), "");
    assert_int_equal(kube_store_count(&s), 0);
    assert_int_equal(s.by_index.count, 0); /* every bucket freed */
    kube_store_done(&s);
}

/* Without an index, or once objects are in: the namespace walk, and no index to set. */
static void test_store__without_index_walks_the_namespace(void **state)
{
    struct kube_store s;
    struct names got;

    (void)state;
    kube_store_init(&s);
    put(&s, "ns", "x1", "a", NULL);
    put(&s, "ns", "x2", "b", NULL);
    assert_false(kube_store_indexed(&s));
    assert_int_equal(kube_store_set_index(&s, index_fn), -EBUSY);
    assert_string_equal(indexed(&got, &s, "ns", &KEY_A, 1), "x2 x1 ");
    kube_store_done(&s);
}

static bool add_key(void *userdata, const char *ns, const char *name)
{
    struct names *n = userdata;

    n->len += (size_t)snprintf(n->buf + n->len, sizeof(n->buf) - n->len, "%s/%s ", ns, name);
    return true;
}

/* A walk of the keys parses nothing: a resync of thousands of objects queues their keys
 * without holding them all parsed. The trees read before stay as they were. */
static void test_store__a_walk_of_keys_parses_nothing(void **state)
{
    struct kube_store s;
    struct names got = {.len = 0};
    size_t hot;

    (void)state;
    kube_store_init(&s);
    put(&s, "ns", "x1", "a", NULL);
    put(&s, "", "cluster-wide", NULL, NULL);
    kube_store_trim_to(&s, 0);
    assert_non_null(kube_store_get(&s, "ns", "x1"));
    hot = kube_store_hot_bytes(&s);
    assert_true(hot > 0);
    got.buf[0] = '\0';
    kube_store_foreach_key(&s, add_key, &got);
    assert_true(strstr(got.buf, "ns/x1 ") != NULL);
    assert_true(strstr(got.buf, "/cluster-wide ") == got.buf ||
                strstr(got.buf, " /cluster-wide ") != NULL);
    assert_int_equal(got.len, strlen("ns/x1 /cluster-wide "));
    assert_int_equal(kube_store_hot_bytes(&s), hot);
    kube_store_done(&s);
}

/* The index lives outside the objects' bytes, as the other indexes do. */
static void test_store__index_is_not_counted_in_bytes(void **state)
{
    struct kube_store plain, ix;

    (void)state;
    kube_store_init(&plain);
    kube_store_init(&ix);
    assert_int_equal(kube_store_set_index(&ix, index_fn), 0);
    for (int i = 0; i < 50; i++) {
        char name[32];
        snprintf(name, sizeof(name), "x%d", i);
        put(&plain, "ns", name, i % 2 ? "a" : "b", "r");
        put(&ix, "ns", name, i % 2 ? "a" : "b", "r");
    }
    /* The index holds over 64 bytes an object (its links in two buckets); malloc may hand out
     * a block a few bytes larger than asked either way. */
    assert_true(kube_store_bytes(&ix) < kube_store_bytes(&plain) + 50 * 32);
    assert_true(kube_store_bytes(&plain) < kube_store_bytes(&ix) + 50 * 32);
    kube_store_done(&plain);
    kube_store_done(&ix);
}

/* Many objects put, relabelled, removed and swept at random: every key of every namespace
 * gives what the walk over the namespace finds, in its order. */
static void test_store__many_objects_match_the_namespace_walk(void **state)
{
    static const char *const nss[] = {"ns1", "ns2"};
    struct kube_store s;
    static struct names got, want;
    uint64_t rng = 88172645463325252ull;
    char clusters[40][8], names_[3000][16];

    (void)state;
    for (int i = 0; i < 40; i++)
        snprintf(clusters[i], sizeof(clusters[i]), "c%d", i);
    for (int i = 0; i < 3000; i++)
        snprintf(names_[i], sizeof(names_[i]), "o%d", i);
    kube_store_init(&s);
    assert_int_equal(kube_store_set_index(&s, index_fn), 0);
    for (int round = 0; round < 4; round++) {
        bool relist = round == 2;

        if (relist)
            kube_store_mark_begin(&s);
        for (int i = 0; i < 3000; i++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            const char *ns = nss[rng % 2];
            int what = (int)((rng >> 8) % 10);
            cJSON *old = NULL;

            if (what == 0 && !relist) {
                if (kube_store_remove(&s, ns, names_[i], &old) == 0)
                    cJSON_Delete(old);
            } else if (what < 8 || relist) {
                put(&s, ns, names_[i], what == 1 ? NULL : clusters[(rng >> 16) % 40],
                    what < 4 ? clusters[(rng >> 24) % 40] : NULL);
            }
        }
        if (relist)
            kube_store_sweep(&s, NULL, NULL);
        for (int n = 0; n < 2; n++) {
            for (int c = 0; c < 40; c++) {
                struct kube_store_index_key keys[] = {{TAG_CLUSTER, clusters[c]},
                                                      {TAG_REF, clusters[(c * 7) % 40]}};
                assert_string_equal(indexed(&got, &s, nss[n], keys, 1),
                                    walked(&want, &s, nss[n], keys, 1));
                assert_string_equal(indexed(&got, &s, nss[n], keys + 1, 1),
                                    walked(&want, &s, nss[n], keys + 1, 1));
                assert_string_equal(indexed(&got, &s, nss[n], keys, 2),
                                    walked(&want, &s, nss[n], keys, 2));
            }
        }
    }
    assert_true(kube_store_count(&s) > 1000);
    kube_store_done(&s);
}

static bool stop_first(void *userdata, const cJSON *obj)
{
    (void)obj;
    ++*(int *)userdata;
    return false;
}

static void test_store__indexed_walk_stops_when_asked(void **state)
{
    struct kube_store s;
    int calls = 0;

    (void)state;
    kube_store_init(&s);
    assert_int_equal(kube_store_set_index(&s, index_fn), 0);
    put(&s, "ns", "x1", "a", NULL);
    put(&s, "ns", "x2", "a", NULL);
    kube_store_foreach_indexed(&s, "ns", &KEY_A, 1, stop_first, &calls);
    assert_int_equal(calls, 1);
    kube_store_done(&s);
}

/* Base64 of n bytes, as a Secret's data holds them. */
static char *base64_of(const unsigned char *p, size_t n)
{
    char *out = malloc((n + 2) / 3 * 4 + 1);

    assert_non_null(out);
    EVP_EncodeBlock((unsigned char *)out, p, (int)n);
    return out;
}

/* A Secret as the API server sends one: its value is base64 of a PEM block of der[0..n). */
static cJSON *secret_of(const char *name, const unsigned char *der, size_t n)
{
    char *body = base64_of(der, n), *pem, *value;
    size_t len = strlen(body), at = 0;
    cJSON *o = obj_new("ns", name, "a", NULL), *data;

    pem = malloc(len + len / 64 + 64);
    assert_non_null(pem);
    at += (size_t)sprintf(pem, "-----BEGIN CERTIFICATE-----\n");
    for (size_t i = 0; i < len; i += 64)
        at += (size_t)sprintf(pem + at, "%.64s\n", body + i);
    sprintf(pem + at, "-----END CERTIFICATE-----\n");
    value = base64_of((const unsigned char *)pem, strlen(pem));
    data = cJSON_AddObjectToObject(o, "data");
    assert_non_null(cJSON_AddStringToObject(data, "tls.crt", value));
    free(body);
    free(pem);
    free(value);
    return o;
}

/* A Secret's certificate is kept as its DER, not as base64 of base64: random DER takes about
 * its own size, against at least three quarters of the 16/9 times as many characters of its
 * twice-encoded text; and what is read back is the Secret as it was put, byte for byte. */
static void test_store__secrets_keep_their_der_and_read_back_as_sent(void **state)
{
    enum { N = 8, DER = 2048 };
    struct kube_store s;
    unsigned char der[DER];
    char *sent[N], name[16];
    uint32_t x = 2463534242u;

    (void)state;
    kube_store_init(&s);
    for (int i = 0; i < N; i++) {
        cJSON *o;

        for (size_t j = 0; j < DER; j++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            der[j] = (unsigned char)x;
        }
        snprintf(name, sizeof(name), "c%d-ca", i);
        o = secret_of(name, der, DER);
        sent[i] = cJSON_PrintUnformatted(o);
        assert_int_equal(kube_store_put(&s, o, NULL), 0);
    }
    assert_true(kube_store_bytes(&s) < (size_t)N * (DER + 512));

    kube_store_trim_to(&s, 0);
    for (int i = 0; i < N; i++) {
        char *back;

        snprintf(name, sizeof(name), "c%d-ca", i);
        back = cJSON_PrintUnformatted(kube_store_get(&s, "ns", name));
        assert_string_equal(back, sent[i]);
        free(back);
        free(sent[i]);
    }
    kube_store_done(&s);
}

/* Object i as it grows: without status at first, then with conditions, as a control plane's
 * fill in while it comes up. */
static cJSON *grown(int i, int round)
{
    static const char *const types[] = {
        "EtcdReady",         "APIServerReady",  "ControllerManagerReady",
        "CertificatesReady", "KubeconfigReady", "Ready"};
    char name[16], text[128];
    cJSON *o, *conds;

    snprintf(name, sizeof(name), "cp%d", i);
    o = obj_new("ns", name, "a", NULL);
    if (round == 0)
        return o;
    conds = cJSON_AddArrayToObject(cJSON_AddObjectToObject(o, "status"), "conditions");
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        cJSON *c = cJSON_CreateObject();

        cJSON_AddStringToObject(c, "type", types[t]);
        cJSON_AddStringToObject(c, "status", round > 1 ? "True" : "False");
        cJSON_AddStringToObject(c, "reason", round > 1 ? "Available" : "WaitingForComponents");
        snprintf(text, sizeof(text), "%s of control plane ns/%s is being reconciled, round %d",
                 types[t], name, round);
        cJSON_AddStringToObject(c, "message", text);
        cJSON_AddStringToObject(c, "lastTransitionTime", "2026-12-07T10:00:00Z");
        cJSON_AddNumberToObject(c, "observedGeneration", round);
        cJSON_AddItemToArray(conds, c);
    }
    return o;
}

/* The dictionary, taken from the first object put, is taken again from a grown one after
 * enough puts: objects that grew after the first was put end up as small as they are in a
 * store that only ever saw them grown, and read back as they were put. */
static void test_store__the_dictionary_is_taken_again_from_a_grown_object(void **state)
{
    enum { N = 100 };
    struct kube_store s, direct;
    char *sent[N], name[16];

    (void)state;
    kube_store_init(&s);
    kube_store_init(&direct);
    for (int round = 0; round < 4; round++)
        for (int i = 0; i < N; i++)
            assert_int_equal(kube_store_put(&s, grown(i, round), NULL), 0);
    for (int i = 0; i < N; i++) {
        cJSON *o = grown(i, 3);

        sent[i] = cJSON_PrintUnformatted(o);
        assert_int_equal(kube_store_put(&direct, o, NULL), 0);
    }
    assert_true(kube_store_bytes(&s) < kube_store_bytes(&direct) * 11 / 10);

    kube_store_trim_to(&s, 0);
    for (int i = 0; i < N; i++) {
        char *back;

        snprintf(name, sizeof(name), "cp%d", i);
        back = cJSON_PrintUnformatted(kube_store_get(&s, "ns", name));
        assert_string_equal(back, sent[i]);
        free(back);
        free(sent[i]);
    }
    kube_store_done(&s);
    kube_store_done(&direct);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store__index_finds_objects_by_key_in_namespace_order),
        cmocka_unit_test(test_store__relabelled_object_moves_between_buckets),
        cmocka_unit_test(test_store__removed_and_swept_objects_leave_the_index),
        cmocka_unit_test(test_store__without_index_walks_the_namespace),
        cmocka_unit_test(test_store__index_is_not_counted_in_bytes),
        cmocka_unit_test(test_store__many_objects_match_the_namespace_walk),
        cmocka_unit_test(test_store__indexed_walk_stops_when_asked),
        cmocka_unit_test(test_store__a_walk_of_keys_parses_nothing),
        cmocka_unit_test(test_store__secrets_keep_their_der_and_read_back_as_sent),
        cmocka_unit_test(test_store__the_dictionary_is_taken_again_from_a_grown_object),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
