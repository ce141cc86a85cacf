#ifndef NESTCP_KUBE_STORE_H
#define NESTCP_KUBE_STORE_H

/*
 * The informer's object cache: objects keyed by namespace/name, with two secondary indexes —
 * by namespace and by controller owner uid — so that lookup and iteration by either are hash
 * lookups, and an optional third one by keys a function of the store's user computes from each
 * object (kube_store_set_index). Objects are owned by the store once put. No I/O; the informer
 * drives it.
 *
 * A relist is a mark-and-sweep: kube_store_mark_begin, kube_store_put every listed object,
 * then kube_store_sweep hands back every object the list no longer had.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/util/jsonpack.h"

struct kube_store_entry;
struct kube_store_group;

struct kube_store_table {
    void **slots;
    size_t nslots; /* a power of two, or 0 */
    size_t count;
};

/* The most keys one object has in the optional index. */
#define KUBE_STORE_INDEX_KEYS 8

/* One key of the optional index: a tag the index function chooses (which field the value comes
 * from) and a value; an object is filed under (its namespace, tag, value). */
struct kube_store_index_key {
    unsigned tag;
    const char *value; /* borrowed from the object */
};

/* Writes up to KUBE_STORE_INDEX_KEYS keys of obj to keys and returns how many. A pure function
 * of obj: it is called again whenever obj is put, so that a changed object moves. */
typedef size_t (*kube_store_index_fn)(const cJSON *obj, struct kube_store_index_key *keys);

struct kube_store {
    struct kube_store_table by_key;   /* struct kube_store_entry */
    struct kube_store_table by_ns;    /* struct kube_store_group */
    struct kube_store_table by_owner; /* struct kube_store_group */
    struct kube_store_table by_index; /* struct kube_store_ixgroup */
    kube_store_index_fn index;        /* NULL: no index */
    uint64_t seq;                     /* of the last entry created */
    unsigned mark;
    size_t bytes;              /* heap held by the objects and their entries */
    struct jsonpack_keys keys; /* keys packed objects share (jsonpack_copy); freed last */
};

/* Return false to stop an iteration early. Objects are borrowed. */
typedef bool (*kube_store_each_fn)(void *userdata, const cJSON *obj);

void kube_store_init(struct kube_store *s);
/* Frees every object, then the keys they shared. */
void kube_store_done(struct kube_store *s);

size_t kube_store_count(const struct kube_store *s);

/* Sets the store's index function (before anything is put). Returns 0 or -EBUSY (not empty). */
int kube_store_set_index(struct kube_store *s, kube_store_index_fn index);
bool kube_store_indexed(const struct kube_store *s);

/* Heap bytes the cached objects take (every cJSON node, key and string as malloc sized them, or
 * the block of a packed object, lib/util/jsonpack.h, plus each object's entry), and the keys
 * they share (s->keys); the indexes (their tables, groups and each object's index links) are
 * not counted. */
size_t kube_store_bytes(const struct kube_store *s);

/* The object at ns/name (ns NULL or "" for cluster-scoped), or NULL. Borrowed. */
const cJSON *kube_store_get(const struct kube_store *s, const char *ns, const char *name);

/* Puts obj (owned by the store from here on, even on failure) in place of any object with the
 * same namespace/name, which is handed back in *ret_old (caller frees) or NULL. Marks it for
 * the current relist. Returns 0, -EINVAL (no metadata.name), -ENOMEM. */
int kube_store_put(struct kube_store *s, cJSON *obj, cJSON **ret_old);

/* Removes ns/name; the object goes to *ret_old (caller frees). Returns 0 or -ENOENT. */
int kube_store_remove(struct kube_store *s, const char *ns, const char *name, cJSON **ret_old);

void kube_store_foreach(const struct kube_store *s, kube_store_each_fn fn, void *userdata);
void kube_store_foreach_in_namespace(const struct kube_store *s, const char *ns,
                                     kube_store_each_fn fn, void *userdata);
/* Objects whose controller ownerReference has this uid. */
void kube_store_foreach_owned(const struct kube_store *s, const char *owner_uid,
                              kube_store_each_fn fn, void *userdata);
/* Objects of ns that have at least one of keys[0..n) (n <= KUBE_STORE_INDEX_KEYS) in the
 * store's index, each once, in the order kube_store_foreach_in_namespace would call fn with
 * them. Without an index: every object of ns, as kube_store_foreach_in_namespace. */
void kube_store_foreach_indexed(const struct kube_store *s, const char *ns,
                                const struct kube_store_index_key *keys, size_t n,
                                kube_store_each_fn fn, void *userdata);
size_t kube_store_count_owned(const struct kube_store *s, const char *owner_uid);
size_t kube_store_count_in_namespace(const struct kube_store *s, const char *ns);

/* Relist bookkeeping. */
void kube_store_mark_begin(struct kube_store *s);
/* Removes every object not put since kube_store_mark_begin, calling fn (may be NULL) with each
 * before it is freed. Returns how many were removed. */
typedef void (*kube_store_swept_fn)(void *userdata, const cJSON *obj);
size_t kube_store_sweep(struct kube_store *s, kube_store_swept_fn fn, void *userdata);

#endif
