/* The NestedControlPlane's rotations of its service-account key and of its CAs
 * (controllers/ncp.h, controllers/sakeyrotation.h, controllers/carotation.h): one write of a
 * key Secret or of the status per step, one rotation at a time. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "api/conditions.h"
#include "controllers/carotation.h"
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

/* A merge patch of a key Secret, conditional on the resourceVersion the decision read: data
 * and annotations as given (null removes a key). Takes data and annotations. */
static int patch_secret(struct cp *x, const cJSON *sa, cJSON *data, cJSON *annotations,
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
        !cJSON_AddStringToObject(md, "resourceVersion",
                                 cJSON_IsString(rv) ? rv->valuestring : "")) {
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
    r = patch_secret(x, sa, data, ann, "a new service-account key, trusted before it signs");
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
    const cJSON *np = data_of(sa, PKI_SECRET_SA_NEXT_PUB),
                *nk = data_of(sa, PKI_SECRET_SA_NEXT_KEY);
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
    return patch_secret(x, sa, data, ann,
                        "the new service-account key signs, the old one verifies");
}

static int plan_sa_drop(struct cp *x, const cJSON *sa)
{
    cJSON *data = cJSON_CreateObject(), *ann = cJSON_CreateObject();

    if (!data || !ann || !cJSON_AddNullToObject(data, PKI_SECRET_SA_PREVIOUS_PUB)) {
        cJSON_Delete(data);
        cJSON_Delete(ann);
        return -ENOMEM;
    }
    return patch_secret(x, sa, data, ann, "the old service-account public key dropped");
}

/* ---- what every step records ---- */

/* The status of a step: the request it took up (TAKE, START), or the one the running
 * rotation's keys name when the status has none, and the phase it moved to (NULL: the same).
 * Returns 0 or -ENOMEM. */
static int record_rotation(char **rotation, char **phase, bool took_up, const char *requested,
                           const char *taken, const char *next_phase)
{
    int r = 0;

    if (took_up)
        r = ncp_set_str(rotation, requested);
    else if (taken && !*rotation)
        r = ncp_set_str(rotation, taken);
    if (r == 0 && next_phase)
        r = ncp_set_str(phase, next_phase);
    return r;
}

/* The Event of a step, after its writes and status are planned; none when reason is NULL or
 * "". Returns 0 or -ENOMEM. */
static int record_event(struct cp *x, const char *reason, const char *message)
{
    if (!reason || !reason[0])
        return 0;
    return plan_event(x->plan, KUBE_EVENT_NORMAL, reason, "%s", message) < 0 ? -ENOMEM : 0;
}

/* ---- the service-account key ---- */

/* What the service-account key's machine reads; *ret_sa NULL when <c>-sa is not cached. */
static void sa_input(struct cp *x, const struct render_cluster *rc, struct sakey_input *in,
                     const cJSON **ret_sa)
{
    struct api_sa_key_status *ks = &x->st->sa_key;
    const struct api_certificates *cs = &render_cluster_control_plane(rc)->spec.certificates;
    char name[RENDER_CLUSTER_NAME_MAX];
    const cJSON *sa = NULL;
    double since = 0;

    memset(in, 0, sizeof(*in));
    if (pki_secret_name(render_cluster_name(rc), PKI_PURPOSE_SA, name, sizeof(name)) == 0)
        sa = kube_store_get(x->view->secrets, x->ns, name);
    *ret_sa = sa;
    if (!sa)
        return;
    in->requested = cs->rotate_sa_key;
    /* The request a running rotation was started for is kept with its keys. */
    in->taken = annotation_of(sa, PKI_SA_ROTATION_ANNOTATION);
    if (!in->taken)
        in->taken = ks->rotation;
    in->phase = ks->phase;
    if (ks->signing_since && time_parse_rfc3339(ks->signing_since, &since) == 0)
        in->signing_since = (int64_t)since;
    in->has_next = data_of(sa, PKI_SECRET_SA_NEXT_PUB) != NULL;
    in->has_previous = data_of(sa, PKI_SECRET_SA_PREVIOUS_PUB) != NULL;
    in->owned = lookup_controlled_by_uid(sa, x->ncp->meta.uid);
    in->initialized = x->st->initialized;
    in->overlap = cs->sa_rotation_overlap;
    in->now = (int64_t)x->view->now;
}

/* Carries out the machine's step: the write of <c>-sa, the status, the Event. Returns 0, 1 (a
 * key is on its way: nothing was done), or a negative errno. */
static int sa_act(struct cp *x, const struct render_cluster *rc, const struct sakey_input *in,
                  const cJSON *sa, const struct sakey_output *out)
{
    struct api_sa_key_status *ks = &x->st->sa_key;
    char when[32];
    int r = 0;

    switch (out->action) {
    case SAKEY_START:
        r = plan_sa_start(x, rc, sa, in->requested);
        if (r != 0)
            return r;
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
    r = record_rotation(&ks->rotation, &ks->phase,
                        out->action == SAKEY_TAKE || out->action == SAKEY_START, in->requested,
                        in->taken, out->phase);
    if (r == 0 && out->action == SAKEY_START)
        r = ncp_set_str(&ks->signing_since, NULL) < 0 ? -ENOMEM
                                                      : ncp_set_str(&ks->drop_after, NULL);
    if (r == 0 && out->action == SAKEY_SIGNED) {
        time_format_rfc3339(x->view->now, when);
        r = ncp_set_str(&ks->signing_since, when);
    }
    if (r == 0 && out->drop_after && out->action != SAKEY_START) {
        time_format_rfc3339((double)out->drop_after, when);
        r = ncp_set_str(&ks->drop_after, when);
    }
    if (r < 0)
        return r;
    if (out->requeue_after > 0)
        plan_requeue_after(x->plan, out->requeue_after);
    return record_event(x, out->event_reason, out->event_message);
}

/* ---- the CAs ---- */

static const struct carot_kind ca_kinds[API_CA__COUNT] = {
    {"cluster CA", "ClusterCA"},
    {"etcd CA", "EtcdCA"},
    {"front-proxy CA", "FrontProxyCA"},
};

static const char *const ca_purposes[API_CA__COUNT] = {PKI_PURPOSE_CA, PKI_PURPOSE_ETCD,
                                                       PKI_PURPOSE_PROXY};

static void ca_input(struct cp *x, const struct render_cluster *rc, enum api_ca ca,
                     struct carot_input *in, const cJSON **ret_secret)
{
    const struct api_certificates *cs = &render_cluster_control_plane(rc)->spec.certificates;
    const struct api_ca_rotation_status *st = &x->st->ca[ca];
    char name[RENDER_CLUSTER_NAME_MAX];
    const cJSON *secret = NULL;

    memset(in, 0, sizeof(*in));
    in->kind = &ca_kinds[ca];
    if (pki_secret_name(render_cluster_name(rc), ca_purposes[ca], name, sizeof(name)) == 0)
        secret = kube_store_get(x->view->secrets, x->ns, name);
    *ret_secret = secret;
    if (!secret)
        return;
    in->requested = cs->rotate_ca[ca];
    in->taken = annotation_of(secret, PKI_SA_ROTATION_ANNOTATION);
    if (!in->taken)
        in->taken = st->rotation;
    in->phase = st->phase;
    in->has_next =
        data_of(secret, PKI_SECRET_CA_NEXT_CRT) && data_of(secret, PKI_SECRET_CA_NEXT_KEY);
    in->has_previous = data_of(secret, PKI_SECRET_CA_PREVIOUS_CRT) != NULL;
    in->has_previous_key = data_of(secret, PKI_SECRET_CA_PREVIOUS_KEY) != NULL;
    in->owned = lookup_controlled_by_uid(secret, x->ncp->meta.uid);
    in->initialized = x->st->initialized;
}

/* START: a new CA into next.crt/next.key. Returns 0, 1 (a key is on its way), or a negative
 * errno. */
static int plan_ca_start(struct cp *x, const struct render_cluster_pki *pki, enum api_ca ca,
                         const cJSON *secret, const char *request)
{
    char *crt = NULL, *key = NULL, *bcrt = NULL, *bkey = NULL;
    cJSON *data = NULL, *ann = NULL;
    struct err e;
    int r;

    err_clear(&e);
    r = render_cluster_pki_new_ca(pki, ca, &crt, &key, &e);
    if (r == -EAGAIN) {
        plan_requeue_after(x->plan, NESTED_KEY_WAIT);
        return 1;
    }
    if (r < 0)
        return r;
    r = -ENOMEM;
    if (pki_base64_encode(crt, strlen(crt), &bcrt) < 0 ||
        pki_base64_encode(key, strlen(key), &bkey) < 0 || !(data = cJSON_CreateObject()) ||
        !(ann = cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(data, PKI_SECRET_CA_NEXT_CRT, bcrt) ||
        !cJSON_AddStringToObject(data, PKI_SECRET_CA_NEXT_KEY, bkey) ||
        !cJSON_AddStringToObject(ann, PKI_SA_ROTATION_ANNOTATION, request))
        goto out;
    r = patch_secret(x, secret, data, ann, "a new CA, trusted before it signs");
    data = ann = NULL;
out:
    cJSON_Delete(data);
    cJSON_Delete(ann);
    OPENSSL_clear_free(key, key ? strlen(key) : 0);
    OPENSSL_clear_free(bkey, bkey ? strlen(bkey) : 0);
    free(crt);
    free(bcrt);
    return r;
}

/* SWITCH, SERVE and DROP: values moved as they are (base64) or removed. */
static int plan_ca_step(struct cp *x, const cJSON *secret, enum carot_action action)
{
    const cJSON *nc = data_of(secret, PKI_SECRET_CA_NEXT_CRT),
                *nk = data_of(secret, PKI_SECRET_CA_NEXT_KEY),
                *oc = data_of(secret, PKI_SECRET_TLS_CRT),
                *ok = data_of(secret, PKI_SECRET_TLS_KEY);
    cJSON *data = cJSON_CreateObject(), *ann = cJSON_CreateObject();
    const char *why;
    bool good = data && ann;

    switch (action) {
    case CAROT_SWITCH:
        if (!nc || !nk || !oc || !ok) {
            cJSON_Delete(data);
            cJSON_Delete(ann);
            return -EINVAL;
        }
        good = good && cJSON_AddStringToObject(data, PKI_SECRET_TLS_CRT, nc->valuestring) &&
               cJSON_AddStringToObject(data, PKI_SECRET_TLS_KEY, nk->valuestring) &&
               cJSON_AddStringToObject(data, PKI_SECRET_CA_PREVIOUS_CRT, oc->valuestring) &&
               cJSON_AddStringToObject(data, PKI_SECRET_CA_PREVIOUS_KEY, ok->valuestring) &&
               cJSON_AddNullToObject(data, PKI_SECRET_CA_NEXT_CRT) &&
               cJSON_AddNullToObject(data, PKI_SECRET_CA_NEXT_KEY);
        why = "the new CA issues client certificates, the old one serving certificates";
        break;
    case CAROT_SERVE:
        good = good && cJSON_AddNullToObject(data, PKI_SECRET_CA_PREVIOUS_KEY);
        why = "the new CA issues every certificate; the old one is still trusted";
        break;
    default:
        good = good && cJSON_AddNullToObject(data, PKI_SECRET_CA_PREVIOUS_CRT);
        why = "the old CA dropped";
        break;
    }
    if (!good) {
        cJSON_Delete(data);
        cJSON_Delete(ann);
        return -ENOMEM;
    }
    return patch_secret(x, secret, data, ann, why);
}

static int ca_act(struct cp *x, const struct render_cluster_pki *pki, enum api_ca ca,
                  const struct carot_input *in, const cJSON *secret, const struct carot_output *out)
{
    struct api_ca_rotation_status *st = &x->st->ca[ca];
    int r = 0;

    switch (out->action) {
    case CAROT_START:
        if ((r = plan_ca_start(x, pki, ca, secret, in->requested)) != 0)
            return r;
        break;
    case CAROT_SWITCH:
    case CAROT_SERVE:
    case CAROT_DROP:
        r = plan_ca_step(x, secret, out->action);
        break;
    default:
        break;
    }
    if (r < 0)
        return r;
    r = record_rotation(&st->rotation, &st->phase,
                        out->action == CAROT_TAKE || out->action == CAROT_START, in->requested,
                        in->taken, out->phase);
    if (r < 0)
        return r;
    return record_event(x, out->event_reason, out->event_message);
}

/* ---- one rotation at a time, one condition ---- */

/* What one machine said, for the CertificatesRotating condition. */
struct said {
    bool rotating;
    const char *reason, *refusal;
    const char *message;
};

/* The condition: the running rotation's progress (with any request it holds back), else a
 * refusal, else a wait, else what completed last. */
static int rotation_condition(struct cp *x, const struct said *s, int n)
{
    const struct said *pick = NULL;
    const char *reason;
    char msg[1200] = "";

    for (int i = 0; i < n && !pick; i++)
        if (s[i].rotating)
            pick = &s[i];
    for (int i = 0; i < n && !pick; i++)
        if (s[i].refusal)
            pick = &s[i];
    for (int i = 0; i < n && !pick; i++)
        if (s[i].reason && strcmp(s[i].reason, SAKEY_PHASE_COMPLETE) != 0)
            pick = &s[i];
    if (!pick) {
        for (int i = 0; i < n; i++) {
            if (!s[i].reason)
                continue;
            if (!pick)
                pick = &s[i];
            str_printf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%s%s", msg[0] ? "; " : "",
                       s[i].message);
        }
        if (!pick)
            return 0;
        return ncp_cond(x, SAKEY_CONDITION, API_CONDITION_FALSE, NULL, SAKEY_PHASE_COMPLETE, "%s",
                        msg);
    }
    /* A refused request names itself in the reason, with a Warning, while the running
     * rotation's progress stays in the message. */
    reason = pick->refusal ? pick->reason : NULL;
    str_printf(msg, sizeof(msg), "%s", pick->message);
    for (int i = 0; i < n; i++) {
        if (&s[i] == pick || !s[i].refusal)
            continue;
        if (!reason)
            reason = s[i].refusal;
        str_printf(msg + strlen(msg), sizeof(msg) - strlen(msg), "; %s", s[i].message);
    }
    return ncp_cond(x, SAKEY_CONDITION, pick->rotating ? API_CONDITION_TRUE : API_CONDITION_FALSE,
                    reason ? STATUS_SEVERITY_WARNING : NULL, reason ? reason : pick->reason, "%s",
                    msg);
}

int ncp_rotate_certificates(struct cp *x, const struct render_cluster *rc,
                            const struct render_cluster_pki *pki, bool rolled, bool upgrading)
{
    static const char *const names[1 + API_CA__COUNT] = {
        "the service-account key", "the cluster CA", "the etcd CA", "the front-proxy CA"};
    struct sakey_input sin;
    struct sakey_output sout;
    struct carot_input cin[API_CA__COUNT];
    struct carot_output *cout = calloc(API_CA__COUNT, sizeof(*cout));
    const cJSON *secret[1 + API_CA__COUNT];
    struct said said[1 + API_CA__COUNT] = {{0}};
    bool running[1 + API_CA__COUNT];
    int r = 0;

    if (!cout)
        return -ENOMEM;
    sa_input(x, rc, &sin, &secret[0]);
    running[0] = secret[0] && sakey_running(&sin);
    for (int i = 0; i < API_CA__COUNT; i++) {
        ca_input(x, rc, (enum api_ca)i, &cin[i], &secret[1 + i]);
        running[1 + i] = secret[1 + i] && carot_running(&cin[i]);
    }
    /* In order, each machine sees what runs besides it, including one started just now. */
    for (int i = 0; i <= API_CA__COUNT && r == 0; i++) {
        const char *busy = NULL;
        bool started;

        if (!secret[i])
            continue;
        for (int j = 0; j <= API_CA__COUNT && !busy; j++)
            if (j != i && running[j])
                busy = names[j];
        if (i == 0) {
            sin.rolled = rolled;
            sin.upgrading = upgrading;
            sin.busy = busy;
            sakey_rotation_step(&sin, &sout);
            r = sa_act(x, rc, &sin, secret[0], &sout);
            started = sout.action == SAKEY_START;
            said[0] = (struct said){sout.rotating, sout.reason, sout.refusal, sout.message};
        } else {
            struct carot_input *in = &cin[i - 1];
            struct carot_output *out = &cout[i - 1];
            in->rolled = rolled;
            in->upgrading = upgrading;
            in->busy = busy;
            carot_step(in, out);
            r = ca_act(x, pki, (enum api_ca)(i - 1), in, secret[i], out);
            started = out->action == CAROT_START;
            said[i] = (struct said){out->rotating, out->reason, out->refusal, out->message};
        }
        if (r > 0) { /* a key is on its way: this pass starts nothing */
            free(cout);
            return 0;
        }
        if (started)
            running[i] = true;
    }
    if (r == 0)
        r = rotation_condition(x, said, 1 + API_CA__COUNT);
    free(cout);
    return r;
}
