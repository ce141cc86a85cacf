#ifndef NESTCP_UTIL_STRMAP_H
#define NESTCP_UTIL_STRMAP_H

/*
 * A hash map from C strings to pointers, with chaining. Keys are borrowed: the caller keeps each
 * key alive and unchanged until its entry is removed (usually the value owns its key). A zeroed
 * struct strmap is an empty map.
 */

#include <stddef.h>

struct strmap_entry;

struct strmap {
    struct strmap_entry **buckets;
    size_t nbuckets; /* 0 or a power of two */
    size_t size;
};

#define STRMAP_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Frees the map's own memory; calls free_value (if not NULL) on each value first. The map is
 * empty afterwards and may be reused. */
void strmap_done(struct strmap *m, void (*free_value)(void *value));

/* The value stored under key, or NULL. */
void *strmap_get(const struct strmap *m, const char *key);

/* Stores value under key (borrowed), replacing any value already there.
 * Returns 0 or -ENOMEM (the map is unchanged then). */
int strmap_put(struct strmap *m, const char *key, void *value);

/* Removes key and returns its value, or NULL when absent. */
void *strmap_remove(struct strmap *m, const char *key);

static inline size_t strmap_size(const struct strmap *m)
{
    return m->size;
}

#endif
