#include "lib/util/jsonpatch.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON Pointer (RFC 6901) ---- */

/* Copies the reference token s[0..n) with "~1" -> "/" and "~0" -> "~" undone. */
static int token_unescape(const char *s, size_t n, char **ret_tok)
{
    char *out = malloc(n + 1);
    size_t j = 0;

    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '~') {
            out[j++] = s[i];
            continue;
        }
        if (i + 1 < n && (s[i + 1] == '0' || s[i + 1] == '1')) {
            out[j++] = s[i + 1] == '0' ? '~' : '/';
            i++;
            continue;
        }
        free(out);
        return -EINVAL;
    }
    out[j] = '\0';
    *ret_tok = out;
    return 0;
}

/* Parses an array index token: "0" or digits without a leading zero, at most max. "-" stands
 * for max itself (one past the end) when allow_end is set. */
static int array_index(const char *tok, int max, bool allow_end, int *ret_index)
{
    long v = 0;

    if (strcmp(tok, "-") == 0) {
        if (!allow_end)
            return -ENOENT;
        *ret_index = max;
        return 0;
    }
    if (!*tok || (tok[0] == '0' && tok[1]) || strlen(tok) > 9)
        return -ENOENT;
    for (const char *p = tok; *p; p++) {
        if (*p < '0' || *p > '9')
            return -ENOENT;
        v = v * 10 + (*p - '0');
    }
    if (v > max)
        return -ENOENT;
    *ret_index = (int)v;
    return 0;
}

static cJSON *child_of(const cJSON *node, const char *tok)
{
    int idx;

    if (cJSON_IsObject(node))
        return cJSON_GetObjectItemCaseSensitive(node, tok);
    if (cJSON_IsArray(node)) {
        int size = cJSON_GetArraySize(node);
        if (array_index(tok, size - 1, false, &idx) < 0)
            return NULL;
        return cJSON_GetArrayItem(node, idx);
    }
    return NULL;
}

/* Walks the first len bytes of pointer from doc. */
static int walk(const cJSON *doc, const char *pointer, size_t len, cJSON **ret_node)
{
    const cJSON *node = doc;
    size_t pos = 0;

    if (len > 0 && pointer[0] != '/')
        return -EINVAL;
    while (pos < len) {
        const char *s = pointer + pos + 1;
        size_t n = 0;
        char *tok = NULL;
        int r;

        while (pos + 1 + n < len && s[n] != '/')
            n++;
        r = token_unescape(s, n, &tok);
        if (r < 0)
            return r;
        node = child_of(node, tok);
        free(tok);
        if (!node)
            return -ENOENT;
        pos += 1 + n;
    }
    *ret_node = (cJSON *)node;
    return 0;
}

int jsonpatch_pointer_get(const cJSON *doc, const char *pointer, const cJSON **ret_value)
{
    cJSON *node = NULL;
    int r;

    if (!doc || !pointer)
        return -EINVAL;
    r = walk(doc, pointer, strlen(pointer), &node);
    if (r < 0)
        return r;
    *ret_value = node;
    return 0;
}

/* Resolves everything but the last token of pointer (which must not be ""). */
static int locate_parent(cJSON *doc, const char *pointer, cJSON **ret_parent, char **ret_key)
{
    const char *last;
    cJSON *parent = NULL;
    int r;

    if (pointer[0] != '/')
        return -EINVAL;
    last = strrchr(pointer, '/');
    r = walk(doc, pointer, (size_t)(last - pointer), &parent);
    if (r < 0)
        return r;
    r = token_unescape(last + 1, strlen(last + 1), ret_key);
    if (r < 0)
        return r;
    *ret_parent = parent;
    return 0;
}

/* ---- JSON Patch (RFC 6902) ---- */

/* Inserts item before position idx (appends when idx is the size). cJSON_InsertItemInArray of
 * Debian bookworm's libcjson 1.7.15-1+deb12u4 refuses every index but 0, so the middle of the
 * list is linked here by hand. */
static bool array_insert(cJSON *array, int idx, cJSON *item)
{
    cJSON *after = cJSON_GetArrayItem(array, idx);

    if (!after)
        return cJSON_AddItemToArray(array, item);
    if (after == array->child)
        return cJSON_InsertItemInArray(array, 0, item);
    item->next = after;
    item->prev = after->prev;
    after->prev->next = item;
    after->prev = item;
    return true;
}

struct op {
    const char *name;
    const char *path;
    const char *from;   /* NULL unless present */
    const cJSON *value; /* NULL unless present (a JSON null is present) */
};

/* Adds value (owned; freed on failure) at pointer in *doc. */
static int op_add(cJSON **doc, const char *pointer, cJSON *value, struct err *e)
{
    cJSON *parent = NULL;
    char *key = NULL;
    int r, idx;

    if (!*pointer) {
        cJSON_Delete(*doc);
        *doc = value;
        return 0;
    }
    r = locate_parent(*doc, pointer, &parent, &key);
    if (r < 0) {
        err_set(e, r, r == -ENOENT ? "path does not exist" : "malformed path");
        goto fail;
    }
    if (cJSON_IsObject(parent)) {
        bool ok = cJSON_GetObjectItemCaseSensitive(parent, key)
                      ? cJSON_ReplaceItemInObjectCaseSensitive(parent, key, value)
                      : cJSON_AddItemToObject(parent, key, value);
        if (!ok) {
            r = err_set(e, -ENOMEM, "out of memory");
            goto fail;
        }
    } else if (cJSON_IsArray(parent)) {
        r = array_index(key, cJSON_GetArraySize(parent), true, &idx);
        if (r < 0) {
            err_set(e, r, "array index \"%s\" is out of range", key);
            goto fail;
        }
        if (!array_insert(parent, idx, value)) {
            r = err_set(e, -ENOMEM, "out of memory");
            goto fail;
        }
    } else {
        r = err_set(e, -ENOENT, "parent of the path is not an object or array");
        goto fail;
    }
    free(key);
    return 0;
fail:
    free(key);
    cJSON_Delete(value);
    return r;
}

/* Detaches the value at pointer from doc (pointer must not be ""). */
static int op_detach(cJSON *doc, const char *pointer, cJSON **ret_value, struct err *e)
{
    cJSON *parent = NULL, *item;
    char *key = NULL;
    int r;

    if (!*pointer)
        return err_set(e, -EINVAL, "cannot remove the whole document");
    r = locate_parent(doc, pointer, &parent, &key);
    if (r < 0)
        return err_set(e, r, r == -ENOENT ? "path does not exist" : "malformed path");
    item = child_of(parent, key);
    free(key);
    if (!item)
        return err_set(e, -ENOENT, "path does not exist");
    *ret_value = cJSON_DetachItemViaPointer(parent, item);
    return 0;
}

/* Replaces the existing value at pointer with value (owned; freed on failure), in place. */
static int op_replace(cJSON **doc, const char *pointer, cJSON *value, struct err *e)
{
    cJSON *parent = NULL, *item;
    char *key = NULL;
    bool ok;
    int r;

    if (!*pointer)
        return op_add(doc, pointer, value, e);
    r = locate_parent(*doc, pointer, &parent, &key);
    if (r < 0) {
        cJSON_Delete(value);
        return err_set(e, r, r == -ENOENT ? "path does not exist" : "malformed path");
    }
    item = child_of(parent, key);
    if (!item) {
        free(key);
        cJSON_Delete(value);
        return err_set(e, -ENOENT, "path does not exist");
    }
    if (cJSON_IsObject(parent))
        ok = cJSON_ReplaceItemInObjectCaseSensitive(parent, key, value);
    else
        ok = cJSON_ReplaceItemViaPointer(parent, item, value);
    free(key);
    if (!ok) {
        cJSON_Delete(value);
        return err_set(e, -ENOMEM, "out of memory");
    }
    return 0;
}

static int parse_op(const cJSON *item, struct op *ret_op, struct err *e)
{
    struct op op = {0};
    const cJSON *m;

    if (!cJSON_IsObject(item))
        return err_set(e, -EINVAL, "not an object");
    cJSON_ArrayForEach(m, item) {
        const char **slot = NULL;
        if (strcmp(m->string, "value") == 0) {
            if (op.value)
                return err_set(e, -EINVAL, "member \"value\" appears twice");
            op.value = m;
            continue;
        }
        if (strcmp(m->string, "op") == 0)
            slot = &op.name;
        else if (strcmp(m->string, "path") == 0)
            slot = &op.path;
        else if (strcmp(m->string, "from") == 0)
            slot = &op.from;
        else
            continue; /* RFC 6902 section 4: other members are ignored. */
        if (*slot)
            return err_set(e, -EINVAL, "member \"%s\" appears twice", m->string);
        if (!cJSON_IsString(m))
            return err_set(e, -EINVAL, "member \"%s\" is not a string", m->string);
        *slot = m->valuestring;
    }
    if (!op.name)
        return err_set(e, -EINVAL, "member \"op\" is missing");
    if (!op.path)
        return err_set(e, -EINVAL, "member \"path\" is missing");
    *ret_op = op;
    return 0;
}

/* Values in the siblings from n on and below them, counting up to about limit. */
static size_t count_nodes(const cJSON *n, size_t limit)
{
    size_t total = 0;

    for (; n && total <= limit; n = n->next) {
        total++;
        if (n->child)
            total += count_nodes(n->child, limit - (total < limit ? total : limit));
    }
    return total;
}

size_t jsonpatch_count_values(const cJSON *v, size_t limit)
{
    return v ? count_nodes(v->child, limit) + 1 : 0;
}

/* Counts the values an operation adds into *budget; fails once the document could pass
 * JSONPATCH_MAX_NODES (a copy that doubles a subtree twenty times must not exhaust memory). */
static int spend(size_t *budget, const cJSON *value, struct err *e)
{
    size_t n = value ? jsonpatch_count_values(value, JSONPATCH_MAX_NODES) : 1;

    if (n > *budget)
        return err_set(e, -E2BIG, "the patched document would hold more than %d values",
                       JSONPATCH_MAX_NODES);
    *budget -= n;
    return 0;
}

static int apply_one(cJSON **doc, const struct op *op, size_t *budget, struct err *e)
{
    cJSON *v = NULL;
    const cJSON *found = NULL;
    bool needs_value =
        !strcmp(op->name, "add") || !strcmp(op->name, "replace") || !strcmp(op->name, "test");
    bool needs_from = !strcmp(op->name, "move") || !strcmp(op->name, "copy");
    int r;

    if (needs_value && !op->value)
        return err_set(e, -EINVAL, "member \"value\" is missing");
    if (needs_from && !op->from)
        return err_set(e, -EINVAL, "member \"from\" is missing");
    if (*op->path && op->path[0] != '/')
        return err_set(e, -EINVAL, "malformed path");

    if (!strcmp(op->name, "add") || !strcmp(op->name, "replace")) {
        if ((r = spend(budget, op->value, e)) < 0)
            return r;
        v = cJSON_Duplicate(op->value, true);
        if (!v)
            return err_set(e, -ENOMEM, "out of memory");
        return op->name[0] == 'a' ? op_add(doc, op->path, v, e) : op_replace(doc, op->path, v, e);
    }
    if (!strcmp(op->name, "remove")) {
        r = op_detach(*doc, op->path, &v, e);
        cJSON_Delete(v);
        return r;
    }
    if (!strcmp(op->name, "test")) {
        r = jsonpatch_pointer_get(*doc, op->path, &found);
        if (r < 0)
            return err_set(e, r, r == -ENOENT ? "path does not exist" : "malformed path");
        if (!cJSON_Compare(found, op->value, true))
            return err_set(e, -EBUSY, "test failed: the value differs");
        return 0;
    }
    if (needs_from) {
        size_t fl = strlen(op->from);
        if (!strcmp(op->name, "move")) {
            if (!strcmp(op->from, op->path))
                return jsonpatch_pointer_get(*doc, op->from, &found) < 0
                           ? err_set(e, -ENOENT, "from does not exist")
                           : 0;
            if (strncmp(op->from, op->path, fl) == 0 && op->path[fl] == '/')
                return err_set(e, -EINVAL, "cannot move a value into one of its children");
            r = op_detach(*doc, op->from, &v, e);
        } else {
            r = jsonpatch_pointer_get(*doc, op->from, &found);
            if (r < 0)
                err_set(e, r, r == -ENOENT ? "from does not exist" : "malformed from");
            else if ((r = spend(budget, found, e)) < 0)
                ;
            else if (!(v = cJSON_Duplicate(found, true)))
                r = err_set(e, -ENOMEM, "out of memory");
        }
        if (r < 0)
            return r;
        return op_add(doc, op->path, v, e);
    }
    return err_set(e, -EINVAL, "unknown op \"%s\"", op->name);
}

int jsonpatch_apply(const cJSON *doc, const cJSON *ops, cJSON **ret_doc, struct err *e)
{
    cJSON *work = NULL;
    const cJSON *item;
    int i = 0, r = -EINVAL;
    size_t budget, have;

    if (!doc || !cJSON_IsArray(ops))
        return err_set(e, -EINVAL, "a JSON patch must be an array of operations");
    have = jsonpatch_count_values(doc, JSONPATCH_MAX_NODES);
    budget = have > JSONPATCH_MAX_NODES ? 0 : JSONPATCH_MAX_NODES - have;
    work = cJSON_Duplicate(doc, true);
    if (!work)
        return err_set(e, -ENOMEM, "out of memory");
    cJSON_ArrayForEach(item, ops) {
        struct op op = {0};
        r = parse_op(item, &op, e);
        if (r < 0) {
            err_prefix(e, "operation %d: ", i);
            goto out;
        }
        r = apply_one(&work, &op, &budget, e);
        if (r < 0) {
            err_prefix(e, "operation %d (%s %s): ", i, op.name, op.path);
            goto out;
        }
        i++;
    }
    *ret_doc = work;
    work = NULL;
    r = 0;
out:
    cJSON_Delete(work);
    return r;
}

/* ---- JSON Merge Patch (RFC 7386) ---- */

static int merge_into(cJSON *target, const cJSON *patch)
{
    const cJSON *m;

    cJSON_ArrayForEach(m, patch) {
        cJSON *cur = cJSON_GetObjectItemCaseSensitive(target, m->string);
        cJSON *nv;
        bool ok;

        if (cJSON_IsNull(m)) {
            if (cur)
                cJSON_Delete(cJSON_DetachItemViaPointer(target, cur));
            continue;
        }
        if (cJSON_IsObject(m) && cJSON_IsObject(cur)) {
            int r = merge_into(cur, m);
            if (r < 0)
                return r;
            continue;
        }
        if (cJSON_IsObject(m)) {
            nv = cJSON_CreateObject();
            if (nv && merge_into(nv, m) < 0) {
                cJSON_Delete(nv);
                nv = NULL;
            }
        } else {
            nv = cJSON_Duplicate(m, true);
        }
        if (!nv)
            return -ENOMEM;
        ok = cur ? cJSON_ReplaceItemInObjectCaseSensitive(target, m->string, nv)
                 : cJSON_AddItemToObject(target, m->string, nv);
        if (!ok) {
            cJSON_Delete(nv);
            return -ENOMEM;
        }
    }
    return 0;
}

int jsonpatch_merge(const cJSON *doc, const cJSON *patch, cJSON **ret_doc)
{
    cJSON *out;

    if (!patch)
        return -EINVAL;
    if (!cJSON_IsObject(patch)) {
        out = cJSON_Duplicate(patch, true);
        if (!out)
            return -ENOMEM;
        *ret_doc = out;
        return 0;
    }
    out = cJSON_IsObject(doc) ? cJSON_Duplicate(doc, true) : cJSON_CreateObject();
    if (!out)
        return -ENOMEM;
    if (merge_into(out, patch) < 0) {
        cJSON_Delete(out);
        return -ENOMEM;
    }
    *ret_doc = out;
    return 0;
}
