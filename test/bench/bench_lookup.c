/* What a reconcile's membership lookups cost with N standalone clusters in one namespace (the
 * shape bench_clusters.sh creates: a labelled control plane naming its three labelled
 * components), with the caches' indexes (controllers/caches.c) and without (every lookup walks
 * the namespace): per cluster, the lookups of one reconcile and of the map functions for its
 * components (lookup_capi_cluster, lookup_nested_cluster_of_control_plane, lookup_component and
 * lookup_control_plane_of_component for each part, the cluster-name claim check), and the heap
 * the indexes take. Prints figures and ratios; asserts nothing.
 *
 *   bench_lookup [N...]        (default 100 300 1000 3000)
 */

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/lookup.h"
#include "lib/kube/object.h"
#include "lib/kube/store.h"

enum { S_NCP, S_ETCD, S_KAS, S_KCM, S_NC, S_CLUSTER, S_SECRETS, S_COUNT };

struct world {
    struct kube_store stores[S_COUNT];
    struct cache_view view;
};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static cJSON *object(const char *kind, const char *name, const char *cluster)
{
    cJSON *o = cJSON_CreateObject(), *md;

    cJSON_AddStringToObject(o, "apiVersion", "controlplane.cluster.x-k8s.io/v1beta1");
    cJSON_AddStringToObject(o, "kind", kind);
    md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", "bench");
    cJSON_AddStringToObject(md, "creationTimestamp", "2026-12-06T00:00:00Z");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "labels"), "cluster.x-k8s.io/cluster-name",
                            cluster);
    return o;
}

static void put(struct kube_store *s, cJSON *obj)
{
    cJSON *old = NULL;

    if (kube_store_put(s, obj, &old) < 0) {
        fprintf(stderr, "put failed\n");
        exit(1);
    }
    cJSON_Delete(old);
}

static void fill(struct world *w, int n, bool indexed)
{
    static const char *const parts[][3] = {{"etcd", "NestedEtcd", "-etcd"},
                                           {"apiserver", "NestedAPIServer", "-apiserver"},
                                           {"controllerManager", "NestedControllerManager", "-cm"}};

    memset(w, 0, sizeof(*w));
    for (int i = 0; i < S_COUNT; i++)
        kube_store_init(&w->stores[i]);
    if (indexed) {
        kube_store_set_index(&w->stores[S_NCP], lookup_index_control_plane);
        for (int i = S_ETCD; i <= S_KCM; i++)
            kube_store_set_index(&w->stores[i], lookup_index_component);
        kube_store_set_index(&w->stores[S_NC], lookup_index_nested_cluster);
        kube_store_set_index(&w->stores[S_CLUSTER], lookup_index_cluster);
    }
    w->view = (struct cache_view){
        .control_planes = &w->stores[S_NCP],
        .etcds = &w->stores[S_ETCD],
        .apiservers = &w->stores[S_KAS],
        .controller_managers = &w->stores[S_KCM],
        .nested_clusters = &w->stores[S_NC],
        .clusters = &w->stores[S_CLUSTER],
        .secrets = &w->stores[S_SECRETS],
    };
    for (int i = 0; i < n; i++) {
        char name[32], comp[48];
        cJSON *ncp, *spec;

        snprintf(name, sizeof(name), "b%d", i);
        ncp = object("NestedControlPlane", name, name);
        spec = cJSON_AddObjectToObject(ncp, "spec");
        for (int p = 0; p < 3; p++) {
            cJSON *ref = cJSON_AddObjectToObject(spec, parts[p][0]);
            snprintf(comp, sizeof(comp), "%s%s", name, parts[p][2]);
            cJSON_AddStringToObject(ref, "kind", parts[p][1]);
            cJSON_AddStringToObject(ref, "name", comp);
            put(&w->stores[S_ETCD + p], object(parts[p][1], comp, name));
        }
        put(&w->stores[S_NCP], ncp);
    }
}

static void done(struct world *w)
{
    for (int i = 0; i < S_COUNT; i++)
        kube_store_done(&w->stores[i]);
}

static bool claims(void *userdata, const cJSON *ncp)
{
    const char *const *c = userdata;

    if (strcmp(lookup_claimed_name(ncp), c[0]) == 0 && strcmp(kube_obj_name(ncp), c[1]) != 0)
        fprintf(stderr, "unexpected claimant %s\n", kube_obj_name(ncp));
    return true;
}

/* Every cluster's lookups once; seconds taken. */
static double lookups(struct world *w, int n)
{
    double t0 = now();

    for (int i = 0; i < n; i++) {
        char name[32];
        const cJSON *ncp;
        const char *c[2];

        snprintf(name, sizeof(name), "b%d", i);
        ncp = kube_store_get(w->view.control_planes, "bench", name);
        if (lookup_capi_cluster(&w->view, ncp, API_KIND_NESTED_CONTROL_PLANE, NULL) ||
            lookup_nested_cluster_of_control_plane(&w->view, ncp))
            fprintf(stderr, "unexpected Cluster or NestedCluster\n");
        for (int p = 0; p < RENDER_PART__COUNT; p++) {
            const cJSON *comp = lookup_component(&w->view, ncp, (enum render_part)p);
            if (!comp ||
                lookup_control_plane_of_component(&w->view, comp, (enum render_part)p) != ncp)
                fprintf(stderr, "%s: component %d not found\n", name, p);
        }
        c[0] = lookup_cluster_name(&w->view, ncp, API_KIND_NESTED_CONTROL_PLANE);
        c[1] = name;
        lookup_each_claimant(&w->view, "bench", c[0], claims, (void *)c);
    }
    return now() - t0;
}

int main(int argc, char **argv)
{
    static const int defaults[] = {100, 300, 1000, 3000};
    int nn = argc > 1 ? argc - 1 : 4;

    printf("%6s %14s %14s %8s %14s %14s\n", "N", "walk us/clus", "index us/clus", "ratio",
           "heap B/clus", "index B/clus");
    for (int k = 0; k < nn; k++) {
        int n = argc > 1 ? atoi(argv[k + 1]) : defaults[k];
        struct world w;
        size_t h0, h1, h2;
        double walk, ix;

        if (n <= 0)
            continue;
        h0 = mallinfo2().uordblks;
        fill(&w, n, false);
        h1 = mallinfo2().uordblks;
        walk = lookups(&w, n);
        done(&w);
        h2 = mallinfo2().uordblks;
        fill(&w, n, true);
        ix = lookups(&w, n);
        printf("%6d %14.2f %14.2f %7.1fx %14.0f %14.0f\n", n, walk / n * 1e6, ix / n * 1e6,
               walk / ix, (double)(h1 - h0) / n,
               ((double)mallinfo2().uordblks - (double)h2 - (double)(h1 - h0)) / n);
        done(&w);
    }
    return 0;
}
