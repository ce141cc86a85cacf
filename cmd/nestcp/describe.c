#include "cmd/nestcp/describe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/lookup.h"
#include "lib/kube/object.h"
#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/key.h"
#include "lib/pki/kubeconfig.h"
#include "lib/util/strutil.h"

/* Bound on a condition message in the status column; the rest is cut with "...". */
#define MESSAGE_MAX 300

static const cJSON *field(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, a);

    return b ? cJSON_GetObjectItemCaseSensitive(v, b) : v;
}

static const char *string_at(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = field(obj, a, b);

    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static const cJSON *condition(const cJSON *obj, const char *type)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, field(obj, "status", "conditions")) {
        const char *t = string_at(c, "type", NULL);
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

/* Appends "<Status> (Reason): message" of a condition, the message on one line. */
static int condition_text(const cJSON *c, struct buf *out)
{
    const char *status = string_at(c, "status", NULL), *reason = string_at(c, "reason", NULL);
    const char *msg = string_at(c, "message", NULL);
    size_t n;

    if (buf_puts(out, status ? status : "Unknown") < 0)
        return -ENOMEM;
    if (status && strcmp(status, "True") == 0)
        return 0;
    if (reason && buf_printf(out, " (%s)", reason) < 0)
        return -ENOMEM;
    if (!msg)
        return 0;
    if (buf_puts(out, ": ") < 0)
        return -ENOMEM;
    n = strlen(msg);
    for (size_t i = 0; i < n && i < MESSAGE_MAX; i++)
        if (buf_append(out, msg[i] == '\n' || msg[i] == '\t' ? " " : &msg[i], 1) < 0)
            return -ENOMEM;
    return n > MESSAGE_MAX ? buf_puts(out, "...") : 0;
}

/* "Ready: <condition>". A Cluster as v1beta2 serves it has no Ready condition: Available is
 * its summary (v1beta1's Ready moved to status.deprecated.v1beta1), shown as "Available: ...". */
static int ready_text(const cJSON *obj, struct buf *out)
{
    const char *kind = string_at(obj, "kind", NULL), *type = "Ready";
    const cJSON *c = condition(obj, type);

    if (!c && kind && strcmp(kind, "Cluster") == 0 && condition(obj, "Available"))
        c = condition(obj, type = "Available");
    if (buf_printf(out, "%s: ", type) < 0)
        return -ENOMEM;
    return c ? condition_text(c, out) : buf_puts(out, "-");
}

static int number_at(const cJSON *obj, const char *a, const char *b, int *ret)
{
    const cJSON *v = field(obj, a, b);

    if (!cJSON_IsNumber(v))
        return -ENOENT;
    *ret = v->valueint;
    return 0;
}

int describe_object_status(const cJSON *obj, struct buf *out)
{
    const char *kind = string_at(obj, "kind", NULL), *version, *phase, *step, *target;
    bool control_plane = kind && strcmp(kind, "NestedControlPlane") == 0;
    int ready, replicas;

    if (ready_text(obj, out) < 0)
        return -ENOMEM;
    version = string_at(obj, "status", "version");
    phase = string_at(obj, "status", "phase");
    if (version && buf_printf(out, ", version %s", version) < 0)
        return -ENOMEM;
    if (phase && buf_printf(out, ", phase %s", phase) < 0)
        return -ENOMEM;
    if (!control_plane && kind && str_has_prefix(kind, "Nested") &&
        strcmp(kind, "NestedCluster") != 0 &&
        number_at(obj, "status", "readyReplicas", &ready) == 0 &&
        number_at(obj, "status", "replicas", &replicas) == 0 &&
        buf_printf(out, ", %d/%d ready", ready, replicas) < 0)
        return -ENOMEM;
    if (!control_plane)
        return 0;
    step = string_at(field(obj, "status", "rollout"), "step", NULL);
    target = string_at(field(obj, "status", "rollout"), "targetVersion", NULL);
    if (step && buf_printf(out, ", rolling out %s: waiting on %s", target ? target : "", step) < 0)
        return -ENOMEM;
    if (!step && target && buf_printf(out, ", target %s", target) < 0)
        return -ENOMEM;
    return 0;
}

int describe_statefulset_status(const cJSON *sts, struct buf *out)
{
    int want = 0, ready = 0, updated = 0;
    const char *current = string_at(sts, "status", "currentRevision");
    const char *update = string_at(sts, "status", "updateRevision");

    number_at(sts, "spec", "replicas", &want);
    number_at(sts, "status", "readyReplicas", &ready);
    number_at(sts, "status", "updatedReplicas", &updated);
    if (buf_printf(out, "%d/%d ready, %d updated", ready, want, updated) < 0)
        return -ENOMEM;
    if (current && update && strcmp(current, update) != 0 &&
        buf_printf(out, ", rolling out %s -> %s", current, update) < 0)
        return -ENOMEM;
    return 0;
}

int describe_pod_status(const cJSON *pod, struct buf *out)
{
    const char *phase = string_at(pod, "status", "phase");

    if (ready_text(pod, out) < 0)
        return -ENOMEM;
    return phase ? buf_printf(out, ", %s", phase) : 0;
}

int describe_expiry_status(const struct describe_expiry *x, int64_t now, struct buf *out)
{
    char when[64];
    struct tm tm;
    time_t t = (time_t)x->not_after;
    int64_t left = x->not_after - now;
    int64_t n = (left < 0 ? -left : left);
    const char *unit = "days";

    if (x->code < 0)
        return buf_printf(out, "certificates: %s", x->msg);
    if (!gmtime_r(&t, &tm) || strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm) == 0)
        snprintf(when, sizeof(when), "@%lld", (long long)x->not_after);
    if (n >= 2 * 86400) {
        n /= 86400;
    } else {
        n /= 3600;
        unit = "hours";
    }
    if (left < 0)
        return buf_printf(out, "certificates EXPIRED %s (%lld %s ago, %s)", when, (long long)n,
                          unit, x->key);
    return buf_printf(out, "certificates expire %s (in %lld %s, %s)", when, (long long)n, unit,
                      x->key);
}

/* Decodes one base64 data value (bounded by max) into a NUL-terminated buffer. */
static int decode(const cJSON *v, size_t max, unsigned char **ret, size_t *ret_len)
{
    if (!cJSON_IsString(v))
        return -EINVAL;
    return pki_base64_decode(v->valuestring, strlen(v->valuestring), max, ret, ret_len);
}

void describe_secret_expiry(const cJSON *secret, struct describe_expiry *x)
{
    const cJSON *v;
    bool found = false;

    x->code = 0;
    x->msg[0] = '\0';
    cJSON_ArrayForEach(v, field(secret, "data", NULL)) {
        const char *key = v->string;
        unsigned char *data = NULL;
        size_t len = 0;
        struct pki_kubeconfig_creds *creds = NULL;
        struct err e = {0};
        int64_t not_after;
        int r;

        if (str_has_suffix(key, ".crt")) {
            r = decode(v, PKI_PEM_MAX, &data, &len);
            if (r == 0)
                r = pki_cert_not_after((const char *)data, key, &not_after, &e);
        } else if (str_has_suffix(key, ".conf") || strcmp(key, "value") == 0) {
            r = decode(v, PKI_KUBECONFIG_MAX, &data, &len);
            if (r == 0)
                r = pki_kubeconfig_read((const char *)data, len, key, &creds, &e);
            if (r == 0)
                r = creds->client_cert_pem
                        ? pki_cert_not_after(creds->client_cert_pem, key, &not_after, &e)
                        : -ENOENT;
            pki_kubeconfig_creds_free(creds);
            if (data)
                explicit_bzero(data, len);
        } else {
            continue; /* private keys and anything else are never read */
        }
        free(data);
        if (r < 0) {
            x->code = r;
            snprintf(x->msg, sizeof(x->msg), "%.100s: %.150s", key,
                     e.msg[0] ? e.msg : "not a certificate");
            return;
        }
        if (!found || not_after < x->not_after) {
            x->not_after = not_after;
            snprintf(x->key, sizeof(x->key), "%s", key);
        }
        found = true;
    }
    if (!found) {
        x->code = -ENOENT;
        snprintf(x->msg, sizeof(x->msg), "no certificate in the Secret");
    }
}

/* ---- the tree ---- */

struct builder {
    const struct describe_input *in;
    struct tree *t;
    struct buf line;
};

static int add(struct builder *b, int parent, const char *name)
{
    int r = tree_add(b->t, parent, name, b->line.data ? b->line.data : "");

    buf_reset(&b->line);
    return r;
}

static int add_name(struct builder *b, int parent, const char *kind, const char *ns,
                    const char *name)
{
    char text[600];

    if (ns)
        snprintf(text, sizeof(text), "%s %s/%s", kind, ns, name ? name : "?");
    else
        snprintf(text, sizeof(text), "%s %s", kind, name ? name : "?");
    return add(b, parent, text);
}

static int add_conditions(struct builder *b, int parent, const cJSON *obj)
{
    const cJSON *c;

    if (!b->in->show_conditions)
        return 0;
    cJSON_ArrayForEach(c, field(obj, "status", "conditions")) {
        const char *type = string_at(c, "type", NULL);
        int r;
        if (!type)
            continue;
        if (condition_text(c, &b->line) < 0)
            return -ENOMEM;
        r = add_name(b, parent, "Condition", NULL, type);
        if (r < 0)
            return r;
    }
    return 0;
}

static int add_expiry(struct builder *b, int parent, const struct describe_expiry *x,
                      const char *what)
{
    if (!x->secret)
        return 0;
    if (buf_printf(&b->line, "%s", what) < 0 || describe_expiry_status(x, b->in->now, &b->line) < 0)
        return -ENOMEM;
    return add_name(b, parent, "Secret", NULL, x->secret);
}

static int add_component(struct builder *b, int parent, enum render_part part)
{
    const struct describe_component *c = &b->in->comps[part];
    const char *kind = api_kind_info(render_part_kind(part))->name, *target;
    const cJSON *p;
    int node, sts, r;

    if (!c->obj) {
        if (buf_printf(&b->line, "not found%s",
                       c->ref_name ? "" : " (the control plane names none)") < 0)
            return -ENOMEM;
        return add_name(b, parent, kind, NULL, c->ref_name ? c->ref_name : "-");
    }
    if (describe_object_status(c->obj, &b->line) < 0)
        return -ENOMEM;
    target = string_at(
        field(field(b->in->ncp, "status", "rollout"), "components", render_part_field(part)),
        "version", NULL);
    if (target && buf_printf(&b->line, ", target %s", target) < 0)
        return -ENOMEM;
    node = add_name(b, parent, kind, NULL, kube_obj_name(c->obj));
    if (node < 0 || (r = add_conditions(b, node, c->obj)) < 0)
        return node < 0 ? node : r;
    if (!c->statefulset) {
        if (buf_puts(&b->line, "not created yet") < 0)
            return -ENOMEM;
        return add_name(b, node, "StatefulSet", NULL, "-");
    }
    if (describe_statefulset_status(c->statefulset, &b->line) < 0)
        return -ENOMEM;
    sts = add_name(b, node, "StatefulSet", NULL, kube_obj_name(c->statefulset));
    if (sts < 0)
        return sts;
    cJSON_ArrayForEach(p, c->pods) {
        if (describe_pod_status(p, &b->line) < 0)
            return -ENOMEM;
        if ((r = add_name(b, sts, "Pod", NULL, kube_obj_name(p))) < 0)
            return r;
    }
    r = add_expiry(b, node, &c->certs, "");
    return r < 0 ? r : 0;
}

int describe_build(const struct describe_input *in, struct tree *t)
{
    struct builder b = {.in = in, .t = t, .line = BUF_INIT};
    int root = -1, ncp, r = -ENOMEM;

    if (in->cluster) {
        if (describe_object_status(in->cluster, &b.line) < 0)
            goto out;
        root = add_name(&b, -1, "Cluster", in->ns, kube_obj_name(in->cluster));
        if ((r = root) < 0)
            goto out;
    }
    if (in->nested_cluster && in->cluster) {
        if (describe_object_status(in->nested_cluster, &b.line) < 0)
            goto out;
        if ((r = add_name(&b, root, "NestedCluster", NULL, kube_obj_name(in->nested_cluster))) < 0)
            goto out;
    }
    r = -ENOMEM;
    if (describe_object_status(in->ncp, &b.line) < 0)
        goto out;
    ncp =
        add_name(&b, root, "NestedControlPlane", root < 0 ? in->ns : NULL, kube_obj_name(in->ncp));
    if ((r = ncp) < 0 || (r = add_conditions(&b, ncp, in->ncp)) < 0)
        goto out;
    if (in->nested_cluster && !in->cluster) {
        r = -ENOMEM;
        if (describe_object_status(in->nested_cluster, &b.line) < 0)
            goto out;
        if ((r = add_name(&b, ncp, "NestedCluster", NULL, kube_obj_name(in->nested_cluster))) < 0)
            goto out;
    }
    for (int part = 0; part < RENDER_PART__COUNT; part++)
        if ((r = add_component(&b, ncp, (enum render_part)part)) < 0)
            goto out;
    r = add_expiry(&b, ncp, &in->kubeconfig, "admin kubeconfig: ");
    if (r >= 0)
        r = 0;
out:
    buf_done(&b.line);
    return r;
}
