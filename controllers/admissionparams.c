#include "controllers/admissionparams.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/kube/status.h"
#include "lib/kube/store.h"
#include "lib/render/admission.h"

int admissionparams_init(struct admissionparams *ap, const struct render_catalog *cat,
                         const char *ns, const char *name, struct err *e)
{
    int r;

    memset(ap, 0, sizeof(*ap));
    if (!ns || !*ns || !name || !*name || strlen(ns) >= sizeof(ap->ns) ||
        strlen(name) >= sizeof(ap->name))
        return err_set(e, -EINVAL, "admission params \"%s/%s\": want NAMESPACE/NAME", ns ? ns : "",
                       name ? name : "");
    snprintf(ap->ns, sizeof(ap->ns), "%s", ns);
    snprintf(ap->name, sizeof(ap->name), "%s", name);
    if ((r = render_admission_params(cat, ns, name, &ap->desired)) < 0)
        return err_set(e, r, "admission params ConfigMap %s/%s: %s", ns, name, kube_code_name(r));
    return 0;
}

void admissionparams_done(struct admissionparams *ap)
{
    if (!ap)
        return;
    cJSON_Delete(ap->desired);
    ap->desired = NULL;
}

static bool is_ours(const struct admissionparams *ap, const char *ns, const char *name)
{
    return ns && name && strcmp(ns, ap->ns) == 0 && strcmp(name, ap->name) == 0;
}

/* Whether every label and the whole data of want are in have. */
static bool up_to_date(const cJSON *have, const cJSON *want)
{
    const cJSON *wl = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(want, "metadata"), "labels");
    const cJSON *hl = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(have, "metadata"), "labels");
    const cJSON *it;

    cJSON_ArrayForEach(it, wl) {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(hl, it->string);
        if (!cJSON_IsString(h) || strcmp(h->valuestring, it->valuestring) != 0)
            return false;
    }
    return cJSON_Compare(cJSON_GetObjectItemCaseSensitive(have, "data"),
                         cJSON_GetObjectItemCaseSensitive(want, "data"), true);
}

static int reconcile(void *ctx, const struct cache_view *view, const char *ns, const char *name,
                     struct plan *plan, struct err *e)
{
    struct admissionparams *ap = ctx;
    const cJSON *have;
    cJSON *obj;

    if (!is_ours(ap, ns, name))
        return 0;
    have = kube_store_get(view->configmaps, ns, name);
    if (have && up_to_date(have, ap->desired))
        return 0;
    if (!(obj = cJSON_Duplicate(ap->desired, true)) ||
        plan_apply(plan, &KUBE_CONFIGMAPS, obj, "ConfigMap %s/%s: %s", ns, name,
                   have ? "the admission policy's parameters differ from the package catalog"
                        : "the admission policy's parameters are missing") < 0)
        return err_set(e, -ENOMEM, "ConfigMap %s/%s: out of memory", ns, name);
    return 0;
}

static void map(void *ctx, const struct cache_view *view, const struct kube_resource *res,
                const cJSON *obj, enqueue_fn enqueue, void *q)
{
    struct admissionparams *ap = ctx;

    (void)view;
    if (res == &KUBE_CONFIGMAPS && is_ours(ap, kube_obj_namespace(obj), kube_obj_name(obj)))
        enqueue(q, ap->ns, ap->name);
}

static void seed(void *ctx, enqueue_fn enqueue, void *q)
{
    struct admissionparams *ap = ctx;

    enqueue(q, ap->ns, ap->name);
}

void admissionparams_def(struct admissionparams *ap, struct reconciler_def *ret_def)
{
    *ret_def = (struct reconciler_def){
        .name = "admissionparams",
        .primary = &KUBE_CONFIGMAPS,
        .reconcile = reconcile,
        .map = map,
        .seed = seed,
        .ctx = ap,
        .concurrency = 1,
    };
}
