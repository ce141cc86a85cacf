#include "lib/kube/transform.h"

#include <stdbool.h>
#include <string.h>

void kube_transform_trim_metadata(cJSON *obj)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");

    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    cJSON_DeleteItemFromObjectCaseSensitive(ann, KUBE_LAST_APPLIED_ANNOTATION);
    if (cJSON_IsObject(ann) && !ann->child)
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "annotations");
}

enum keep { KEEP_NONE, KEEP_PART, KEEP_ALL };

/* How much of the field whose path is prefix[0, len) paths keep: all of it (a path names it or
 * one of its parents), part of it (a path goes through it), or none. */
static enum keep keep_of(const char *const *paths, const char *prefix, size_t len)
{
    enum keep k = KEEP_NONE;

    for (; *paths; paths++) {
        size_t n = strlen(*paths);

        if (n == len && memcmp(*paths, prefix, len) == 0)
            return KEEP_ALL;
        if (n > len && memcmp(*paths, prefix, len) == 0 && (*paths)[len] == '.')
            k = KEEP_PART;
    }
    return k;
}

/* Longer than any path a caller passes: a field whose path does not fit is not kept. */
#define PATH_MAX_LEN 256

/* Keeps of the object node, at path[0, len), what paths keep. */
static void keep_in(cJSON *node, const char *const *paths, char *path, size_t len)
{
    cJSON *c = node->child, *next;

    for (; c; c = next) {
        size_t klen = c->string ? strlen(c->string) : 0;
        size_t n = len + (len > 0) + klen;
        enum keep k = KEEP_NONE;

        next = c->next;
        if (c->string && n < PATH_MAX_LEN) {
            if (len > 0)
                path[len] = '.';
            memcpy(path + len + (len > 0), c->string, klen);
            path[n] = '\0';
            k = keep_of(paths, path, n);
        }
        if (k == KEEP_PART && cJSON_IsObject(c))
            keep_in(c, paths, path, n);
        else if (k != KEEP_ALL)
            cJSON_Delete(cJSON_DetachItemViaPointer(node, c));
        path[len] = '\0';
    }
}

void kube_transform_keep(cJSON *obj, const char *const *paths)
{
    char path[PATH_MAX_LEN];

    if (!cJSON_IsObject(obj))
        return;
    path[0] = '\0';
    keep_in(obj, paths, path, 0);
}
