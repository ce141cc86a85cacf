#include "lib/kube/store.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "lib/kube/object.h"
#include "lib/util/list.h"
#include "lib/util/textpack.h"

/* Every hashed node starts with this. */
struct hnode {
    struct hnode *next;
    uint32_t hash;
};

struct kube_store_group {
    struct hnode h;
    struct list_node members; /* entries, by ns_node or owner_node */
    size_t count;
    char id[];
};

/* A bucket of the optional index: the objects of one namespace with one key, newest entry
 * first (the order of their namespace's members). */
struct kube_store_ixgroup {
    struct hnode h;
    struct list_node members; /* struct ixlink */
    size_t count;
    unsigned tag;
    size_t ns_len;
    char id[]; /* namespace, NUL, value, NUL */
};

struct ixlink {
    struct list_node node; /* in g->members */
    struct kube_store_ixgroup *g;
    struct kube_store_entry *e;
};

/* An entry's index memberships, allocated apart from it (the index is not counted in bytes). */
struct ixlinks {
    uint64_t seq; /* when the entry was created: orders the index's buckets */
    size_t n, cap;
    struct ixlink links[];
};

struct kube_store_entry {
    struct hnode h;
    void *blob; /* the object's compact JSON text, packed (packed) or not, compressed: what the
                 * store keeps */
    cJSON *obj; /* the object parsed from blob while it is being read (in the hot list), or
                 * NULL */
    struct list_node hot_node;
    const char *ns, *name; /* in key; ns is "" when cluster-scoped */
    struct kube_store_group *ns_group, *owner_group;
    struct list_node ns_node, owner_node; /* in ns_group, owner_group */
    struct ixlinks *ix;                   /* with an index only */
    unsigned mark;
    /* An object is bounded by the API server's request size, a few MiB. text_len is what was
     * compressed: the text or, when packed, its packed form (lib/util/textpack.h). */
    uint32_t text_len : 30, packed : 1;
    uint32_t old : 1; /* compressed with s->old_dict, not s->dict */
    uint32_t blob_len;
    uint32_t bytes; /* of blob and this entry */
    char key[];     /* ns, NUL, name, NUL */
};

/* What a parsed tree is taken to weigh, for the hot list's budget: a cJSON node of 64 bytes
 * per JSON value comes to about three times the compact text (docs/architecture.md, "What the
 * caches keep"). */
#define TREE_WEIGHT(text_len) (3 * (size_t)(text_len))

/* The longest text an entry's text_len holds, far above the API server's request size. */
#define TEXT_MAX 0x3fffffff
/* The most of an object's text a store keeps as the dictionary of the others. */
#define DICT_MAX (16 * 1024)
/* A store takes its dictionary again, from the object just put, after this many puts and then
 * four times as many each time (each time compressing every object again): objects grow as
 * their status fills in, and the first one put, whose text was the dictionary, is often an
 * early version, a control plane without status, a claim not yet bound. */
#define RETAKE_FIRST 64
#define RETAKE_GROWTH 4
/* A scratch buffer this large or smaller is kept between uses. */
#define SCRATCH_KEEP (64 * 1024)
/* zstd's fastest level, with a hash table of 2^13 entries (32 KiB) rather than its default for
 * inputs of unknown size; a window that reaches back over the dictionary. */
#define ZSTD_LEVEL 1
#define ZSTD_HASH_LOG 13
#define ZSTD_WINDOW_LOG 17

/* The contexts every store compresses and decompresses with: about 100 KiB each, so one pair
 * for the process rather than one per cache. Stores are used from one thread (the loop's), as
 * everything here is. Made when the first store takes a dictionary, freed with the last. */
static struct {
    ZSTD_CCtx *c;
    ZSTD_DCtx *d;
    unsigned users;    /* stores with a dictionary */
    struct buf packed; /* a text packed, or unpacked: kept as the scratch buffers are */
} codec;

static size_t entry_bytes(const struct kube_store_entry *e)
{
    return malloc_usable_size((void *)e) + malloc_usable_size(e->blob);
}

/* ---- the text: each object compressed with the first object's text as its dictionary ---- */

/* Makes the scratch buffer hold at least n bytes. */
static int scratch_reserve(struct kube_store *s, size_t n)
{
    char *grown;

    if (n <= s->scratch_cap)
        return 0;
    grown = realloc(s->scratch, n);
    if (!grown)
        return -ENOMEM;
    s->scratch = grown;
    s->scratch_cap = n;
    return 0;
}

static void scratch_relax(struct kube_store *s)
{
    if (s->scratch_cap > SCRATCH_KEEP) {
        free(s->scratch);
        s->scratch = NULL;
        s->scratch_cap = 0;
    }
    if (codec.packed.cap > SCRATCH_KEEP)
        buf_done(&codec.packed);
    else
        buf_reset(&codec.packed);
}

static void codec_free(void)
{
    ZSTD_freeCCtx(codec.c);
    ZSTD_freeDCtx(codec.d);
    codec.c = NULL;
    codec.d = NULL;
    buf_done(&codec.packed);
}

static int codec_new(void)
{
    codec.c = ZSTD_createCCtx();
    codec.d = ZSTD_createDCtx();
    /* The parameters stay from one frame to the next; a prefix is referenced per frame. */
    if (!codec.c || !codec.d ||
        ZSTD_isError(ZSTD_CCtx_setParameter(codec.c, ZSTD_c_compressionLevel, ZSTD_LEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(codec.c, ZSTD_c_hashLog, ZSTD_HASH_LOG)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(codec.c, ZSTD_c_windowLog, ZSTD_WINDOW_LOG)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(codec.c, ZSTD_c_contentSizeFlag, 0))) {
        codec_free();
        return -ENOMEM;
    }
    return 0;
}

/* Takes the start of text (the first object put) as the store's dictionary. */
static int dict_take(struct kube_store *s, const char *text, size_t len)
{
    size_t n = len < DICT_MAX ? len : DICT_MAX;

    if (!codec.users && codec_new() < 0)
        return -ENOMEM;
    s->dict = malloc(n ? n : 1);
    if (!s->dict) {
        if (!codec.users)
            codec_free();
        return -ENOMEM;
    }
    memcpy(s->dict, text, n);
    s->dict_len = n;
    s->bytes += malloc_usable_size(s->dict);
    s->puts = 0;
    s->retake_at = RETAKE_FIRST;
    codec.users++;
    return 0;
}

/* The dictionary before the last one goes once no object needs it. */
static void old_dict_release_if_unused(struct kube_store *s)
{
    if (!s->old_dict || s->on_old)
        return;
    s->bytes -= malloc_usable_size(s->old_dict);
    free(s->old_dict);
    s->old_dict = NULL;
    s->old_dict_len = 0;
}

/* e no longer needs the old dictionary: it was compressed again, or is gone. */
static void entry_leave_old(struct kube_store *s, struct kube_store_entry *e)
{
    if (!e->old)
        return;
    e->old = 0;
    s->on_old--;
    old_dict_release_if_unused(s);
}

/* An empty store lets its dictionary go: no object needs it, and the next one put makes one. */
static void dict_drop_if_empty(struct kube_store *s)
{
    if (!s->dict || s->by_key.count)
        return;
    s->on_old = 0;
    old_dict_release_if_unused(s);
    s->bytes -= malloc_usable_size(s->dict);
    free(s->dict);
    s->dict = NULL;
    s->dict_len = 0;
    if (--codec.users == 0)
        codec_free();
}

/* src[0..len) compressed with the store's dictionary into dst (bound bytes): its length, or 0
 * (a frame is never empty) when it cannot be. */
static size_t compress_into(struct kube_store *s, void *dst, size_t bound, const void *src,
                            size_t len)
{
    size_t n;

    ZSTD_CCtx_reset(codec.c, ZSTD_reset_session_only);
    if (ZSTD_isError(ZSTD_CCtx_refPrefix(codec.c, s->dict, s->dict_len)))
        return 0;
    n = ZSTD_compress2(codec.c, dst, bound, src, len);
    return ZSTD_isError(n) ? 0 : n;
}

/* e's blob decompressed, with the dictionary it was compressed with, into the scratch buffer
 * (which holds e->text_len bytes or more): whether it gave all of them. A dictionary of raw
 * content is only referenced, not digested (ZSTD_DCtx_refPrefix would make a dictionary object
 * of it for every call). */
static bool decompress_entry(struct kube_store *s, const struct kube_store_entry *e)
{
    size_t n = ZSTD_decompress_usingDict(codec.d, s->scratch, e->text_len, e->blob, e->blob_len,
                                         e->old ? s->old_dict : s->dict,
                                         e->old ? s->old_dict_len : s->dict_len);

    return !ZSTD_isError(n) && n == e->text_len;
}

/* obj as compact JSON text, packed if anything in it packs (*ret_packed), compressed, in a block
 * of its own (NULL: out of memory); the length of what was compressed in *ret_text_len. The text
 * is printed into the scratch buffer and compressed into the part of it beyond: printing straight
 * into a block of its own would grow it by doubling and shrink it, leaving a hole beside every
 * object the store keeps. */
static void *pack(struct kube_store *s, const cJSON *obj, size_t *ret_text_len,
                  size_t *ret_blob_len, bool *ret_packed)
{
    size_t len, bound, n;
    const char *text;
    void *blob;
    int packed;

    if (scratch_reserve(s, 8192) < 0)
        return NULL;
    /* It only reads obj, and says false when the buffer is too small. */
    while (!cJSON_PrintPreallocated((cJSON *)obj, s->scratch, (int)s->scratch_cap / 2, false))
        if (s->scratch_cap > INT_MAX / 2 || scratch_reserve(s, 2 * s->scratch_cap) < 0)
            return NULL;
    len = strlen(s->scratch);
    text = s->scratch;
    buf_reset(&codec.packed);
    packed = textpack_pack(s->scratch, len, &codec.packed);
    if (packed < 0)
        return NULL;
    if (packed) {
        text = codec.packed.data;
        len = codec.packed.len;
    }
    bound = ZSTD_compressBound(len);
    /* The packed form is apart from the scratch buffer, which may move; the text is not. */
    if (scratch_reserve(s, (packed ? 0 : len + 1) + bound) < 0)
        return NULL;
    if (!packed)
        text = s->scratch;
    if (!s->dict && dict_take(s, text, len) < 0)
        return NULL;
    n = compress_into(s, s->scratch + (packed ? 0 : len + 1), bound, text, len);
    if (!n)
        return NULL;
    blob = malloc(n);
    if (blob)
        memcpy(blob, s->scratch + (packed ? 0 : len + 1), n);
    scratch_relax(s);
    *ret_text_len = len;
    *ret_blob_len = n;
    *ret_packed = packed;
    return blob;
}

/* e's object parsed from its blob, a tree the caller owns. NULL: out of memory. */
static cJSON *unpack(struct kube_store *s, const struct kube_store_entry *e)
{
    const char *text;
    cJSON *obj = NULL;
    size_t n = 0;

    if (scratch_reserve(s, e->text_len ? e->text_len : 1) < 0)
        return NULL;
    text = s->scratch;
    if (decompress_entry(s, e)) {
        n = e->text_len;
        if (e->packed) {
            buf_reset(&codec.packed);
            n = textpack_unpack(s->scratch, n, &codec.packed) < 0 ? 0 : codec.packed.len;
            text = codec.packed.data;
        }
    }
    if (n)
        obj = cJSON_ParseWithLength(text, n);
    scratch_relax(s);
    return obj;
}

/* Compresses e, compressed with old_dict, again with the store's dictionary. 0 or -ENOMEM, e
 * unchanged. */
static int entry_recompress(struct kube_store *s, struct kube_store_entry *e)
{
    size_t len = e->text_len, bound = ZSTD_compressBound(len), n;
    void *blob;

    if (scratch_reserve(s, len + bound) < 0 || !decompress_entry(s, e))
        return -ENOMEM;
    n = compress_into(s, s->scratch + len, bound, s->scratch, len);
    if (!n || !(blob = malloc(n)))
        return -ENOMEM;
    memcpy(blob, s->scratch + len, n);
    free(e->blob);
    e->blob = blob;
    e->blob_len = (uint32_t)n;
    s->bytes -= e->bytes;
    e->bytes = (uint32_t)entry_bytes(e);
    s->bytes += e->bytes;
    entry_leave_old(s, e);
    return 0;
}

/* Takes the text of from, just put, as the store's dictionary in place of the one taken before,
 * if it is at least as long (a grown object), and compresses every object again with it, one
 * at a time. One that cannot be (for want of memory) keeps the old dictionary until it is
 * replaced or removed; until then, no other is taken. */
static void dict_retake(struct kube_store *s, struct kube_store_entry *from)
{
    size_t len = from->text_len < DICT_MAX ? from->text_len : DICT_MAX;
    char *dict;

    if (s->old_dict || len < s->dict_len || scratch_reserve(s, from->text_len) < 0 ||
        !decompress_entry(s, from) || !(dict = malloc(len)))
        return;
    memcpy(dict, s->scratch, len);
    s->old_dict = s->dict;
    s->old_dict_len = s->dict_len;
    s->dict = dict;
    s->dict_len = len;
    s->bytes += malloc_usable_size(dict);
    s->puts = 0;
    s->retake_at *= RETAKE_GROWTH;
    /* Every object was compressed with what is now the old dictionary; each leaves it as it is
     * compressed again, and the last to leave frees it. */
    for (size_t i = 0; i < s->by_key.nslots; i++)
        for (struct hnode *h = s->by_key.slots[i]; h; h = h->next)
            ((struct kube_store_entry *)h)->old = 1;
    s->on_old = s->by_key.count;
    for (size_t i = 0; i < s->by_key.nslots; i++)
        for (struct hnode *h = s->by_key.slots[i]; h; h = h->next)
            entry_recompress(s, (struct kube_store_entry *)h);
    scratch_relax(s);
}

/* ---- the hot list: trees parsed from the text and not yet trimmed, most recent first ---- */

static void hot_add(struct kube_store *s, struct kube_store_entry *e, cJSON *obj)
{
    if (!s->hot.next)
        list_init(&s->hot);
    e->obj = obj;
    list_add_head(&s->hot, &e->hot_node);
    s->hot_bytes += TREE_WEIGHT(e->text_len);
}

/* Takes e's tree out of the hot list and hands it over (NULL if e has none). */
static cJSON *hot_take(struct kube_store *s, struct kube_store_entry *e)
{
    cJSON *obj = e->obj;

    if (!obj)
        return NULL;
    list_remove(&e->hot_node);
    s->hot_bytes -= TREE_WEIGHT(e->text_len);
    e->obj = NULL;
    return obj;
}

/* e's object as a tree: the one in the hot list, made the most recent, or one parsed from the
 * text and added to it. NULL: out of memory. */
static const cJSON *entry_tree(const struct kube_store *cs, struct kube_store_entry *e)
{
    /* Reading is logically const: the text does not change, only what is parsed of it. */
    struct kube_store *s = (struct kube_store *)cs;
    cJSON *obj;

    if (e->obj) {
        list_remove(&e->hot_node);
        list_add_head(&s->hot, &e->hot_node);
        return e->obj;
    }
    obj = unpack(s, e);
    if (obj)
        hot_add(s, e, obj);
    return obj;
}

/* e's object as a tree the caller owns, whether it was hot or not. NULL: out of memory. */
static cJSON *entry_take_tree(struct kube_store *s, struct kube_store_entry *e)
{
    cJSON *obj = hot_take(s, e);

    return obj ? obj : unpack(s, e);
}

static void entry_free(struct kube_store_entry *e)
{
    free(e->ix);
    free(e->blob);
    free(e);
}

static uint32_t hash_str(uint32_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static uint32_t hash_key(const char *ns, const char *name)
{
    uint32_t h = hash_str(2166136261u, ns);

    h ^= '/';
    h *= 16777619u;
    return hash_str(h, name);
}

static int table_grow(struct kube_store_table *t)
{
    size_t n = t->nslots ? t->nslots * 2 : 64;
    void **slots = calloc(n, sizeof(*slots));

    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < t->nslots; i++) {
        struct hnode *e = t->slots[i], *next;

        for (; e; e = next) {
            next = e->next;
            e->next = slots[e->hash & (n - 1)];
            slots[e->hash & (n - 1)] = e;
        }
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}

static int table_insert(struct kube_store_table *t, struct hnode *e)
{
    size_t i;

    if (t->count >= t->nslots && table_grow(t) < 0 && t->nslots == 0)
        return -ENOMEM;
    i = e->hash & (t->nslots - 1);
    e->next = t->slots[i];
    t->slots[i] = e;
    t->count++;
    return 0;
}

static void table_unlink(struct kube_store_table *t, struct hnode *e)
{
    struct hnode **p = (struct hnode **)&t->slots[e->hash & (t->nslots - 1)];

    for (; *p; p = &(*p)->next) {
        if (*p == e) {
            *p = e->next;
            t->count--;
            return;
        }
    }
}

static struct hnode *table_first(const struct kube_store_table *t, uint32_t hash)
{
    return t->nslots ? t->slots[hash & (t->nslots - 1)] : NULL;
}

void kube_store_init(struct kube_store *s)
{
    memset(s, 0, sizeof(*s));
    list_init(&s->hot);
    s->hot_keep = KUBE_STORE_HOT_KEEP;
}

static struct kube_store_entry *find_entry(const struct kube_store *s, const char *ns,
                                           const char *name)
{
    uint32_t h = hash_key(ns, name);

    for (struct hnode *n = table_first(&s->by_key, h); n; n = n->next) {
        struct kube_store_entry *e = (struct kube_store_entry *)n;

        if (n->hash == h && strcmp(e->name, name) == 0 && strcmp(e->ns, ns) == 0)
            return e;
    }
    return NULL;
}

static struct kube_store_group *find_group(const struct kube_store_table *t, const char *id)
{
    uint32_t h = hash_str(2166136261u, id);

    for (struct hnode *n = table_first(t, h); n; n = n->next) {
        struct kube_store_group *g = (struct kube_store_group *)n;

        if (n->hash == h && strcmp(g->id, id) == 0)
            return g;
    }
    return NULL;
}

/* Links e into the group for id (created on demand). Returns the group or NULL (no memory). */
static struct kube_store_group *group_join(struct kube_store_table *t, const char *id)
{
    struct kube_store_group *g = find_group(t, id);
    size_t n;

    if (g)
        return g;
    n = strlen(id);
    g = calloc(1, sizeof(*g) + n + 1);
    if (!g)
        return NULL;
    memcpy(g->id, id, n + 1);
    list_init(&g->members);
    g->h.hash = hash_str(2166136261u, id);
    if (table_insert(t, &g->h) < 0) {
        free(g);
        return NULL;
    }
    return g;
}

static void group_drop_if_empty(struct kube_store_table *t, struct kube_store_group *g)
{
    if (g && g->count == 0) {
        table_unlink(t, &g->h);
        free(g);
    }
}

static void ns_link(struct kube_store_entry *e, struct kube_store_group *g)
{
    e->ns_group = g;
    list_add_head(&g->members, &e->ns_node);
    g->count++;
}

static void ns_unlink(struct kube_store *s, struct kube_store_entry *e)
{
    struct kube_store_group *g = e->ns_group;

    if (!g)
        return;
    list_remove(&e->ns_node);
    g->count--;
    e->ns_group = NULL;
    group_drop_if_empty(&s->by_ns, g);
}

static void owner_link(struct kube_store_entry *e, struct kube_store_group *g)
{
    e->owner_group = g;
    list_add_head(&g->members, &e->owner_node);
    g->count++;
}

static void owner_unlink(struct kube_store *s, struct kube_store_entry *e)
{
    struct kube_store_group *g = e->owner_group;

    if (!g)
        return;
    list_remove(&e->owner_node);
    g->count--;
    e->owner_group = NULL;
    group_drop_if_empty(&s->by_owner, g);
}

/* ---- the optional index ---- */

static uint32_t hash_ix(const char *ns, unsigned tag, const char *value)
{
    uint32_t h = hash_str(2166136261u, ns);

    h ^= 0x100 + tag;
    h *= 16777619u;
    return hash_str(h, value);
}

static struct kube_store_ixgroup *find_ixgroup(const struct kube_store_table *t, const char *ns,
                                               unsigned tag, const char *value)
{
    uint32_t h = hash_ix(ns, tag, value);

    for (struct hnode *n = table_first(t, h); n; n = n->next) {
        struct kube_store_ixgroup *g = (struct kube_store_ixgroup *)n;

        if (n->hash == h && g->tag == tag && strcmp(g->id, ns) == 0 &&
            strcmp(g->id + g->ns_len + 1, value) == 0)
            return g;
    }
    return NULL;
}

static struct kube_store_ixgroup *ixgroup_join(struct kube_store_table *t, const char *ns,
                                               unsigned tag, const char *value)
{
    struct kube_store_ixgroup *g = find_ixgroup(t, ns, tag, value);
    size_t nl, vl;

    if (g)
        return g;
    nl = strlen(ns);
    vl = strlen(value);
    g = calloc(1, sizeof(*g) + nl + vl + 2);
    if (!g)
        return NULL;
    memcpy(g->id, ns, nl + 1);
    memcpy(g->id + nl + 1, value, vl + 1);
    g->ns_len = nl;
    g->tag = tag;
    list_init(&g->members);
    g->h.hash = hash_ix(ns, tag, value);
    if (table_insert(t, &g->h) < 0) {
        free(g);
        return NULL;
    }
    return g;
}

static struct ixlink *ixlink_of(struct list_node *n)
{
    return list_entry(n, struct ixlink, node);
}

/* Links l into g after every member created later than its entry. */
static void ixlink_add(struct kube_store_ixgroup *g, struct ixlink *l)
{
    uint64_t seq = l->e->ix->seq;
    struct list_node *n = g->members.next;

    while (n != &g->members && ixlink_of(n)->e->ix->seq > seq)
        n = n->next;
    list_link_between(n->prev, n, &l->node);
    l->g = g;
    g->count++;
}

static void ix_unlink_all(struct kube_store *s, struct kube_store_entry *e)
{
    struct ixlinks *ix = e->ix;

    if (!ix)
        return;
    for (size_t i = 0; i < ix->n; i++) {
        struct kube_store_ixgroup *g = ix->links[i].g;

        list_remove(&ix->links[i].node);
        if (--g->count == 0) {
            table_unlink(&s->by_index, &g->h);
            free(g);
        }
    }
    ix->n = 0;
}

/* Whether e is filed under exactly keys[0..n) now. */
static bool ix_same(const struct ixlinks *ix, const struct kube_store_index_key *keys, size_t n)
{
    if (ix->n != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        const struct kube_store_ixgroup *g = ix->links[i].g;

        if (g->tag != keys[i].tag || strcmp(g->id + g->ns_len + 1, keys[i].value) != 0)
            return false;
    }
    return true;
}

/* (Re)files e in the index under the keys of obj, its object. */
static int entry_reindex(struct kube_store *s, struct kube_store_entry *e, const cJSON *obj)
{
    struct kube_store_index_key raw[KUBE_STORE_INDEX_KEYS], keys[KUBE_STORE_INDEX_KEYS];
    size_t nraw, n = 0;
    struct ixlinks *ix;

    if (!s->index)
        return 0;
    nraw = s->index(obj, raw);
    for (size_t i = 0; i < nraw && i < KUBE_STORE_INDEX_KEYS; i++) {
        bool dup = !raw[i].value;

        for (size_t j = 0; j < n && !dup; j++)
            dup = keys[j].tag == raw[i].tag && strcmp(keys[j].value, raw[i].value) == 0;
        if (!dup)
            keys[n++] = raw[i];
    }
    if (e->ix && ix_same(e->ix, keys, n))
        return 0;
    ix_unlink_all(s, e);
    if (!e->ix || e->ix->cap < n) {
        ix = realloc(e->ix, sizeof(*ix) + n * sizeof(ix->links[0]));
        if (!ix)
            return -ENOMEM;
        if (!e->ix) {
            ix->seq = ++s->seq;
            ix->n = 0;
        }
        ix->cap = n;
        e->ix = ix;
    }
    ix = e->ix;
    for (size_t i = 0; i < n; i++) {
        struct kube_store_ixgroup *g =
            ixgroup_join(&s->by_index, e->ns, keys[i].tag, keys[i].value);

        if (!g)
            return -ENOMEM;
        ix->links[i].e = e;
        ixlink_add(g, &ix->links[i]);
        ix->n++;
    }
    return 0;
}

static void entry_unindex(struct kube_store *s, struct kube_store_entry *e)
{
    ix_unlink_all(s, e);
    free(e->ix);
    e->ix = NULL;
}

int kube_store_set_index(struct kube_store *s, kube_store_index_fn index)
{
    if (s->by_key.count)
        return -EBUSY;
    s->index = index;
    return 0;
}

bool kube_store_indexed(const struct kube_store *s)
{
    return s->index != NULL;
}

/* (Re)computes e's index memberships from obj, its object. */
static int entry_index(struct kube_store *s, struct kube_store_entry *e, const cJSON *obj)
{
    const char *owner = kube_obj_controller_uid(obj);
    struct kube_store_group *g;

    if (!e->ns_group || strcmp(e->ns_group->id, e->ns) != 0) {
        ns_unlink(s, e);
        g = group_join(&s->by_ns, e->ns);
        if (!g)
            return -ENOMEM;
        ns_link(e, g);
    }
    if (e->owner_group && (!owner || strcmp(e->owner_group->id, owner) != 0))
        owner_unlink(s, e);
    if (owner && !e->owner_group) {
        g = group_join(&s->by_owner, owner);
        if (!g)
            return -ENOMEM;
        owner_link(e, g);
    }
    return entry_reindex(s, e, obj);
}

int kube_store_put(struct kube_store *s, cJSON *obj, cJSON **ret_old)
{
    const char *ns = kube_obj_namespace(obj), *name = kube_obj_name(obj);
    struct kube_store_entry *e;
    size_t nl, kl, len = 0, blob_len = 0;
    bool packed = false;
    void *blob;
    int r;

    if (ret_old)
        *ret_old = NULL;
    if (!name || !name[0]) {
        cJSON_Delete(obj);
        return -EINVAL;
    }
    if (!ns)
        ns = "";
    blob = pack(s, obj, &len, &blob_len, &packed);
    if (!blob || len > TEXT_MAX) {
        free(blob);
        cJSON_Delete(obj);
        dict_drop_if_empty(s);
        return -ENOMEM;
    }
    e = find_entry(s, ns, name);
    if (e) {
        cJSON *old = hot_take(s, e);

        if (ret_old)
            *ret_old = old ? old : unpack(s, e);
        else
            cJSON_Delete(old);
        free(e->blob);
        e->blob = blob;
        e->text_len = (uint32_t)len & TEXT_MAX;
        e->packed = packed;
        e->blob_len = (uint32_t)blob_len;
        e->mark = s->mark;
        entry_leave_old(s, e);
        hot_add(s, e, obj);
        s->bytes -= e->bytes;
        e->bytes = (uint32_t)entry_bytes(e);
        s->bytes += e->bytes;
        r = entry_index(s, e, obj);
        if (r == 0 && ++s->puts >= s->retake_at)
            dict_retake(s, e);
        return r;
    }
    nl = strlen(ns);
    kl = nl + strlen(name) + 2;
    e = calloc(1, sizeof(*e) + kl);
    if (!e) {
        free(blob);
        cJSON_Delete(obj);
        dict_drop_if_empty(s);
        return -ENOMEM;
    }
    memcpy(e->key, ns, nl + 1);
    memcpy(e->key + nl + 1, name, kl - nl - 1);
    e->ns = e->key;
    e->name = e->key + nl + 1;
    e->blob = blob;
    e->text_len = (uint32_t)len & TEXT_MAX;
    e->packed = packed;
    e->blob_len = (uint32_t)blob_len;
    e->mark = s->mark;
    list_init(&e->hot_node);
    e->h.hash = hash_key(ns, name);
    r = table_insert(&s->by_key, &e->h);
    if (r == 0)
        r = entry_index(s, e, obj);
    if (r < 0) {
        table_unlink(&s->by_key, &e->h);
        ns_unlink(s, e);
        owner_unlink(s, e);
        entry_unindex(s, e);
        cJSON_Delete(obj);
        entry_free(e);
        dict_drop_if_empty(s);
        return r;
    }
    hot_add(s, e, obj);
    e->bytes = (uint32_t)entry_bytes(e);
    s->bytes += e->bytes;
    if (++s->puts >= s->retake_at)
        dict_retake(s, e);
    return 0;
}

/* Unlinks e and frees it, its tree too. */
static void entry_drop(struct kube_store *s, struct kube_store_entry *e)
{
    cJSON_Delete(hot_take(s, e));
    s->bytes -= e->bytes;
    table_unlink(&s->by_key, &e->h);
    ns_unlink(s, e);
    owner_unlink(s, e);
    entry_unindex(s, e);
    entry_leave_old(s, e);
    entry_free(e);
    dict_drop_if_empty(s);
}

/* Unlinks e and frees it; its object, as a tree, goes to the caller (NULL: out of memory). */
static cJSON *entry_remove(struct kube_store *s, struct kube_store_entry *e)
{
    cJSON *obj = entry_take_tree(s, e);

    entry_drop(s, e);
    return obj;
}

int kube_store_remove(struct kube_store *s, const char *ns, const char *name, cJSON **ret_old)
{
    struct kube_store_entry *e = find_entry(s, ns ? ns : "", name);

    if (!e)
        return -ENOENT;
    if (ret_old)
        *ret_old = entry_remove(s, e);
    else
        entry_drop(s, e);
    return 0;
}

const cJSON *kube_store_get(const struct kube_store *s, const char *ns, const char *name)
{
    struct kube_store_entry *e = find_entry(s, ns ? ns : "", name);

    return e ? entry_tree(s, e) : NULL;
}

size_t kube_store_count(const struct kube_store *s)
{
    return s->by_key.count;
}

size_t kube_store_bytes(const struct kube_store *s)
{
    return s->bytes;
}

size_t kube_store_hot_bytes(const struct kube_store *s)
{
    return s->hot_bytes;
}

void kube_store_trim(struct kube_store *s)
{
    kube_store_trim_to(s, s->hot_keep);
}

void kube_store_trim_to(struct kube_store *s, size_t keep)
{
    while (s->hot_bytes > keep && s->hot.next && !list_empty(&s->hot)) {
        struct kube_store_entry *e = list_entry(s->hot.prev, struct kube_store_entry, hot_node);

        cJSON_Delete(hot_take(s, e));
    }
}

/* Calls fn with e's object; false: stop (fn said so). An object that cannot be parsed for
 * want of memory is left out. */
static bool call_with(const struct kube_store *s, struct kube_store_entry *e, kube_store_each_fn fn,
                      void *userdata)
{
    const cJSON *obj = entry_tree(s, e);

    return !obj || fn(userdata, obj);
}

void kube_store_foreach(const struct kube_store *s, kube_store_each_fn fn, void *userdata)
{
    for (size_t i = 0; i < s->by_key.nslots; i++)
        for (struct hnode *n = s->by_key.slots[i]; n; n = n->next)
            if (!call_with(s, (struct kube_store_entry *)n, fn, userdata))
                return;
}

void kube_store_foreach_key(const struct kube_store *s, kube_store_each_key_fn fn, void *userdata)
{
    for (size_t i = 0; i < s->by_key.nslots; i++)
        for (struct hnode *n = s->by_key.slots[i]; n; n = n->next) {
            const struct kube_store_entry *e = (const struct kube_store_entry *)n;
            if (!fn(userdata, e->ns, e->name))
                return;
        }
}

void kube_store_foreach_in_namespace(const struct kube_store *s, const char *ns,
                                     kube_store_each_fn fn, void *userdata)
{
    struct kube_store_group *g = find_group(&s->by_ns, ns ? ns : "");
    struct list_node *n;

    if (!g)
        return;
    list_foreach(n, &g->members) {
        if (!call_with(s, list_entry(n, struct kube_store_entry, ns_node), fn, userdata))
            return;
    }
}

void kube_store_foreach_owned(const struct kube_store *s, const char *owner_uid,
                              kube_store_each_fn fn, void *userdata)
{
    struct kube_store_group *g = find_group(&s->by_owner, owner_uid);
    struct list_node *n;

    if (!g)
        return;
    list_foreach(n, &g->members) {
        if (!call_with(s, list_entry(n, struct kube_store_entry, owner_node), fn, userdata))
            return;
    }
}

void kube_store_foreach_indexed(const struct kube_store *s, const char *ns,
                                const struct kube_store_index_key *keys, size_t n,
                                kube_store_each_fn fn, void *userdata)
{
    struct list_node *head[KUBE_STORE_INDEX_KEYS], *cur[KUBE_STORE_INDEX_KEYS];
    size_t k = 0;

    if (!s->index) {
        kube_store_foreach_in_namespace(s, ns, fn, userdata);
        return;
    }
    for (size_t i = 0; i < n && i < KUBE_STORE_INDEX_KEYS; i++) {
        struct kube_store_ixgroup *g =
            keys[i].value ? find_ixgroup(&s->by_index, ns ? ns : "", keys[i].tag, keys[i].value)
                          : NULL;
        if (g) {
            head[k] = &g->members;
            cur[k++] = g->members.next;
        }
    }
    /* A merge of the buckets, newest entry first; an entry in several is called once. */
    for (;;) {
        struct kube_store_entry *best = NULL;

        for (size_t j = 0; j < k; j++) {
            struct kube_store_entry *e = cur[j] != head[j] ? ixlink_of(cur[j])->e : NULL;
            if (e && (!best || e->ix->seq > best->ix->seq))
                best = e;
        }
        if (!best)
            return;
        for (size_t j = 0; j < k; j++) {
            if (cur[j] != head[j] && ixlink_of(cur[j])->e == best)
                cur[j] = cur[j]->next;
        }
        if (!call_with(s, best, fn, userdata))
            return;
    }
}

size_t kube_store_count_owned(const struct kube_store *s, const char *owner_uid)
{
    struct kube_store_group *g = find_group(&s->by_owner, owner_uid);

    return g ? g->count : 0;
}

size_t kube_store_count_in_namespace(const struct kube_store *s, const char *ns)
{
    struct kube_store_group *g = find_group(&s->by_ns, ns ? ns : "");

    return g ? g->count : 0;
}

void kube_store_mark_begin(struct kube_store *s)
{
    s->mark++;
}

size_t kube_store_sweep(struct kube_store *s, kube_store_swept_fn fn, void *userdata)
{
    size_t removed = 0;

    for (size_t i = 0; i < s->by_key.nslots; i++) {
        struct hnode *n = s->by_key.slots[i], *next;

        for (; n; n = next) {
            struct kube_store_entry *e = (struct kube_store_entry *)n;
            cJSON *obj;

            next = n->next;
            if (e->mark == s->mark)
                continue;
            obj = entry_remove(s, e);
            if (fn && obj)
                fn(userdata, obj);
            cJSON_Delete(obj);
            removed++;
        }
    }
    return removed;
}

void kube_store_done(struct kube_store *s)
{
    for (size_t i = 0; i < s->by_key.nslots; i++) {
        struct hnode *n = s->by_key.slots[i], *next;

        for (; n; n = next) {
            next = n->next;
            cJSON_Delete(((struct kube_store_entry *)n)->obj);
            entry_free((struct kube_store_entry *)n);
        }
    }
    for (int t = 0; t < 3; t++) {
        struct kube_store_table *tab = t == 0 ? &s->by_ns : t == 1 ? &s->by_owner : &s->by_index;

        for (size_t i = 0; i < tab->nslots; i++) {
            struct hnode *n = tab->slots[i], *next;

            for (; n; n = next) {
                next = n->next;
                free(n);
            }
        }
        free(tab->slots);
    }
    free(s->by_key.slots);
    s->by_key.count = 0;
    dict_drop_if_empty(s);
    free(s->scratch);
    memset(s, 0, sizeof(*s));
}
