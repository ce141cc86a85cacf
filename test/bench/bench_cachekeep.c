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
 * as sent. Then the time to read each kept object back as a tree (decompressed, unpacked and
 * parsed, as a reconcile's first read of it does) against a floor measured in the same run:
 * parsing the same object's compact text. Prints figures; asserts nothing.
 */

#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

#define READ_ROUNDS 20

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool count_tree(void *userdata, const cJSON *obj)
{
    *(size_t *)userdata += obj != NULL;
    return true;
}

/* CPU seconds to read every object of s as a tree READ_ROUNDS times, each read parsing anew. */
static double time_reads(struct kube_store *s)
{
    size_t read = 0;
    double t0 = now_s();

    for (int r = 0; r < READ_ROUNDS; r++) {
        kube_store_trim_to(s, 0);
        kube_store_foreach(s, count_tree, &read);
    }
    kube_store_trim_to(s, 0);
    return read ? now_s() - t0 : 0;
}

/* CPU seconds to parse each of texts READ_ROUNDS times, keeping a round's trees until it ends as
 * the reads above do: the floor of a read. */
static double time_parses(char **texts, size_t n)
{
    cJSON **trees = calloc(n, sizeof(*trees));
    double t0 = now_s();

    for (int r = 0; trees && r < READ_ROUNDS; r++) {
        for (size_t i = 0; i < n; i++)
            trees[i] = cJSON_Parse(texts[i]);
        for (size_t i = 0; i < n; i++)
            cJSON_Delete(trees[i]);
    }
    free(trees);
    return trees ? now_s() - t0 : 0;
}

int main(int argc, char **argv)
{
    double read_all = 0, parse_all = 0;
    size_t total_before = 0, total_after = 0, total_trees = 0;

    printf("%-24s %8s %10s %12s %12s %8s %12s\n", "kind", "objects", "JSON/obj", "before/obj",
           "after/obj", "after", "as trees/obj");
    for (int i = 1; i < argc; i++) {
        size_t len = 0, n = 0, sent = 0, trees = 0;
        char *text = read_file(argv[i], &len);
        cJSON *list = text ? cJSON_Parse(text) : NULL, *it;
        const cJSON *kind = NULL;
        struct kube_store before, after;
        char **kept = NULL;
        size_t nkept = 0;
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
                char **grown = realloc(kept, (nkept + 1) * sizeof(*kept));
                if (!grown || !(grown[nkept] = cJSON_PrintUnformatted(b))) {
                    fprintf(stderr, "out of memory\n");
                    return 1;
                }
                kept = grown;
                nkept++;
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
        if (nkept > 0) {
            double rd = time_reads(&after), ps = time_parses(kept, nkept);
            printf("%-24s read %.1f us/obj, its text parsed %.1f us/obj: %.2fx\n",
                   cJSON_IsString(kind) ? kind->valuestring : "?",
                   1e6 * rd / (double)(nkept * READ_ROUNDS),
                   1e6 * ps / (double)(nkept * READ_ROUNDS), ps > 0 ? rd / ps : 0);
            read_all += rd;
            parse_all += ps;
        }
        for (size_t k = 0; k < nkept; k++)
            free(kept[k]);
        free(kept);
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
    printf("all: reads %.2fx the floor of parsing the same texts\n",
           parse_all > 0 ? read_all / parse_all : 0);
    return 0;
}
