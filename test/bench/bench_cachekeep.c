/* Heap per cached object, per kind, as the manager's caches hold objects (their compact JSON
 * text, lib/kube/store.h) before their transforms (metadata.managedFields dropped, nothing
 * else) and after them (controllers/cachekeep.h), and what the same objects take as parsed
 * cJSON trees, as the caches held them before they kept text, for the same objects: lists saved
 * from a super cluster.
 *
 *   kubectl -n NS get secrets -o json --show-managed-fields >secrets.json   (one per kind;
 *   bench_clusters.sh with BENCH_SAVE saves them all)
 *   bench_cachekeep secrets.json statefulsets.json pods.json ...
 *
 * Counted as nestcp_informer_bytes counts (kube_store_bytes); also the JSON text of each object
 * as sent. Prints figures; asserts nothing.
 */

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/cachekeep.h"
#include "lib/kube/store.h"

/* Heap bytes of a cJSON tree: each node, and the key and string it owns. */
static size_t tree_bytes(const cJSON *o)
{
    size_t n = 0;

    for (; o; o = o->next) {
        n += malloc_usable_size((void *)o);
        if (o->string)
            n += malloc_usable_size(o->string);
        if (o->valuestring)
            n += malloc_usable_size(o->valuestring);
        n += tree_bytes(o->child);
    }
    return n;
}

static char *read_file(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "re");
    char *text = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)n + 1)) && fread(text, 1, (size_t)n, f) == (size_t)n) {
        text[n] = '\0';
        *ret_len = (size_t)n;
    } else {
        free(text);
        text = NULL;
    }
    fclose(f);
    return text;
}

int main(int argc, char **argv)
{
    size_t total_before = 0, total_after = 0, total_trees = 0;

    printf("%-24s %8s %10s %12s %12s %8s %12s\n", "kind", "objects", "JSON/obj", "before/obj",
           "after/obj", "after", "as trees/obj");
    for (int i = 1; i < argc; i++) {
        size_t len = 0, n = 0, sent = 0, trees = 0;
        char *text = read_file(argv[i], &len);
        cJSON *list = text ? cJSON_Parse(text) : NULL, *it;
        const cJSON *kind = NULL;
        struct kube_store before, after;
        cachekeep_fn *keep;

        free(text);
        if (!list) {
            fprintf(stderr, "%s: not a JSON list\n", argv[i]);
            return 1;
        }
        kube_store_init(&before);
        kube_store_init(&after);
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "items")) {
            cJSON *a = cJSON_Duplicate(it, true), *b = cJSON_Duplicate(it, true);
            char *t = cJSON_PrintUnformatted(it);

            if (!a || !b || !t) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            sent += strlen(t);
            free(t);
            kind = cJSON_GetObjectItemCaseSensitive(it, "kind");
            n++;
            cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "metadata"),
                                                    "managedFields");
            cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(b, "metadata"),
                                                    "managedFields");
            kube_store_put(&before, a, NULL);
            keep = cachekeep_transform(cJSON_IsString(kind) ? kind->valuestring : "");
            if (keep(NULL, b)) {
                trees += malloc_usable_size(b) + tree_bytes(b->child);
                kube_store_put(&after, b, NULL);
            } else {
                cJSON_Delete(b);
            }
        }
        if (n > 0)
            printf("%-24s %8zu %10zu %12zu %12zu %7.0f%% %12zu\n",
                   cJSON_IsString(kind) ? kind->valuestring : "?", n, sent / n,
                   kube_store_bytes(&before) / n, kube_store_bytes(&after) / n,
                   100.0 * (double)kube_store_bytes(&after) / (double)kube_store_bytes(&before),
                   trees / n);
        total_before += kube_store_bytes(&before);
        total_after += kube_store_bytes(&after);
        total_trees += trees;
        kube_store_done(&before);
        kube_store_done(&after);
        cJSON_Delete(list);
    }
    printf("all: %.2f MiB before, %.2f MiB after, %.2f MiB as parsed trees\n",
           (double)total_before / 1048576, (double)total_after / 1048576,
           (double)total_trees / 1048576);
    return 0;
}
