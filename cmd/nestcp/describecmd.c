/* `nestcp describe NAME`: a tenant control plane as a tree (cmd/nestcp/describe.h), read from
 * the management cluster the way the controllers find its objects (controllers/lookup.h). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/nestcp/cmd.h"
#include "cmd/nestcp/describe.h"
#include "cmd/nestcp/flags.h"
#include "cmd/nestcp/mgmt.h"
#include "controllers/caches.h"
#include "controllers/lookup.h"
#include "lib/kube/client.h"
#include "lib/pki/secret.h"

const char cmd_describe_help[] =
    "Prints a tenant control plane as a tree, like clusterctl describe cluster: the Cluster\n"
    "API Cluster and NestedCluster when there are any, the NestedControlPlane, its\n"
    "NestedEtcd, NestedAPIServer and NestedControllerManager, the StatefulSet and Pods of\n"
    "each, and the certificates Secret each mounts. Every line shows the object's Ready\n"
    "condition (with reason and message when it is not True), versions, replicas, the\n"
    "rollout target, and for Secrets when their first certificate expires (only NotAfter\n"
    "dates are read from them).\n"
    "\n"
    "NAME is a NestedControlPlane, or a Cluster API Cluster or a cluster name whose control\n"
    "plane is a NestedControlPlane.\n"
    "\n"
    "Exit status: 0 success, 1 no such control plane or the management cluster cannot be\n"
    "read, 2 bad usage.";

struct describe_settings {
    const char *kubeconfig, *namespace_;
    bool show_conditions;
};

static int describe_flags(struct describe_settings *s, struct flag *out, int cap)
{
    const struct flag flags[] = {
        {"namespace", 'n', FLAG_STRING, &s->namespace_, "NS",
         "the control plane's namespace; unset: the kubeconfig context's namespace"},
        {"show-conditions", 0, FLAG_BOOL, &s->show_conditions, NULL,
         "list every condition of the control plane and its components"},
        {"kubeconfig", 0, FLAG_STRING, &s->kubeconfig, "FILE",
         "kubeconfig of the management cluster; unset: $KUBECONFIG, ~/.kube/config, then the "
         "in-cluster service account"},
    };

    return flags_copy(flags, (int)(sizeof(flags) / sizeof(flags[0])), out, cap);
}

int cmd_describe_flags(struct flag *out, int cap)
{
    static struct describe_settings defaults = {"", "", false};

    return describe_flags(&defaults, out, cap);
}

static const struct kube_resource *const part_resources[RENDER_PART__COUNT] = {
    &NESTCP_ETCDS, &NESTCP_APISERVERS, &NESTCP_CONTROLLER_MANAGERS};

struct fetch {
    struct mgmt *m;
    const char *ns;
    cJSON *owned; /* every object read, freed at the end */
    struct err e;
};

/* Keeps obj until the end of the command; returns it. */
static cJSON *keep(struct fetch *f, cJSON *obj)
{
    if (obj)
        cJSON_AddItemToArray(f->owned, obj);
    return obj;
}

/* GET; NULL when it does not exist. Other errors are returned through *ret_code. */
static cJSON *get(struct fetch *f, const struct kube_resource *res, const char *name, int *code)
{
    cJSON *obj = NULL;
    int r = mgmt_get(f->m, res, f->ns, name, &obj, &f->e);

    if (r < 0 && r != -ENOENT && *code == 0) {
        *code = r;
        err_prefix(&f->e, "%s %s/%s: ", res->kind, f->ns, name);
    }
    return r == 0 ? keep(f, obj) : NULL;
}

static cJSON *list_items(struct fetch *f, const struct kube_resource *res, const char *selector,
                         int *code)
{
    cJSON *list = NULL;
    int r = mgmt_list(f->m, res, f->ns, selector, &list, &f->e);

    if (r < 0) {
        if (*code == 0) {
            *code = r;
            err_prefix(&f->e, "list %s in %s: ", res->resource, f->ns);
        }
        return NULL;
    }
    keep(f, list);
    return cJSON_GetObjectItemCaseSensitive(list, "items");
}

static const char *ref_name(const cJSON *obj, const char *field_name, const char *kind)
{
    const cJSON *ref =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "spec"), field_name);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(ref, "kind");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(ref, "name");

    if (kind && (!cJSON_IsString(k) || strcmp(k->valuestring, kind) != 0))
        return NULL;
    return cJSON_IsString(n) && n->valuestring[0] ? n->valuestring : NULL;
}

static const char *cluster_name_of(const cJSON *ncp, const cJSON *cluster)
{
    return mgmt_cluster_name(ncp, cluster);
}

/* The object of items that obj_uid controls (controller ownerReference), first one. */
static cJSON *controlled(const cJSON *items, const char *uid)
{
    cJSON *o;

    cJSON_ArrayForEach(o, items)
        if (uid && lookup_controlled_by_uid(o, uid))
            return o;
    return NULL;
}

/* Finds the control plane NAME stands for: a NestedControlPlane of that name; else the
 * control plane a Cluster of that name refers to; else the one whose cluster name it is. */
static int find_control_plane(struct fetch *f, const char *name, struct describe_input *in)
{
    int code = 0;
    const cJSON *items, *o;

    in->ncp = get(f, &NESTCP_CONTROL_PLANES, name, &code);
    if (code < 0)
        return code;
    if (!in->ncp) {
        in->cluster = get(f, &CAPI_CLUSTERS, name, &code);
        /* A management cluster without Cluster API's CRD answers 404 as well. */
        if (in->cluster) {
            const char *cp = ref_name(in->cluster, "controlPlaneRef", "NestedControlPlane");
            if (!cp)
                return err_set(&f->e, -ENOENT,
                               "Cluster %s/%s: spec.controlPlaneRef does not name a "
                               "NestedControlPlane",
                               f->ns, name);
            in->ncp = get(f, &NESTCP_CONTROL_PLANES, cp, &code);
            if (!in->ncp)
                return code < 0 ? code
                                : err_set(&f->e, -ENOENT,
                                          "Cluster %s/%s: its control plane, NestedControlPlane "
                                          "%s/%s, does not exist",
                                          f->ns, name, f->ns, cp);
        }
    }
    if (!in->ncp) {
        items = list_items(f, &NESTCP_CONTROL_PLANES, NULL, &code);
        if (code < 0)
            return code;
        cJSON_ArrayForEach(o, items) {
            if (strcmp(cluster_name_of(o, NULL), name) == 0) {
                in->ncp = (cJSON *)o;
                break;
            }
        }
    }
    if (!in->ncp)
        return err_set(&f->e, -ENOENT,
                       "no NestedControlPlane, Cluster or cluster name %s in namespace %s", name,
                       f->ns);
    /* The control plane's Cluster, when it was found by its own name. */
    if (!in->cluster) {
        cJSON *cluster = NULL;
        code = mgmt_cluster_of(f->m, in->ncp, &cluster, &f->e);
        if (code < 0)
            return err_prefix(&f->e, "the Cluster of NestedControlPlane %s/%s: ", f->ns,
                              kube_obj_name(in->ncp));
        in->cluster = keep(f, cluster);
    }
    return 0;
}

static void read_expiry(struct fetch *f, const char *secret_name, struct describe_expiry *x)
{
    int code = 0;
    cJSON *secret;

    x->secret = secret_name;
    secret = get(f, &KUBE_SECRETS, secret_name, &code);
    if (!secret) {
        x->code = code < 0 ? code : -ENOENT;
        snprintf(x->msg, sizeof(x->msg), "%.250s",
                 code < 0 ? f->e.msg : "the Secret does not exist");
        err_clear(&f->e);
        return;
    }
    describe_secret_expiry(secret, x);
    /* Only NotAfter dates are kept; the Secret's data goes now. */
    cJSON_DeleteItemFromObjectCaseSensitive(secret, "data");
}

static int fetch_all(struct fetch *f, const char *name, struct describe_input *in,
                     char *kubeconfig_secret, size_t size)
{
    const cJSON *statefulsets, *pods;
    const char *nc_name;
    int code = find_control_plane(f, name, in);

    if (code < 0)
        return code;
    in->cluster_name = cluster_name_of(in->ncp, in->cluster);
    nc_name = in->cluster ? ref_name(in->cluster, "infrastructureRef", "NestedCluster")
                          : in->cluster_name;
    if (nc_name)
        in->nested_cluster = get(f, &NESTCP_NESTED_CLUSTERS, nc_name, &code);
    statefulsets = list_items(f, &KUBE_STATEFULSETS, NULL, &code);
    pods = list_items(f, &KUBE_PODS, NULL, &code);
    if (code < 0)
        return code;
    for (int part = 0; part < RENDER_PART__COUNT; part++) {
        struct describe_component *c = &in->comps[part];
        const cJSON *p;

        c->ref_name = ref_name(in->ncp, render_part_field((enum render_part)part), NULL);
        if (c->ref_name) {
            c->obj = get(f, part_resources[part], c->ref_name, &code);
        } else {
            /* Standalone (lib/render/cluster.h): the component this control plane controls,
             * else the one labelled with its cluster name. */
            const cJSON *items = list_items(f, part_resources[part], NULL, &code), *o;

            c->obj = controlled(items, kube_obj_uid(in->ncp));
            cJSON_ArrayForEach(o, items) {
                const char *label = kube_obj_label(o, PKI_CLUSTER_NAME_LABEL);
                if (!c->obj && label && strcmp(label, in->cluster_name) == 0)
                    c->obj = (cJSON *)o;
            }
        }
        if (code < 0)
            return code;
        if (!c->obj)
            continue;
        c->statefulset = controlled(statefulsets, kube_obj_uid(c->obj));
        if (!c->statefulset)
            continue;
        c->pods = keep(f, cJSON_CreateArray());
        if (!c->pods)
            return err_set(&f->e, -ENOMEM, "out of memory");
        cJSON_ArrayForEach(p, pods) {
            if (lookup_controlled_by_uid(p, kube_obj_uid(c->statefulset))) {
                cJSON *dup = cJSON_Duplicate(p, 1);
                if (!dup)
                    return err_set(&f->e, -ENOMEM, "out of memory");
                cJSON_AddItemToArray(c->pods, dup);
            }
        }
        if (render_cluster_certs_mounted(c->statefulset))
            read_expiry(f, render_cluster_certs_mounted(c->statefulset), &c->certs);
    }
    if (pki_secret_name(in->cluster_name, PKI_PURPOSE_KUBECONFIG, kubeconfig_secret, size) == 0)
        read_expiry(f, kubeconfig_secret, &in->kubeconfig);
    return 0;
}

int cmd_describe(int argc, char **argv)
{
    struct describe_settings s = {"", "", false};
    struct flag flags[FLAGS_MAX];
    struct describe_input in = {0};
    struct fetch f = {0};
    struct mgmt m = {0};
    struct tree *t = NULL;
    struct buf out = BUF_INIT;
    char kubeconfig_secret[RENDER_CLUSTER_NAME_MAX + 16];
    char **rest = NULL;
    int nflags, nrest = 0, status = 1, r;

    nflags = describe_flags(&s, flags, FLAGS_MAX);
    if (nflags < 0)
        return 1;
    r = flags_parse("describe", "NAME", cmd_describe_help, flags, nflags, argc, argv, &rest,
                    &nrest);
    if (r != 0)
        return r > 0 ? 0 : 2;
    if (nrest != 1 || !rest[0][0]) {
        fprintf(stderr, "nestcp describe: %s (usage: nestcp describe NAME [-n NS])\n",
                nrest == 0 || !rest[0][0] ? "which control plane? NAME is missing"
                                          : "one NAME only");
        free(rest);
        return 2;
    }
    if (mgmt_open(&m, s.kubeconfig, s.namespace_, &f.e) < 0) {
        fprintf(stderr, "nestcp describe: management cluster: %s\n", f.e.msg);
        goto out;
    }
    f.m = &m;
    f.ns = m.namespace_;
    f.owned = cJSON_CreateArray();
    t = tree_new();
    if (!f.owned || !t) {
        fprintf(stderr, "nestcp describe: out of memory\n");
        goto out;
    }
    in.ns = f.ns;
    in.show_conditions = s.show_conditions;
    in.now = (int64_t)time(NULL);
    if (fetch_all(&f, rest[0], &in, kubeconfig_secret, sizeof(kubeconfig_secret)) < 0) {
        fprintf(stderr, "nestcp describe: %s\n", f.e.msg);
        goto out;
    }
    if (describe_build(&in, t) < 0 || tree_render(t, &out) < 0) {
        fprintf(stderr, "nestcp describe: out of memory\n");
        goto out;
    }
    if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
        fprintf(stderr, "nestcp describe: cannot write to stdout\n");
        goto out;
    }
    status = 0;
out:
    buf_done(&out);
    tree_free(t);
    cJSON_Delete(f.owned);
    mgmt_close(&m);
    free(rest);
    return status;
}
