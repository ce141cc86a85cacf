#include "lib/util/strmap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct strmap_entry {
    struct strmap_entry *next;
    const char *key;
    void *value;
    uint32_t hash;
};

/* FNV-1a: short keys ("namespace/name"), no adversarial input worth a keyed hash here. */
static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static struct strmap_entry **find_slot(const struct strmap *m, const char *key, uint32_t h)
{
    struct strmap_entry **p;

    if (m->nbuckets == 0)
        return NULL;
    for (p = &m->buckets[h & (m->nbuckets - 1)]; *p; p = &(*p)->next)
        if ((*p)->hash == h && strcmp((*p)->key, key) == 0)
            return p;
    return p;
}

static int grow(struct strmap *m)
{
    size_t n = m->nbuckets ? m->nbuckets * 2 : 16;
    struct strmap_entry **b = calloc(n, sizeof(*b));

    if (!b)
        return -ENOMEM;
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct strmap_entry *e = m->buckets[i], *next;

        for (; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
    return 0;
}

void strmap_done(struct strmap *m, void (*free_value)(void *value))
{
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct strmap_entry *e = m->buckets[i], *next;

        for (; e; e = next) {
            next = e->next;
            if (free_value)
                free_value(e->value);
            free(e);
        }
    }
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = 0;
    m->size = 0;
}

void *strmap_get(const struct strmap *m, const char *key)
{
    struct strmap_entry **p = find_slot(m, key, hash_str(key));

    return p && *p ? (*p)->value : NULL;
}

int strmap_put(struct strmap *m, const char *key, void *value)
{
    uint32_t h = hash_str(key);
    struct strmap_entry **p = find_slot(m, key, h);
    struct strmap_entry *e;

    if (p && *p) {
        (*p)->key = key;
        (*p)->value = value;
        return 0;
    }
    if (m->nbuckets == 0 || 4 * (m->size + 1) > 3 * m->nbuckets) {
        if (grow(m) < 0)
            return -ENOMEM;
    }
    e = malloc(sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->key = key;
    e->value = value;
    e->hash = h;
    p = &m->buckets[h & (m->nbuckets - 1)];
    e->next = *p;
    *p = e;
    m->size++;
    return 0;
}

void *strmap_remove(struct strmap *m, const char *key)
{
    struct strmap_entry **p = find_slot(m, key, hash_str(key));
    struct strmap_entry *e;
    void *value;

    if (!p || !*p)
        return NULL;
    e = *p;
    *p = e->next;
    value = e->value;
    free(e);
    m->size--;
    return value;
}
