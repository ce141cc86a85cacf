#include "lib/util/jsonpack.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The distinct strings of a tree, each with its place in the block. */
struct intern {
    const char *s; /* borrowed from the tree being copied */
    size_t len;
    size_t off; /* from the start of the block's strings */
};

struct pack {
    struct jsonpack_keys *keys; /* or NULL */
    struct intern *tab;
    size_t cap; /* a power of two, at least twice the strings looked up */
    size_t nodes, strings, bytes;
    cJSON *node;   /* the next node to fill */
    char *strbase; /* the block's strings */
};

static uint32_t hash_str(const char *s, size_t len)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

/* The entry for s: found, or new and placed after the strings placed so far. */
static struct intern *intern(struct pack *p, const char *s)
{
    size_t len = strlen(s);
    size_t i = hash_str(s, len) & (p->cap - 1);

    for (; p->tab[i].s; i = (i + 1) & (p->cap - 1))
        if (p->tab[i].len == len && memcmp(p->tab[i].s, s, len) == 0)
            return &p->tab[i];
    p->tab[i].s = s;
    p->tab[i].len = len;
    p->tab[i].off = p->bytes;
    p->bytes += len + 1;
    return &p->tab[i];
}

/* Counts the nodes and string references of the sibling list from o. */
static void count(struct pack *p, const cJSON *o)
{
    for (; o; o = o->next) {
        p->nodes++;
        p->strings += (o->string != NULL) + (o->valuestring != NULL);
        count(p, o->child);
    }
}

static void keys_free_value(void *v)
{
    free(v);
}

void jsonpack_keys_done(struct jsonpack_keys *keys)
{
    strmap_done(&keys->map, keys_free_value);
    keys->bytes = 0;
}

size_t jsonpack_keys_bytes(const struct jsonpack_keys *keys)
{
    /* Each entry of the map is 32 bytes, 48 with malloc's header; then its buckets. */
    return keys->bytes + strmap_size(&keys->map) * 48 + keys->map.nbuckets * sizeof(void *);
}

/* The table's copy of key, added if the table has room; NULL when it is not shared. */
static const char *shared_key(struct jsonpack_keys *keys, const char *key)
{
    char *k;
    size_t len;

    if (!keys)
        return NULL;
    if ((k = strmap_get(&keys->map, key)))
        return k;
    len = strlen(key);
    if (strmap_size(&keys->map) >= JSONPACK_KEYS_MAX || len > JSONPACK_KEY_LEN_MAX)
        return NULL;
    if (!(k = malloc(len + 1)))
        return NULL;
    memcpy(k, key, len + 1);
    if (strmap_put(&keys->map, k, k) < 0) {
        free(k);
        return NULL;
    }
    keys->bytes += malloc_usable_size(k);
    return k;
}

static void place(struct pack *p, const cJSON *o)
{
    for (; o; o = o->next) {
        if (o->string && !shared_key(p->keys, o->string))
            intern(p, o->string);
        if (o->valuestring)
            intern(p, o->valuestring);
        place(p, o->child);
    }
}

static char *packed_string(struct pack *p, const char *s)
{
    return s ? p->strbase + intern(p, s)->off : NULL;
}

/* Copies the sibling list from o into the block; returns its first node. */
static cJSON *copy(struct pack *p, const cJSON *o)
{
    cJSON *first = NULL, *prev = NULL;

    for (; o; o = o->next) {
        cJSON *n = p->node++;

        memset(n, 0, sizeof(*n));
        /* No node below the root owns anything: none is ever freed on its own. A key must not
         * be marked cJSON_StringIsConst, or cJSON_Duplicate would share it with the block. */
        n->type = o->type & ~(cJSON_IsReference | cJSON_StringIsConst);
        n->valueint = o->valueint;
        n->valuedouble = o->valuedouble;
        if (o->string && p->keys)
            n->string = strmap_get(&p->keys->map, o->string);
        if (!n->string)
            n->string = packed_string(p, o->string);
        n->valuestring = packed_string(p, o->valuestring);
        n->prev = prev;
        if (prev)
            prev->next = n;
        else
            first = n;
        prev = n;
        n->child = copy(p, o->child);
    }
    /* cJSON keeps the last sibling in the first one's prev. */
    if (first)
        first->prev = prev;
    return first;
}

cJSON *jsonpack_copy(const cJSON *tree, struct jsonpack_keys *keys)
{
    struct pack p = {.keys = keys};
    cJSON *root = NULL;
    char *block;

    if (!tree)
        return NULL;
    count(&p, tree->child);
    if (tree->valuestring)
        p.strings++;
    for (p.cap = 16; p.cap < 2 * p.strings; p.cap *= 2)
        ;
    p.tab = calloc(p.cap, sizeof(*p.tab));
    if (!p.tab)
        return NULL;
    if (tree->valuestring)
        intern(&p, tree->valuestring);
    place(&p, tree->child);
    block = malloc((1 + p.nodes) * sizeof(cJSON) + p.bytes);
    if (!block)
        goto out;
    root = (cJSON *)block;
    p.node = root + 1;
    p.strbase = block + (1 + p.nodes) * sizeof(cJSON);
    for (size_t i = 0; i < p.cap; i++)
        if (p.tab[i].s)
            memcpy(p.strbase + p.tab[i].off, p.tab[i].s, p.tab[i].len + 1);
    memset(root, 0, sizeof(*root));
    /* As cJSON_CreateObjectReference: cJSON_Delete frees this node (the block) and nothing
     * it points to. */
    root->type = (tree->type & ~cJSON_StringIsConst) | cJSON_IsReference;
    root->valueint = tree->valueint;
    root->valuedouble = tree->valuedouble;
    root->valuestring = packed_string(&p, tree->valuestring);
    root->child = copy(&p, tree->child);
out:
    free(p.tab);
    return root;
}

bool jsonpack_is_packed(const cJSON *obj)
{
    return obj && (obj->type & cJSON_IsReference) && (!obj->child || obj->child == obj + 1);
}

size_t jsonpack_bytes(const cJSON *packed)
{
    return packed ? malloc_usable_size((void *)packed) : 0;
}
