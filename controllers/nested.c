#include "controllers/nested.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/etcdmembership.h"
#include "controllers/rollerrors.h"
#include "controllers/status.h"
#include "lib/kube/store.h"
#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/key.h"
#include "lib/pki/kubeconfig.h"
#include "lib/util/list.h"
#include "lib/util/strutil.h"

struct checked {
    char digest[RENDER_CLUSTER_HASH_MAX];
    int64_t until, value;
    struct list_node link; /* in nested_ctx.checked_order, the oldest first */
};

static void checked_forget(struct nested_ctx *n, struct checked *c)
{
    strmap_remove(&n->checked, c->digest);
    list_remove(&c->link);
    free(c);
}

static bool memo_passed(void *ctx, const char *digest, int64_t now, int64_t *ret_value)
{
    const struct checked *c = strmap_get(&((struct nested_ctx *)ctx)->checked, digest);

    if (!c || c->until <= now)
        return false;
    if (ret_value)
        *ret_value = c->value;
    return true;
}

static void memo_remember(void *ctx, const char *digest, int64_t until, int64_t value)
{
    struct nested_ctx *n = ctx;
    struct checked *c = strmap_get(&n->checked, digest);

    if (c) {
        list_remove(&c->link);
    } else {
        /* Full: the one remembered longest ago goes, and only it, so that no control plane
         * checks again what it has just checked. */
        if (strmap_size(&n->checked) >= NESTED_MEMO_MAX)
            checked_forget(n, list_entry(list_first(&n->checked_order), struct checked, link));
        if (!(c = calloc(1, sizeof(*c))))
            return; /* only an optimisation */
        snprintf(c->digest, sizeof(c->digest), "%s", digest);
        if (strmap_put(&n->checked, c->digest, c) < 0) {
            free(c);
            return;
        }
    }
    c->until = until;
    c->value = value;
    list_add_tail(&n->checked_order, &c->link);
}

void nested_ctx_init(struct nested_ctx *ctx, const struct render_catalog *cat, struct keypool *keys,
                     int64_t cert_renew_before)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->cat = cat;
    ctx->api_cat = render_cluster_api_catalog(cat);
    ctx->keys = keys;
    ctx->cert_renew_before = cert_renew_before;
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        ctx->parts[i].base = ctx;
        ctx->parts[i].part = (enum render_part)i;
    }
    list_init(&ctx->checked_order);
    ctx->memo = (struct render_check_memo){ctx, memo_passed, memo_remember};
}

void nested_requeue_for_renewal(struct plan *plan, double now, int64_t renew_at)
{
    double wait = NESTED_RENEW_CHECK_MAX;

    if (renew_at && (double)renew_at - now < wait)
        wait = (double)renew_at - now;
    plan_requeue_after(plan, wait < 1.0 ? 1.0 : wait);
}

void nested_cert_policy(const struct nested_ctx *ctx, struct render_cluster *rc)
{
    render_cluster_set_renew_before(rc, ctx->cert_renew_before);
    render_cluster_set_leaf_validity(rc, ctx->cert_validity);
}

void nested_ctx_done(struct nested_ctx *ctx)
{
    for (int i = 0; i < RENDER_PART__COUNT; i++)
        strmap_done(&ctx->parts[i].issued, free);
    while (!list_empty(&ctx->checked_order))
        checked_forget(ctx, list_entry(list_first(&ctx->checked_order), struct checked, link));
    strmap_done(&ctx->checked, NULL);
    strmap_done(&ctx->admitted, free);
    strmap_done(&ctx->waiting, free);
    strmap_done(&ctx->cas_created, free);
    strmap_done(&ctx->kubeconfigs_created, free);
    etcd_membership_free(ctx->members);
    ctx->members = NULL;
    rollerrors_free(ctx->roll_errors);
    ctx->roll_errors = NULL;
}

/* "2027-12-04": when the first member's server certificate in the certs Secret expires. */
static bool certs_expire(const struct render_source *src, const char *ns, const char *certs,
                         const char *sts, char *out, size_t size)
{
    const cJSON *secret = certs ? src->get_secret(src->ctx, ns, certs) : NULL;
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(secret, "data"), *v;
    char key[RENDER_CLUSTER_NAME_MAX + 32];
    unsigned char *pem = NULL;
    size_t len;
    int64_t not_after;
    struct err e;
    struct tm tm;
    time_t t;
    bool ok;

    snprintf(key, sizeof(key), "server.crt");
    v = cJSON_GetObjectItemCaseSensitive(data, key);
    if (!cJSON_IsString(v) ||
        pki_base64_decode(v->valuestring, strlen(v->valuestring), PKI_PEM_MAX, &pem, &len) < 0)
        return false;
    err_clear(&e);
    ok = pki_cert_not_after((const char *)pem, key, &not_after, &e) == 0;
    free(pem);
    t = (time_t)not_after;
    return ok && gmtime_r(&t, &tm) && strftime(out, size, "%Y-%m-%d", &tm) > 0;
}

void nested_etcd_safety(const struct cache_view *view, const struct render_source *src,
                        const struct render_cluster *rc, const char *desired_hash,
                        struct etcd_safety *out)
{
    const struct api_component *etcd = render_cluster_component_object(rc, RENDER_PART_ETCD);
    char name[RENDER_CLUSTER_NAME_MAX], expire[32];
    struct etcd_safety_input in = {.name = name};
    const cJSON *sts;
    struct status_sts ss;
    const char *accept;

    snprintf(name, sizeof(name), "%s-etcd", render_cluster_name(rc));
    sts = kube_store_get(view->statefulsets, render_cluster_namespace(rc), name);
    status_statefulset(sts, NULL, &ss);
    if (!etcd) {
        memset(out, 0, sizeof(*out));
        return;
    }
    in.exists = ss.exists;
    in.live_replicas = ss.replicas;
    in.live_claims =
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(sts, "spec"), "volumeClaimTemplates")) > 0;
    in.changes = desired_hash && ss.template_hash && strcmp(desired_hash, ss.template_hash) != 0;
    in.replicas = etcd->spec.replicas > 0 ? etcd->spec.replicas : 1;
    in.storage = etcd->spec.storage.kind;
    in.storage_kept = render_cluster_etcd_storage_kept(rc);
    accept = api_strmap_get(&etcd->meta.annotations, ETCD_SAFETY_ACCEPT_DATA_LOSS);
    in.accept_data_loss = accept && strcmp(accept, "true") == 0;
    if (certs_expire(src, render_cluster_namespace(rc), ss.certs, name, expire, sizeof(expire)))
        in.certs_expire = expire;
    etcd_safety_check(&in, out);
}

int nested_secret_not_after(const cJSON *secret, int64_t *ret_not_after)
{
    const cJSON *v;
    int64_t earliest = 0;
    bool found = false;

    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(secret, "data")) {
        const char *key = v->string;
        bool cert = str_has_suffix(key, ".crt"), conf = str_has_suffix(key, ".conf");
        struct pki_kubeconfig_creds *creds = NULL;
        unsigned char *data = NULL;
        size_t len = 0;
        int64_t not_after = 0;
        struct err e;
        int r;

        if ((!cert && !conf) || !cJSON_IsString(v))
            continue; /* private keys are never read */
        err_clear(&e);
        r = pki_base64_decode(v->valuestring, strlen(v->valuestring),
                              cert ? PKI_PEM_MAX : PKI_KUBECONFIG_MAX, &data, &len);
        if (r == 0 && cert)
            r = pki_cert_not_after((const char *)data, key, &not_after, &e);
        if (r == 0 && conf) {
            r = pki_kubeconfig_read((const char *)data, len, key, &creds, &e);
            if (r == 0 && creds->client_cert_pem)
                r = pki_cert_not_after(creds->client_cert_pem, key, &not_after, &e);
            else if (r == 0)
                r = 1; /* no client certificate: nothing expires */
            pki_kubeconfig_creds_free(creds);
        }
        if (data)
            explicit_bzero(data, len);
        free(data);
        if (r < 0)
            return r == -ENOMEM ? r : -EINVAL;
        if (r == 0 && (!found || not_after < earliest)) {
            earliest = not_after;
            found = true;
        }
    }
    if (!found)
        return -ENOENT;
    *ret_not_after = earliest;
    return 0;
}

const struct kube_resource *nested_part_resource(enum render_part part)
{
    static const struct kube_resource *const resources[RENDER_PART__COUNT] = {
        &NESTCP_ETCDS, &NESTCP_APISERVERS, &NESTCP_CONTROLLER_MANAGERS};

    return part < RENDER_PART__COUNT ? resources[part] : NULL;
}
