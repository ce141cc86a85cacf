/* The NestedControlPlane's components (controllers/ncp.h): adopted when they have no
 * controller, and on deletion deleted with the objects they own before the finalizer goes. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"
#include "api/kinds.h"
#include "controllers/lookup.h"
#include "controllers/ncp.h"
#include "lib/kube/store.h"

/* How often a deletion that waits for children looks again, seconds. */
#define DELETE_POLL 2.0

/* ---- deletion ---- */

struct children {
    const char *uids[RENDER_PART__COUNT];
    struct cp *x;
    int left;
    int r;
};

/* Deletes an object one of the components controls, and counts it. */
static bool delete_child(struct children *c, const struct kube_resource *res, const cJSON *obj)
{
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        if (!c->uids[i] || !lookup_controlled_by_uid(obj, c->uids[i]))
            continue;
        c->left++;
        if (!status_deleting(obj) &&
            plan_delete(c->x->plan, res, c->x->ns, kube_obj_name(obj), kube_obj_uid(obj),
                        "%s %s/%s: the control plane is being deleted", res->kind, c->x->ns,
                        kube_obj_name(obj)) < 0) {
            c->r = -ENOMEM;
            return false;
        }
    }
    return true;
}

static bool each_secret(void *ud, const cJSON *o)
{
    return delete_child(ud, &KUBE_SECRETS, o);
}

struct rendered_children {
    struct children *c;
    const struct kube_resource *res;
};

static bool each_rendered(void *ud, const cJSON *o)
{
    struct rendered_children *rc = ud;

    return delete_child(rc->c, rc->res, o);
}

int ncp_reconcile_delete(struct cp *x)
{
    struct children c = {.x = x};
    int r;

    if (!ncp_has_finalizer(x->ncp))
        return 0;
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        const cJSON *comp = lookup_component(x->view, x->obj, (enum render_part)i);
        if (!comp || !lookup_controlled_by_uid(comp, x->ncp->meta.uid))
            continue;
        c.uids[i] = kube_obj_uid(comp);
        c.left++;
        if (!status_deleting(comp) &&
            plan_delete(
                x->plan, nested_part_resource((enum render_part)i), x->ns, kube_obj_name(comp),
                kube_obj_uid(comp), "%s %s/%s: the control plane is being deleted",
                nested_part_resource((enum render_part)i)->kind, x->ns, kube_obj_name(comp)) < 0)
            return -ENOMEM;
    }
    /* What the components own goes now too, so nothing runs on without them. */
    for (int i = 0; i < RENDER_PART__COUNT && c.r == 0; i++) {
        if (!c.uids[i])
            continue;
        const struct kube_resource *res;
        for (size_t k = 0; (res = nestedcomponent_rendered(k)) && c.r == 0; k++) {
            const struct kube_store *store = nestedcomponent_rendered_store(x->view, res);
            struct rendered_children rc = {&c, res};
            if (store)
                kube_store_foreach_owned(store, c.uids[i], each_rendered, &rc);
        }
        kube_store_foreach_owned(x->view->secrets, c.uids[i], each_secret, &c);
    }
    if (c.r < 0)
        return c.r;
    free(x->st->phase);
    if (!(x->st->phase = strdup("Deleting")))
        return -ENOMEM;
    if (c.left > 0) {
        plan_requeue_after(x->plan, DELETE_POLL);
        r = ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO, "Deleting",
                     "waiting for %d components and the objects they own to be deleted", c.left);
        return r;
    }
    /* Everything is gone: let the control plane go. */
    return ncp_patch_self(x, false, true, NULL);
}

/* ---- adoption ---- */

static int adopt(struct cp *x, enum render_part part, const cJSON *comp)
{
    const cJSON *refs = get(get(comp, "metadata"), "ownerReferences"), *ref;
    cJSON *patch = cJSON_CreateObject(), *meta, *arr, *mine;
    const char *av = cJSON_IsString(get(x->obj, "apiVersion"))
                         ? get(x->obj, "apiVersion")->valuestring
                         : API_GROUP_CONTROLPLANE "/" API_VERSION_STORAGE;

    meta = cJSON_AddObjectToObject(patch, "metadata");
    arr = cJSON_AddArrayToObject(meta, "ownerReferences");
    if (!arr || !cJSON_AddStringToObject(
                    meta, "resourceVersion",
                    kube_obj_resource_version(comp) ? kube_obj_resource_version(comp) : ""))
        goto oom;
    cJSON_ArrayForEach(ref, refs) {
        if (!cJSON_AddItemToArray(arr, cJSON_Duplicate(ref, true)))
            goto oom;
    }
    mine = cJSON_CreateObject();
    if (!mine || !cJSON_AddItemToArray(arr, mine) ||
        !cJSON_AddStringToObject(mine, "apiVersion", av) ||
        !cJSON_AddStringToObject(mine, "kind", "NestedControlPlane") ||
        !cJSON_AddStringToObject(mine, "name", x->name) ||
        !cJSON_AddStringToObject(mine, "uid", x->ncp->meta.uid) ||
        !cJSON_AddTrueToObject(mine, "controller") ||
        !cJSON_AddTrueToObject(mine, "blockOwnerDeletion"))
        goto oom;
    return plan_merge_patch(x->plan, nested_part_resource(part), x->ns, kube_obj_name(comp), NULL,
                            patch, "%s %s/%s: adopted by NestedControlPlane %s",
                            nested_part_resource(part)->kind, x->ns, kube_obj_name(comp), x->name);
oom:
    cJSON_Delete(patch);
    return -ENOMEM;
}

/* Adopts the components that have no controller and have written a status; returns
 * STATUS_STOP (with a condition) when one is controlled by another owner. */
int ncp_adopt_components(struct cp *x)
{
    size_t first = x->plan->n_actions;

    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        const cJSON *comp = lookup_component(x->view, x->obj, (enum render_part)i);
        const cJSON *ref;
        int r;

        if (!comp || lookup_controlled_by_uid(comp, x->ncp->meta.uid) || status_deleting(comp))
            continue;
        ref = kube_obj_controller_ref(comp);
        if (ref) {
            const cJSON *k = get(ref, "kind"), *n = get(ref, "name");
            r = ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR,
                         "ComponentControlledElsewhere",
                         "%s %s is controlled by %s %s, not by this control plane",
                         nested_part_resource((enum render_part)i)->kind, kube_obj_name(comp),
                         cJSON_IsString(k) ? k->valuestring : "?",
                         cJSON_IsString(n) ? n->valuestring : "?");
            return r < 0 ? r : STATUS_STOP;
        }
        /* Not reconciled yet: its first status write (WaitingForAdoption) is on its way, and
         * the adoption, conditional on the resourceVersion, would meet it with a conflict
         * (one side answered 409). The status it writes brings this control plane back. */
        if (!get(comp, "status"))
            continue;
        if ((r = adopt(x, (enum render_part)i, comp)) < 0)
            return r;
    }
    /* Each patch writes one component, with its own resourceVersion: sent at once. */
    plan_together(x->plan, first);
    return 0;
}
