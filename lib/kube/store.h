#ifndef NESTCP_KUBE_STORE_H
#define NESTCP_KUBE_STORE_H

/*
 * The informer's object cache: objects keyed by namespace/name, with two secondary indexes —
 * by namespace and by controller owner uid — so that lookup and iteration by either are hash
 * lookups, and an optional third one by keys a function of the store's user computes from each
 * object (kube_store_set_index). Objects are owned by the store once put. No I/O; the informer
 * drives it.
 *
 * The store keeps each object as its compact JSON text compressed (zstd's fastest level, with
 * one object's text as the dictionary of every other: the objects of a cache share most of
 * their text; the first object put, and after 64, 256, 1,024... puts a grown one, each time
 * compressing every object again), a tenth to a third of the text, which is itself about a third of
 * what the same object takes as cJSON nodes; it is decompressed and parsed when it is read. Text
 * that carries base64 or PEM is packed before it is compressed (lib/util/textpack.h): a Secret's
 * certificates and keys are kept as their DER, about a half of what compressing their twice-encoded
 * text kept. A tree handed out (by kube_store_get, to an iteration's fn, or the one just put) is
 * the store's: it stays valid until the object is replaced or removed, or until kube_store_trim,
 * which frees the trees read longest ago beyond the store's budget (hot_keep). Whoever trims must
 * know that no tree is still in use: the manager trims between reconciles and once per turn of its
 * loop. Reading the same object again before that returns the same tree without parsing it.
 *
 * A relist is a mark-and-sweep: kube_store_mark_begin, kube_store_put every listed object,
 * then kube_store_sweep hands back every object the list no longer had.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/util/list.h"

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
    size_t bytes;         /* heap held by the objects' texts and their entries */
    struct list_node hot; /* entries whose tree is parsed, most recently read first */
    size_t hot_bytes;     /* what those trees weigh, estimated from their texts */
    size_t hot_keep;      /* kube_store_trim leaves this much; KUBE_STORE_HOT_KEEP by default */
    char *dict;           /* the start of an object's text: the others' dictionary */
    size_t dict_len;
    char *old_dict; /* the one before, while objects still need it (on_old of them) */
    size_t old_dict_len, on_old;
    uint64_t puts, retake_at; /* puts since the dictionary was taken; when to take it again */
    char *scratch;            /* where an object is printed and compressed, or decompressed */
    size_t scratch_cap;
};

/* The trees a store keeps parsed after a trim, by default (counted as three times their texts):
 * a few objects. A reconcile keeps every tree it read until it ends; what the next one reads
 * again is parsed again, which at N = 100 cost no measurable CPU time, while the trees a budget
 * of 64 KiB kept across a dozen caches were about 1 MiB of the manager's peak. */
#define KUBE_STORE_HOT_KEEP (16 * 1024)

/* Return false to stop an iteration early. Objects are borrowed (valid until a trim). An object
 * that cannot be parsed for want of memory is left out of an iteration. */
typedef bool (*kube_store_each_fn)(void *userdata, const cJSON *obj);

void kube_store_init(struct kube_store *s);
/* Frees every object, then the keys they shared. */
void kube_store_done(struct kube_store *s);

size_t kube_store_count(const struct kube_store *s);

/* Sets the store's index function (before anything is put). Returns 0 or -EBUSY (not empty). */
int kube_store_set_index(struct kube_store *s, kube_store_index_fn index);
bool kube_store_indexed(const struct kube_store *s);

/* Heap bytes the cached objects take (each compressed text and entry, as malloc sized them, and
 * the dictionary they share); the trees parsed for reading (kube_store_hot_bytes) and the indexes
 * (their tables, groups and each object's index links) are not counted. */
size_t kube_store_bytes(const struct kube_store *s);
/* What the parsed trees not yet trimmed weigh, estimated (three times their texts). */
size_t kube_store_hot_bytes(const struct kube_store *s);

/* Frees the trees read longest ago until those left weigh at most s->hot_keep. Every tree the
 * store handed out may be freed: call it only where none is still in use. */
void kube_store_trim(struct kube_store *s);
/* The same, to keep bytes rather than s->hot_keep. */
void kube_store_trim_to(struct kube_store *s, size_t keep);

/* The object at ns/name (ns NULL or "" for cluster-scoped), or NULL (also when it cannot be
 * parsed for want of memory). Borrowed: valid until it is replaced or removed, or a trim. */
const cJSON *kube_store_get(const struct kube_store *s, const char *ns, const char *name);

/* Puts obj (owned by the store from here on, even on failure) in place of any object with the
 * same namespace/name, which is handed back in *ret_old (caller frees; NULL when there was none,
 * or it cannot be parsed for want of memory) unless ret_old is NULL. obj stays valid as a tree
 * read from the store is. Marks it for the current relist. Returns 0, -EINVAL (no
 * metadata.name), -ENOMEM. */
int kube_store_put(struct kube_store *s, cJSON *obj, cJSON **ret_old);

/* Removes ns/name; the object goes to *ret_old (caller frees; NULL when it cannot be parsed for
 * want of memory) unless ret_old is NULL. Returns 0 or -ENOENT. */
int kube_store_remove(struct kube_store *s, const char *ns, const char *name, cJSON **ret_old);

void kube_store_foreach(const struct kube_store *s, kube_store_each_fn fn, void *userdata);
/* The namespace ("" when cluster-scoped) and name of every object, nothing parsed; false from
 * fn stops. */
typedef bool (*kube_store_each_key_fn)(void *userdata, const char *ns, const char *name);
void kube_store_foreach_key(const struct kube_store *s, kube_store_each_key_fn fn, void *userdata);
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
 * before it is freed (not with one that cannot be parsed for want of memory). Returns how many
 * were removed. */
typedef void (*kube_store_swept_fn)(void *userdata, const cJSON *obj);
size_t kube_store_sweep(struct kube_store *s, kube_store_swept_fn fn, void *userdata);

#endif
