/* The NestedControlPlane's Secrets (controllers/ncp.h): the CA Secrets created when missing,
 * a CA supplied without the cluster-name label labelled, a CA in its last year reported, and
 * the admin kubeconfig, renewed before it expires. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"
#include "controllers/lookup.h"
#include "controllers/ncp.h"
#include "lib/kube/store.h"
#include "lib/pki/secret.h"
#include "lib/util/strutil.h"

static const char *const ca_purposes[] = {PKI_PURPOSE_CA, PKI_PURPOSE_ETCD, PKI_PURPOSE_PROXY,
                                          PKI_PURPOSE_SA};

/* Notes in created (cas_created, kubeconfigs_created) that x's Secrets were just created. */
static void remember_created(struct cp *x, struct strmap *created)
{
    size_t size = strlen(x->ns) + strlen(x->name) + 2;
    struct nested_cas_created *c = malloc(sizeof(*c) + size);

    if (!c)
        return; /* only an optimisation */
    snprintf(c->key, size, "%s/%s", x->ns, x->name);
    c->at = x->view->now;
    free(strmap_remove(created, c->key));
    if (strmap_put(created, c->key, c) < 0)
        free(c);
}

bool ncp_cas_pending(struct cp *x, const struct render_cluster *rc)
{
    char key[2 * RENDER_CLUSTER_NAME_MAX + 2], name[RENDER_CLUSTER_NAME_MAX];
    struct nested_cas_created *c;
    bool all = true;

    snprintf(key, sizeof(key), "%s/%s", x->ns, x->name);
    if (!(c = strmap_get(&x->ctx->cas_created, key)))
        return false;
    for (size_t i = 0; i < sizeof(ca_purposes) / sizeof(ca_purposes[0]) && all; i++)
        all = pki_secret_name(render_cluster_name(rc), ca_purposes[i], name, sizeof(name)) < 0 ||
              kube_store_get(x->view->secrets, x->ns, name) ||
              cache_view_found(x->view, &KUBE_SECRETS, x->ns, name);
    if (all || x->view->now - c->at > NESTED_ISSUE_WAIT) {
        free(strmap_remove(&x->ctx->cas_created, key));
        return false;
    }
    return true;
}

void ncp_forget_created(struct cp *x)
{
    char key[2 * RENDER_CLUSTER_NAME_MAX + 2];

    snprintf(key, sizeof(key), "%s/%s", x->ns, x->name);
    free(strmap_remove(&x->ctx->cas_created, key));
    free(strmap_remove(&x->ctx->kubeconfigs_created, key));
}

/* Whether x's admin kubeconfig Secret was created and is not cached yet (live: what the cache
 * holds of it), within NESTED_ISSUE_WAIT. */
static bool kubeconfig_pending(struct cp *x, const cJSON *live)
{
    char key[2 * RENDER_CLUSTER_NAME_MAX + 2];
    struct nested_cas_created *c;

    snprintf(key, sizeof(key), "%s/%s", x->ns, x->name);
    if (!(c = strmap_get(&x->ctx->kubeconfigs_created, key)))
        return false;
    if (live || x->view->now - c->at > NESTED_ISSUE_WAIT) {
        free(strmap_remove(&x->ctx->kubeconfigs_created, key));
        return false;
    }
    return true;
}

int ncp_plan_created_cas(struct cp *x, const struct render_cluster_pki *pki)
{
    size_t first = x->plan->n_actions;
    const cJSON *ca;
    int n = 0, r;

    cJSON_ArrayForEach(ca, render_cluster_pki_created(pki)) {
        cJSON *copy = cJSON_Duplicate(ca, true);
        if (!copy || plan_create_else_read(x->plan, &KUBE_SECRETS, copy, "Secret %s/%s: new CA",
                                           x->ns, kube_obj_name(ca)) < 0)
            return -ENOMEM;
        n++;
    }
    /* The CAs do not need one another: they go at once. One a user made without the label is
     * found by its create while the others are made, and the Event counts those that were. */
    plan_together(x->plan, first);
    if (n == 0)
        return 0;
    r = plan_event_count(x->plan, first, KUBE_EVENT_NORMAL, "CreatedCertificateAuthorities",
                         "CA Secrets created");
    if (r < 0)
        return r;
    remember_created(x, &x->ctx->cas_created);
    return n;
}

/* A CA Secret the user made without the cluster-name label (kubectl create secret tls) was
 * read live when creating ours found it (cache_view_found) and is good, since the CAs loaded:
 * labelled, so that the cache holds it from now on. Returns the number labelled, or -ENOMEM. */
int ncp_label_found_cas(struct cp *x, const struct render_cluster *rc)
{
    char name[RENDER_CLUSTER_NAME_MAX];
    int n = 0;

    for (size_t i = 0; i < sizeof(ca_purposes) / sizeof(ca_purposes[0]); i++) {
        const cJSON *found;
        const char *label;
        cJSON *patch, *labels;
        if (pki_secret_name(render_cluster_name(rc), ca_purposes[i], name, sizeof(name)) < 0 ||
            kube_store_get(x->view->secrets, x->ns, name) ||
            !(found = cache_view_found(x->view, &KUBE_SECRETS, x->ns, name)))
            continue;
        /* Labelled already: one nestcp made that the cache has not seen yet. */
        label = kube_obj_label(found, "cluster.x-k8s.io/cluster-name");
        if (label && strcmp(label, render_cluster_name(rc)) == 0)
            continue;
        patch = cJSON_CreateObject();
        labels = cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "metadata"), "labels");
        if (!labels || !cJSON_AddStringToObject(labels, "cluster.x-k8s.io/cluster-name",
                                                render_cluster_name(rc))) {
            cJSON_Delete(patch);
            return -ENOMEM;
        }
        if (plan_merge_patch(x->plan, &KUBE_SECRETS, x->ns, name, NULL, patch,
                             "Secret %s/%s: a CA supplied without the cluster-name label, "
                             "labelled so that the cache holds it",
                             x->ns, name) < 0 ||
            plan_event(x->plan, KUBE_EVENT_NORMAL, "LabelledCertificateAuthority",
                       "Secret %s: used as the cluster's %s CA and labelled "
                       "cluster.x-k8s.io/cluster-name=%s",
                       name, ca_purposes[i], render_cluster_name(rc)) < 0)
            return -ENOMEM;
        n++;
    }
    return n;
}

/* nestcp renews leaves, not a CA by itself: one in its last year keeps CertificatesAvailable True
 * with reason CertificateAuthorityExpiring naming it, and a Warning Event when that starts;
 * otherwise the control plane comes back when the first CA enters its last year. */
int ncp_ca_expiry(struct cp *x, const struct render_cluster_pki *pki)
{
    const int64_t year = (int64_t)365 * 24 * 3600;
    const char *which = NULL;
    char name[RENDER_CLUSTER_NAME_MAX + 32], when[32];
    int64_t not_after = 0, now = (int64_t)x->view->now;
    bool told = false; /* the condition said so already: no second Event */
    int r;

    for (size_t i = 0; i < x->st->conditions.n; i++) {
        const struct api_condition *c = &x->st->conditions.items[i];
        told = told || (c->type && strcmp(c->type, "CertificatesAvailable") == 0 && c->reason &&
                        strcmp(c->reason, "CertificateAuthorityExpiring") == 0);
    }

    if (render_cluster_pki_earliest_ca(pki, name, sizeof(name), &which, &not_after) < 0 ||
        not_after - year > now) {
        if (which)
            plan_requeue_after(x->plan, (double)(not_after - year - now));
        return ncp_cond(x, "CertificatesAvailable", API_CONDITION_TRUE, NULL, "Available",
                        "the CA Secrets are present and valid");
    }
    time_format_rfc3339((double)not_after, when);
    r = ncp_cond(x, "CertificatesAvailable", API_CONDITION_TRUE, NULL,
                 "CertificateAuthorityExpiring",
                 "Secret %s/%s: the %s CA expires at %s, in %lld days; nestcp renews leaf "
                 "certificates, not a CA by itself: rotate it before then "
                 "(spec.certificates.rotate.%s, docs/certificates.md)",
                 x->ns, name, which, when, (long long)((not_after - now) / (24 * 3600)),
                 strcmp(which, "etcd") == 0          ? "etcdCA"
                 : strcmp(which, "front-proxy") == 0 ? "frontProxyCA"
                                                     : "clusterCA");
    if (r == 0 && !told &&
        plan_event(x->plan, KUBE_EVENT_WARNING, "CertificateAuthorityExpiring",
                   "Secret %s/%s: the %s CA expires at %s", x->ns, name, which, when) < 0)
        return -ENOMEM;
    return r;
}

int ncp_plan_kubeconfig(struct cp *x, const struct render_cluster *rc,
                        const struct render_cluster_pki *pki)
{
    char name[RENDER_CLUSTER_NAME_MAX];
    const cJSON *live;
    cJSON *secret = NULL;
    int64_t renew_at = 0;
    struct err e;
    int r;

    if (pki_secret_name(render_cluster_name(rc), PKI_PURPOSE_KUBECONFIG, name, sizeof(name)) < 0)
        return 0;
    live = kube_store_get(x->view->secrets, x->ns, name);
    /* A kubeconfig Secret someone else made is theirs. */
    if (live && !lookup_controlled_by_uid(live, x->ncp->meta.uid))
        return 0;
    /* Created a moment ago and not delivered by the watch yet: not created again. */
    if (kubeconfig_pending(x, live)) {
        plan_requeue_after(x->plan, 1.0);
        return 0;
    }
    err_clear(&e);
    r = render_cluster_kubeconfig(rc, pki, &x->src, &secret, &renew_at, &e);
    if (r == -EAGAIN) {
        plan_requeue_after(x->plan, NESTED_KEY_WAIT);
        return 0;
    }
    if (r < 0)
        return r == -ENOMEM ? r
                            : ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR,
                                       "KubeconfigFailed", "%s", e.msg);
    if (!secret) {
        nested_requeue_for_renewal(x->plan, x->view->now, renew_at);
        return 0;
    }
    if (live)
        return plan_apply(x->plan, &KUBE_SECRETS, secret, "Secret %s/%s: kubeconfig renewed", x->ns,
                          name);
    r = plan_create(x->plan, &KUBE_SECRETS, secret, "Secret %s/%s: admin kubeconfig", x->ns, name);
    if (r == 0)
        remember_created(x, &x->ctx->kubeconfigs_created);
    return r;
}
