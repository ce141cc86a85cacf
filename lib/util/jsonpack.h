#ifndef NESTCP_UTIL_JSONPACK_H
#define NESTCP_UTIL_JSONPACK_H

/*
 * A cJSON tree copied into one allocation, for objects that are kept long and only read (an
 * informer's cache). A tree as cJSON_Parse builds it takes one malloc per value, per key and per
 * string, each with its allocator's header and rounding; a packed tree takes one: every node,
 * then every distinct key and string once (a key or a value that repeats within the tree, such
 * as "name" or a label, is stored once and shared), keys that many trees repeat being held by a
 * table the trees share (struct jsonpack_keys).
 *
 * The root of a packed tree is the start of its block and is flagged cJSON_IsReference, as
 * cJSON_CreateObjectReference makes a node that does not own its children: cJSON_Delete of the
 * root frees the whole block and nothing else. Every cJSON read (cJSON_GetObjectItem*,
 * cJSON_Is*, cJSON_ArrayForEach, cJSON_Print*, cJSON_Duplicate, cJSON_Compare) works on it as on
 * the tree it was copied from. It must not be changed: no node of it may be detached, deleted,
 * replaced or added to, and no string set (a cJSON_Duplicate of it is an ordinary tree).
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/util/strmap.h"

/* Member names that packed trees share instead of each holding a copy: the trees of one kind
 * repeat the same keys ("metadata", "resourceVersion", "ownerReferences", ...). Append-only and
 * bounded: the first JSONPACK_KEYS_MAX keys of at most JSONPACK_KEY_LEN_MAX bytes are shared,
 * any other stays in its tree's block. It must outlive every tree packed with it. A zeroed
 * struct is an empty table. */
#define JSONPACK_KEYS_MAX 512
#define JSONPACK_KEY_LEN_MAX 64

struct jsonpack_keys {
    struct strmap map; /* key -> the table's copy of it */
    size_t bytes;      /* heap held by the copies */
};

/* Frees the table's keys; the table is empty afterwards. */
void jsonpack_keys_done(struct jsonpack_keys *keys);

/* Heap the table holds (its copies of the keys and its map). */
size_t jsonpack_keys_bytes(const struct jsonpack_keys *keys);

/* A packed copy of tree (tree is not changed; its root's key, if any, is not copied), sharing
 * the keys of keys (NULL: none; keys it lacks are added while it has room). Returns the copy
 * (caller frees with cJSON_Delete, before keys is done) or NULL: out of memory, or tree NULL. */
cJSON *jsonpack_copy(const cJSON *tree, struct jsonpack_keys *keys);

/* Whether obj is the root of a tree jsonpack_copy made. */
bool jsonpack_is_packed(const cJSON *obj);

/* The heap bytes a packed tree holds (its one block, as malloc sized it; shared keys are the
 * table's). */
size_t jsonpack_bytes(const cJSON *packed);

#endif
