/* The NestedControlPlane's service-account key rotation (controllers/ncp.h,
 * controllers/sakeyrotation.h): one write of <c>-sa or of the status per step. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "api/conditions.h"
#include "controllers/keypool.h"
#include "controllers/lookup.h"
#include "controllers/ncp.h"
#include "controllers/sakeyrotation.h"
#include "lib/kube/store.h"
#include "lib/pki/base64.h"
#include "lib/pki/key.h"
#include "lib/pki/secret.h"
#include "lib/util/strutil.h"

static const cJSON *data_of(const cJSON *secret, const char *key)
{
    const cJSON *v = get(get(secret, "data"), key);

    return cJSON_IsString(v) ? v : NULL;
}

static const char *annotation_of(const cJSON *obj, const char *key)
{
    const cJSON *v = get(get(get(obj, "metadata"), "annotations"), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A merge patch of <c>-sa, conditional on the resourceVersion the decision read: data and
 * annotations as given (null removes a key). Takes data and annotations. */
static int patch_sa(struct cp *x, const cJSON *sa, cJSON *data, cJSON *annotations,
                    const char *why)
{
    const cJSON *rv = get(get(sa, "metadata"), "resourceVersion");
    cJSON *patch = cJSON_CreateObject(), *md = cJSON_CreateObject();

    if (!patch || !md || !cJSON_AddItemToObject(patch, "metadata", md)) {
        cJSON_Delete(patch);
        cJSON_Delete(md);
        cJSON_Delete(data);
        cJSON_Delete(annotations);
        return -ENOMEM;
    }
    if (!cJSON_AddItemToObject(md, "annotations", annotations)) {
        cJSON_Delete(annotations);
        annotations = NULL;
    }
    if (!cJSON_AddItemToObject(patch, "data", data)) {
        cJSON_Delete(data);
        data = NULL;
    }
    if (!annotations || !data ||
        !cJSON_AddStringToObject(md, "resourceVersion", cJSON_IsString(rv) ? rv->valuestring : "")) {
        cJSON_Delete(patch);
        return -ENOMEM;
    }
    return plan_merge_patch(x->plan, &KUBE_SECRETS, x->ns, kube_obj_name(sa), NULL, patch,
                            "Secret %s/%s: %s", x->ns, kube_obj_name(sa), why);
}

/* START: a new key pair into next.pub/next.key. Returns 0, 1 (a key is on its way: try
 * again shortly), -ENOMEM or another code of key generation. */
static int plan_sa_start(struct cp *x, const struct render_cluster *rc, const cJSON *sa,
                         const char *request)
{
    char *key = NULL, *pub = NULL, *bkey = NULL, *bpub = NULL, now[32];
    cJSON *data = NULL, *ann = NULL;
    struct err e;
    int r;

    err_clear(&e);
    r = x->ctx->keys ? keypool_take(x->ctx->keys, render_cluster_key_alg(rc), &key, &e)
                     : pki_key_generate(render_cluster_key_alg(rc), &key, &e);
    if (r == -EAGAIN) {
        plan_requeue_after(x->plan, NESTED_KEY_WAIT);
        return 1;
    }
    if (r < 0)
        return r;
    time_format_rfc3339(x->view->now, now);
    r = -ENOMEM;
    if (pki_key_public_pem(key, &pub, &e) < 0 || pki_base64_encode(key, strlen(key), &bkey) < 0 ||
        pki_base64_encode(pub, strlen(pub), &bpub) < 0 || !(data = cJSON_CreateObject()) ||
        !(ann = cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(data, PKI_SECRET_SA_NEXT_PUB, bpub) ||
        !cJSON_AddStringToObject(data, PKI_SECRET_SA_NEXT_KEY, bkey) ||
        !cJSON_AddStringToObject(ann, PKI_SA_NEXT_KEY_CREATED_ANNOTATION, now) ||
        !cJSON_AddStringToObject(ann, PKI_SA_ROTATION_ANNOTATION, request))
        goto out;
    r = patch_sa(x, sa, data, ann, "a new service-account key, trusted before it signs");
    data = ann = NULL;
out:
    cJSON_Delete(data);
    cJSON_Delete(ann);
    if (key)
        OPENSSL_cleanse(key, strlen(key));
    if (bkey)
        OPENSSL_cleanse(bkey, strlen(bkey));
    free(key);
    free(bkey);
    free(pub);
    free(bpub);
    return r;
}

/* SWITCH: the next pair signs, the old public key stays as previous.pub; the values are
 * moved as they are (base64), nothing is decoded. */
static int plan_sa_switch(struct cp *x, const cJSON *sa)
{
    const cJSON *np = data_of(sa, PKI_SECRET_SA_NEXT_PUB), *nk = data_of(sa, PKI_SECRET_SA_NEXT_KEY);
    const cJSON *old = data_of(sa, PKI_SECRET_TLS_CRT);
    const char *made = annotation_of(sa, PKI_SA_NEXT_KEY_CREATED_ANNOTATION);
    cJSON *data = cJSON_CreateObject(), *ann = cJSON_CreateObject();

    if (!np || !nk || !old) {
        cJSON_Delete(data);
        cJSON_Delete(ann);
        return -EINVAL;
    }
    if (!data || !ann || !cJSON_AddStringToObject(data, PKI_SECRET_TLS_CRT, np->valuestring) ||
        !cJSON_AddStringToObject(data, PKI_SECRET_TLS_KEY, nk->valuestring) ||
        !cJSON_AddStringToObject(data, PKI_SECRET_SA_PREVIOUS_PUB, old->valuestring) ||
        !cJSON_AddNullToObject(data, PKI_SECRET_SA_NEXT_PUB) ||
        !cJSON_AddNullToObject(data, PKI_SECRET_SA_NEXT_KEY) ||
        !(made ? cJSON_AddStringToObject(ann, PKI_SA_KEY_CREATED_ANNOTATION, made)
               : cJSON_AddNullToObject(ann, PKI_SA_KEY_CREATED_ANNOTATION)) ||
        !cJSON_AddNullToObject(ann, PKI_SA_NEXT_KEY_CREATED_ANNOTATION)) {
        cJSON_Delete(data);
        cJSON_Delete(ann);
        return -ENOMEM;
    }
    return patch_sa(x, sa, data, ann, "the new service-account key signs, the old one verifies");
}

static int plan_sa_drop(struct cp *x, const cJSON *sa)
{
    cJSON *data = cJSON_CreateObject(), *ann = cJSON_CreateObject();

    if (!data || !ann || !cJSON_AddNullToObject(data, PKI_SECRET_SA_PREVIOUS_PUB)) {
        cJSON_Delete(data);
        cJSON_Delete(ann);
        return -ENOMEM;
    }
    return patch_sa(x, sa, data, ann, "the old service-account public key dropped");
}

/* Runs the rotation's state machine after the rollout's (rolled: every component runs what
 * the Secrets imply; upgrading: a version change rolls out or is held back). */
int ncp_rotate_sa_key(struct cp *x, const struct render_cluster *rc, bool rolled,
                      bool upgrading)
{
    struct api_sa_key_status *ks = &x->st->sa_key;
    const struct api_certificates *cs = &render_cluster_control_plane(rc)->spec.certificates;
    char name[RENDER_CLUSTER_NAME_MAX], when[32];
    struct sakey_input in = {0};
    struct sakey_output out;
    const cJSON *sa;
    double since = 0;
    int r = 0;

    if (pki_secret_name(render_cluster_name(rc), PKI_PURPOSE_SA, name, sizeof(name)) < 0 ||
        !(sa = kube_store_get(x->view->secrets, x->ns, name)))
        return 0;
    in.requested = cs->rotate_sa_key;
    /* The request a running rotation was started for is kept with its keys. */
    in.taken = annotation_of(sa, PKI_SA_ROTATION_ANNOTATION);
    if (!in.taken)
        in.taken = ks->rotation;
    in.phase = ks->phase;
    if (ks->signing_since && time_parse_rfc3339(ks->signing_since, &since) == 0)
        in.signing_since = (int64_t)since;
    in.has_next = data_of(sa, PKI_SECRET_SA_NEXT_PUB) != NULL;
    in.has_previous = data_of(sa, PKI_SECRET_SA_PREVIOUS_PUB) != NULL;
    in.owned = lookup_controlled_by_uid(sa, x->ncp->meta.uid);
    in.initialized = x->st->initialized;
    in.rolled = rolled;
    in.upgrading = upgrading;
    in.overlap = cs->sa_rotation_overlap;
    in.now = (int64_t)x->view->now;
    sakey_rotation_step(&in, &out);

    switch (out.action) {
    case SAKEY_START:
        r = plan_sa_start(x, rc, sa, in.requested);
        if (r != 0)
            return r > 0 ? 0 : r;
        break;
    case SAKEY_SWITCH:
        r = plan_sa_switch(x, sa);
        break;
    case SAKEY_DROP:
        r = plan_sa_drop(x, sa);
        break;
    default:
        break;
    }
    if (r < 0)
        return r;
    if (out.action == SAKEY_TAKE || out.action == SAKEY_START)
        r = ncp_set_str(&ks->rotation, in.requested);
    else if (in.taken && !ks->rotation)
        r = ncp_set_str(&ks->rotation, in.taken);
    if (r == 0 && out.phase)
        r = ncp_set_str(&ks->phase, out.phase);
    if (r == 0 && out.action == SAKEY_START)
        r = ncp_set_str(&ks->signing_since, NULL) < 0 ? -ENOMEM
                                                      : ncp_set_str(&ks->drop_after, NULL);
    if (r == 0 && out.action == SAKEY_SIGNED) {
        time_format_rfc3339(x->view->now, when);
        r = ncp_set_str(&ks->signing_since, when);
    }
    if (r == 0 && out.drop_after && out.action != SAKEY_START) {
        time_format_rfc3339((double)out.drop_after, when);
        r = ncp_set_str(&ks->drop_after, when);
    }
    if (r < 0)
        return r;
    if (out.requeue_after > 0)
        plan_requeue_after(x->plan, out.requeue_after);
    if (out.event_reason &&
        plan_event(x->plan, KUBE_EVENT_NORMAL, out.event_reason, "%s", out.event_message) < 0)
        return -ENOMEM;
    if (!out.reason)
        return 0;
    return ncp_cond(x, SAKEY_CONDITION, out.rotating ? API_CONDITION_TRUE : API_CONDITION_FALSE,
                    out.refusal ? STATUS_SEVERITY_WARNING : NULL, out.reason, "%s", out.message);
}
