#include "controllers/clustermetrics.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/kinds.h"
#include "controllers/caches.h"
#include "controllers/lookup.h"
#include "lib/ctrl/metrics.h"
#include "lib/kube/store.h"
#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/key.h"
#include "lib/pki/kubeconfig.h"
#include "lib/pki/secret.h"
#include "lib/render/cluster.h"
#include "lib/util/list.h"
#include "lib/util/strmap.h"
#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"

/* The phases the NestedControlPlane reconciler sets (ncp_phase_of() in controllers/ncpstatus.c
 * and the deletion path in controllers/ncpcomponents.c), then the bucket for anything else. */
static const char *const phases[] = {"Provisioning", "Ready",    "Upgrading", "Reconfiguring",
                                     "Failed",       "Deleting", "Unknown"};
#define N_PHASES (sizeof(phases) / sizeof(phases[0]))

/* The earliest NotAfter of one Secret's certificates, as of one resourceVersion. */
struct memo {
    char *key; /* "namespace/name"; the map's key */
    char *rv;
    bool readable; /* at least one certificate was read */
    int64_t not_after;
    unsigned seen;         /* the last update that looked at the Secret */
    struct list_node link; /* in the metrics' memos */
};

struct clustermetrics {
    struct manager *m; /* once attached */
    struct metric *by_phase, *ready, *expiry, *ca_expiry, *sa_key_age;
    struct strmap memos;
    struct list_node memo_list; /* every memo, to forget those no pass looked at */
    unsigned pass;
    size_t read;
};

int clustermetrics_new(struct metrics *r, struct clustermetrics **ret_cm)
{
    static const char *const phase[] = {"phase", NULL};
    static const char *const cluster[] = {"namespace", "cluster", NULL};
    static const char *const ca[] = {"namespace", "cluster", "ca", NULL};
    struct clustermetrics *cm = calloc(1, sizeof(*cm));
    int ret;

    if (!cm)
        return -ENOMEM;
    list_init(&cm->memo_list);
    if ((ret = metrics_register(r, METRIC_GAUGE, "nestcp_control_planes",
                                "NestedControlPlanes by status.phase (Unknown: none yet, or "
                                "one nestcp does not set).",
                                phase, NULL, 0, &cm->by_phase)) < 0 ||
        (ret = metrics_register(r, METRIC_GAUGE, "nestcp_control_planes_ready",
                                "NestedControlPlanes whose status.ready is true.", NULL, NULL, 0,
                                &cm->ready)) < 0 ||
        (ret = metrics_register(r, METRIC_GAUGE, "nestcp_certificate_expiry_seconds",
                                "Seconds until the earliest NotAfter among the certificates "
                                "nestcp manages for a cluster (CAs, the components' mounted "
                                "certificates, the admin kubeconfig); negative once expired.",
                                cluster, NULL, 0, &cm->expiry)) < 0 ||
        (ret = metrics_register(r, METRIC_GAUGE, "nestcp_ca_expiry_seconds",
                                "Seconds until the NotAfter of each certificate authority of a "
                                "cluster (ca: cluster, etcd, front-proxy); negative once "
                                "expired. nestcp renews leaves, never a CA.",
                                ca, NULL, 0, &cm->ca_expiry)) < 0 ||
        (ret = metrics_register(r, METRIC_GAUGE, "nestcp_service_account_key_age_seconds",
                                "Seconds since the service-account signing key of a cluster "
                                "was made (the creationTimestamp of its Secret <c>-sa, or the "
                                "annotation nestcp.x-k8s.io/key-created-at once it was "
                                "rotated): the key has no expiry of its own.",
                                cluster, NULL, 0, &cm->sa_key_age)) < 0) {
        free(cm);
        return ret;
    }
    *ret_cm = cm;
    return 0;
}

static void memo_free(struct memo *mo)
{
    if (!mo)
        return;
    free(mo->key);
    free(mo->rv);
    free(mo);
}

static void memo_unlink(struct clustermetrics *cm, struct memo *mo)
{
    strmap_remove(&cm->memos, mo->key);
    list_remove(&mo->link);
    memo_free(mo);
}

void clustermetrics_free(struct clustermetrics *cm)
{
    if (!cm)
        return;
    while (!list_empty(&cm->memo_list))
        memo_unlink(cm, list_entry(list_first(&cm->memo_list), struct memo, link));
    strmap_done(&cm->memos, NULL);
    free(cm);
}

size_t clustermetrics_secrets_read(const struct clustermetrics *cm)
{
    return cm->read;
}

size_t clustermetrics_secrets_remembered(const struct clustermetrics *cm)
{
    return strmap_size(&cm->memos);
}

/* ---- reading a Secret's certificates ---- */

static void wipe_strings(cJSON *node)
{
    for (; node; node = node->next) {
        if (cJSON_IsString(node) && node->valuestring)
            explicit_bzero(node->valuestring, strlen(node->valuestring));
        wipe_strings(node->child);
    }
}

static void keep_earliest(int64_t t, bool *found, int64_t *earliest)
{
    if (!*found || t < *earliest)
        *earliest = t;
    *found = true;
}

/* The client certificates of every user of a kubeconfig. Its credentials are wiped before
 * the parsed document is freed. Returns 0 or -ENOMEM; what does not read is skipped. */
static int kubeconfig_not_after(const char *text, size_t len, bool *found, int64_t *earliest)
{
    cJSON *doc = NULL;
    const cJSON *u;
    struct err e;
    int r;

    r = yamlconv_parse_one(text, len, "kubeconfig", &doc, &e);
    if (r < 0)
        return r == -ENOMEM ? r : 0;
    cJSON_ArrayForEach(u, cJSON_GetObjectItemCaseSensitive(doc, "users")) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(u, "user"), "client-certificate-data");
        unsigned char *pem = NULL;
        size_t n;
        int64_t t;
        if (!cJSON_IsString(d))
            continue;
        r = pki_base64_decode(d->valuestring, strlen(d->valuestring), PKI_PEM_MAX, &pem, &n);
        if (r == 0 && pki_cert_not_after((const char *)pem, NULL, &t, &e) == 0)
            keep_earliest(t, found, earliest);
        free(pem);
        if (r == -ENOMEM)
            break;
    }
    wipe_strings(doc);
    cJSON_Delete(doc);
    return r == -ENOMEM ? r : 0;
}

/* The earliest NotAfter of a Secret's `*.crt` certificates and `*.conf` / `value`
 * kubeconfigs. Returns 0 (*found false when nothing read) or -ENOMEM. */
static int secret_read(const cJSON *secret, bool *found, int64_t *earliest)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(secret, "data"), *item;
    int r = 0;

    *found = false;
    if (!cJSON_IsObject(data))
        return 0;
    cJSON_ArrayForEach(item, data) {
        bool cert = str_has_suffix(item->string, ".crt");
        bool kubeconfig =
            str_has_suffix(item->string, ".conf") || strcmp(item->string, "value") == 0;
        unsigned char *text = NULL;
        size_t n = 0;
        int64_t t;
        struct err e;

        if (!cJSON_IsString(item) || (!cert && !kubeconfig))
            continue;
        r = pki_base64_decode(item->valuestring, strlen(item->valuestring),
                              cert ? PKI_PEM_MAX : PKI_KUBECONFIG_MAX, &text, &n);
        if (r == 0 && cert && pki_cert_not_after((const char *)text, item->string, &t, &e) == 0)
            keep_earliest(t, found, earliest);
        else if (r == 0 && kubeconfig)
            r = kubeconfig_not_after((const char *)text, n, found, earliest);
        if (text && kubeconfig)
            explicit_bzero(text, n);
        free(text);
        if (r == -ENOMEM)
            return r;
        r = 0;
    }
    return r;
}

/* The earliest NotAfter of ns/name, from the memo when its resourceVersion has not changed.
 * Returns 0 (*found false when the Secret is absent or holds no readable certificate) or
 * -ENOMEM. */
static int secret_not_after(struct clustermetrics *cm, const struct cache_view *view,
                            const char *ns, const char *name, bool *found, int64_t *not_after)
{
    const cJSON *secret = kube_store_get(view->secrets, ns, name);
    const char *rv;
    struct memo *mo;
    char key[2 * RENDER_CLUSTER_NAME_MAX + 2];
    int r;

    *found = false;
    if (!secret || snprintf(key, sizeof(key), "%s/%s", ns, name) >= (int)sizeof(key))
        return 0;
    rv = kube_obj_resource_version(secret);
    if (!rv)
        rv = "";
    mo = strmap_get(&cm->memos, key);
    if (!mo || strcmp(mo->rv, rv) != 0) {
        bool readable;
        int64_t t = 0;
        char *rv_copy;
        if ((r = secret_read(secret, &readable, &t)) < 0)
            return r;
        cm->read++;
        if (!(rv_copy = strdup(rv)))
            return -ENOMEM;
        if (!mo) {
            if (!(mo = calloc(1, sizeof(*mo))) || !(mo->key = strdup(key)) ||
                strmap_put(&cm->memos, mo->key, mo) < 0) {
                memo_free(mo);
                free(rv_copy);
                return -ENOMEM;
            }
            list_add_head(&cm->memo_list, &mo->link);
        }
        free(mo->rv);
        mo->rv = rv_copy;
        mo->readable = readable;
        mo->not_after = t;
    }
    mo->seen = cm->pass;
    *found = mo->readable;
    *not_after = mo->not_after;
    return 0;
}

/* ---- the families ---- */

struct pass {
    struct clustermetrics *cm;
    const struct cache_view *view;
    double counts[N_PHASES];
    double ready;
    int r;
};

/* The certificates of the cluster a control plane belongs to. Returns 0 or -ENOMEM. */
static int cluster_expiry(struct pass *p, const char *ns, const char *cluster)
{
    static const char *const purposes[] = {PKI_PURPOSE_CA, PKI_PURPOSE_ETCD, PKI_PURPOSE_PROXY,
                                           PKI_PURPOSE_KUBECONFIG};
    /* The ca label of the first three purposes: the CAs. */
    static const char *const cas[] = {"cluster", "etcd", "front-proxy"};
    char name[RENDER_CLUSTER_NAME_MAX + 32];
    bool any = false, found;
    int64_t earliest = 0, t = 0;
    int r;

    for (size_t i = 0; i < sizeof(purposes) / sizeof(purposes[0]); i++) {
        if (pki_secret_name(cluster, purposes[i], name, sizeof(name)) < 0)
            continue;
        if ((r = secret_not_after(p->cm, p->view, ns, name, &found, &t)) < 0)
            return r;
        if (!found)
            continue;
        keep_earliest(t, &any, &earliest);
        if (i < sizeof(cas) / sizeof(cas[0]) &&
            (r = metric_set(p->cm->ca_expiry, (const char *[]){ns, cluster, cas[i]},
                            (double)t - p->view->now)) < 0)
            return r;
    }
    if (pki_secret_name(cluster, PKI_PURPOSE_SA, name, sizeof(name)) == 0) {
        const cJSON *sa = kube_store_get(p->view->secrets, ns, name);
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(sa, "metadata");
        /* A rotated key was made when its rotation started, after the Secret. */
        const cJSON *created = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(md, "annotations"), PKI_SA_KEY_CREATED_ANNOTATION);
        if (!cJSON_IsString(created))
            created = cJSON_GetObjectItemCaseSensitive(md, "creationTimestamp");
        double at;
        if (cJSON_IsString(created) && time_parse_rfc3339(created->valuestring, &at) == 0 &&
            (r = metric_set(p->cm->sa_key_age, (const char *[]){ns, cluster}, p->view->now - at)) <
                0)
            return r;
    }
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        const cJSON *sts;
        const char *certs;
        if (snprintf(name, sizeof(name), "%s-%s", cluster,
                     render_part_short((enum render_part)i)) >= (int)sizeof(name))
            continue;
        sts = kube_store_get(p->view->statefulsets, ns, name);
        if (!(certs = render_cluster_certs_mounted(sts)))
            continue;
        if ((r = secret_not_after(p->cm, p->view, ns, certs, &found, &t)) < 0)
            return r;
        if (found)
            keep_earliest(t, &any, &earliest);
    }
    if (!any)
        return 0;
    return metric_set(p->cm->expiry, (const char *[]){ns, cluster},
                      (double)earliest - p->view->now);
}

static bool each_control_plane(void *userdata, const cJSON *ncp)
{
    struct pass *p = userdata;
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(ncp, "status");
    const cJSON *phase = cJSON_GetObjectItemCaseSensitive(status, "phase");
    const char *ns = kube_obj_namespace(ncp);
    const char *cluster = lookup_cluster_name(p->view, ncp, API_KIND_NESTED_CONTROL_PLANE);
    size_t i = 0;
    int r;

    while (i < N_PHASES - 1 &&
           !(cJSON_IsString(phase) && strcmp(phase->valuestring, phases[i]) == 0))
        i++;
    p->counts[i]++;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(status, "ready")))
        p->ready++;
    if (ns && cluster && (r = cluster_expiry(p, ns, cluster)) < 0)
        p->r = r;
    /* Done with what this control plane read: the walk would otherwise hold every object of
     * every cluster parsed at once (the iteration itself holds none). */
    if (p->cm->m)
        manager_trim_caches(p->cm->m);
    return true;
}

int clustermetrics_update(struct clustermetrics *cm, const struct cache_view *view)
{
    struct pass p = {.cm = cm, .view = view};
    struct list_node *n, *tmp;
    int r;

    cm->pass++;
    metric_clear(cm->expiry);
    metric_clear(cm->ca_expiry);
    metric_clear(cm->sa_key_age);
    kube_store_foreach(view->control_planes, each_control_plane, &p);
    for (size_t i = 0; i < N_PHASES; i++)
        if ((r = metric_set(cm->by_phase, (const char *[]){phases[i]}, p.counts[i])) < 0)
            p.r = r;
    if ((r = metric_set(cm->ready, NULL, p.ready)) < 0)
        p.r = r;
    /* Forget the Secrets no control plane looked at, unless this pass ran out of memory
     * before it could look at them all. */
    if (p.r == 0) {
        list_foreach_safe(n, tmp, &cm->memo_list) {
            struct memo *mo = list_entry(n, struct memo, link);
            if (mo->seen != cm->pass)
                memo_unlink(cm, mo);
        }
    }
    return p.r;
}

static void collect(void *userdata, struct metrics *r)
{
    struct clustermetrics *cm = userdata;
    struct cache_view view;

    cache_view_get(cm->m, &view);
    clustermetrics_update(cm, &view);
}

int clustermetrics_attach(struct clustermetrics *cm, struct manager *m)
{
    cm->m = m;
    return metrics_add_collector(manager_metrics(m), collect, cm);
}
