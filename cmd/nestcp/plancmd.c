/* `nestcp plan`: which components of which control planes would roll if the manager ran with
 * this nestcp's packages, and why, read from the management cluster. It only reads: no
 * request but GET and LIST is sent, no key is generated, and no Secret data is printed. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/nestcp/cmd.h"
#include "cmd/nestcp/flags.h"
#include "cmd/nestcp/mgmt.h"
#include "cmd/nestcp/rolldiff.h"
#include "controllers/caches.h"
#include "lib/kube/client.h"
#include "lib/render/catalog.h"
#include "lib/render/cluster.h"
#include "lib/util/buf.h"

/* Where a package installs the templates the manager reads. */
#define PLAN_DEFAULT_TEMPLATES "/usr/share/nestcp/templates"

const char cmd_plan_help[] =
    "Lists, for every tenant control plane of a namespace (or of all with -A), which\n"
    "components would roll if the manager ran with this nestcp's packages (--templates), and\n"
    "why: a version (a container's image), a flag (its value before and after), the\n"
    "certificates (a new certs Secret, and why the one mounted is no longer good) or another\n"
    "field of the pod template. Run it with a new nestcp before upgrading the manager.\n"
    "\n"
    "It reads the control planes, their components, Cluster API Clusters, NestedClusters,\n"
    "the clusters' Secrets and the StatefulSets nestcp manages, and renders each component as\n"
    "the manager would; it writes nothing and generates no key. A component that does not run\n"
    "yet would be created, which is not a roll. The manager's --cert-renew-before and\n"
    "--cert-validity are not known here: each control plane's spec.certificates decide.\n"
    "\n"
    "Exit status: 0 success (whether or not anything would roll), 1 the management cluster\n"
    "cannot be read or a control plane cannot be rendered, 2 bad usage.";

struct plan_settings {
    const char *kubeconfig, *namespace_, *templates, *output;
    bool all_namespaces, allow_privileged;
};

static void plan_defaults(struct plan_settings *s)
{
    *s = (struct plan_settings){"", "", PLAN_DEFAULT_TEMPLATES, "text", false, false};
}

static int plan_flags(struct plan_settings *s, struct flag *out, int cap)
{
    const struct flag flags[] = {
        {"namespace", 'n', FLAG_STRING, &s->namespace_, "NS",
         "the control planes' namespace; unset: the kubeconfig context's namespace"},
        {"all-namespaces", 'A', FLAG_BOOL, &s->all_namespaces, NULL, "every namespace"},
        {"templates", 0, FLAG_STRING, &s->templates, "DIR",
         "the package catalog of this nestcp, as the manager would read it"},
        {"output", 'o', FLAG_STRING, &s->output, "FORMAT", "text or json"},
        {"allow-privileged-patches", 0, FLAG_BOOL, &s->allow_privileged, NULL,
         "as the manager's flag of that name (docs/security.md)"},
        {"kubeconfig", 0, FLAG_STRING, &s->kubeconfig, "FILE",
         "kubeconfig of the management cluster; unset: $KUBECONFIG, ~/.kube/config, then the "
         "in-cluster service account"},
    };

    return flags_copy(flags, (int)(sizeof(flags) / sizeof(flags[0])), out, cap);
}

int cmd_plan_flags(struct flag *out, int cap)
{
    static struct plan_settings defaults;

    plan_defaults(&defaults);
    return plan_flags(&defaults, out, cap);
}

/* Lists res in ns (NULL: every namespace) into objs, each item with its apiVersion and kind
 * (a List's items have neither). A resource the server does not know (Cluster API's Cluster
 * without its CRD) is no error. */
static int read_all(struct mgmt *m, const struct kube_resource *res, const char *ns,
                    const char *selector, cJSON *objs, struct err *e)
{
    char av[128];
    cJSON *list = NULL, *items, *o;
    int r = mgmt_resource(m, res, ns, &res, e);

    if (r == 0)
        r = mgmt_list(m, res, ns, selector, &list, e);
    if (r == -ENOENT && strcmp(res->resource, CAPI_CLUSTERS.resource) == 0 &&
        strcmp(res->group, CAPI_CLUSTERS.group) == 0) {
        err_clear(e);
        return 0;
    }
    if (r < 0)
        return err_prefix(e, "list %s: ", res->resource);
    snprintf(av, sizeof(av), "%s%s%s", res->group, res->group[0] ? "/" : "", res->version);
    items = cJSON_GetObjectItemCaseSensitive(list, "items");
    while (items && (o = items->child)) {
        cJSON_DetachItemViaPointer(items, o);
        cJSON_DeleteItemFromObjectCaseSensitive(o, "apiVersion");
        cJSON_DeleteItemFromObjectCaseSensitive(o, "kind");
        if (!cJSON_AddStringToObject(o, "apiVersion", av) ||
            !cJSON_AddStringToObject(o, "kind", res->kind) || !cJSON_AddItemToArray(objs, o)) {
            cJSON_Delete(o);
            cJSON_Delete(list);
            return err_set(e, -ENOMEM, "out of memory");
        }
    }
    cJSON_Delete(list);
    return 0;
}

static const char *str_of(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The first StatefulSet of rendered objects. */
static const cJSON *rendered_statefulset(const cJSON *objs)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, objs) {
        const char *k = str_of(o, "kind", NULL);
        if (k && strcmp(k, "StatefulSet") == 0)
            return o;
    }
    return NULL;
}

static int add_change(cJSON *changes, const struct rolldiff_change *c)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddItemToArray(changes, o) ||
        !cJSON_AddStringToObject(o, "kind", rolldiff_kind_name(c->kind)) ||
        (c->container[0] && !cJSON_AddStringToObject(o, "container", c->container)) ||
        !cJSON_AddStringToObject(o, "name", c->what) ||
        !cJSON_AddStringToObject(o, "from", c->from) || !cJSON_AddStringToObject(o, "to", c->to))
        return -ENOMEM;
    return 0;
}

/* One component: comp gets statefulSet, roll, create, the config hashes and the changes. */
static int plan_component(const struct render_catalog *cat, const struct render_cluster *rc,
                          const struct render_cluster_pki *pki, const struct render_source *src,
                          const char *ns, enum render_part part, cJSON *comp, bool *ret_roll)
{
    char sts_name[RENDER_CLUSTER_NAME_MAX], certs[RENDER_CLUSTER_NAME_MAX],
        hash[RENDER_CLUSTER_HASH_MAX], renew_why[ERR_MSG_MAX];
    const cJSON *live;
    const char *mounted;
    struct rolldiff *d = NULL;
    cJSON *objs = NULL, *changes;
    struct err e;
    int r;

    snprintf(sts_name, sizeof(sts_name), "%s-%s", render_cluster_name(rc), render_part_short(part));
    if (!cJSON_AddStringToObject(comp, "component", render_part_component(part)) ||
        !cJSON_AddStringToObject(comp, "statefulSet", sts_name))
        return -ENOMEM;
    live = src->get_statefulset ? src->get_statefulset(src->ctx, ns, sts_name) : NULL;
    if (!live)
        return cJSON_AddFalseToObject(comp, "roll") && cJSON_AddTrueToObject(comp, "create")
                   ? 0
                   : -ENOMEM;
    mounted = render_cluster_certs_mounted(live);
    renew_why[0] = '\0';
    err_clear(&e);
    r = render_cluster_certs_find(rc, pki, src, part, mounted, certs, NULL, &e);
    if (r == -ENOENT) {
        /* The component's controller would issue a new certs Secret: its name is not known
         * before its keys are made, and any name differs from the one mounted. */
        snprintf(renew_why, sizeof(renew_why), "%s", e.msg);
        snprintf(certs, sizeof(certs), "%s-%s-certs-(new)", render_cluster_name(rc),
                 render_part_short(part));
    } else if (r < 0) {
        goto fail;
    }
    err_clear(&e);
    if ((r = render_cluster_component(cat, rc, part, certs, &objs, hash, &e)) < 0)
        goto fail;
    if (!(d = calloc(1, sizeof(*d)))) {
        r = -ENOMEM;
        goto out;
    }
    if ((r = rolldiff_statefulset(rendered_statefulset(objs), live, d)) < 0) {
        err_set(&e, r, "the packages render no StatefulSet");
        goto fail;
    }
    r = -ENOMEM;
    if (!cJSON_AddBoolToObject(comp, "roll", d->roll) ||
        !cJSON_AddStringToObject(comp, "runningConfigHash", d->running_hash) ||
        !cJSON_AddStringToObject(comp, "renderedConfigHash", d->rendered_hash) ||
        !(changes = cJSON_AddArrayToObject(comp, "changes")))
        goto out;
    for (size_t i = 0; i < d->n; i++) {
        struct rolldiff_change *c = &d->changes[i];
        if (c->kind == ROLLDIFF_CERTIFICATES && renew_why[0])
            snprintf(c->to, sizeof(c->to), "a new certs Secret (%.200s)", renew_why);
        if (add_change(changes, c) < 0)
            goto out;
    }
    if (d->more && !cJSON_AddNumberToObject(comp, "moreChanges", (double)d->more))
        goto out;
    *ret_roll = *ret_roll || d->roll;
    r = 0;
    goto out;
fail:
    if (r != -ENOMEM)
        r = cJSON_AddStringToObject(comp, "error", e.msg[0] ? e.msg : err_code_name(r)) ? -EINVAL
                                                                                        : -ENOMEM;
out:
    free(d);
    cJSON_Delete(objs);
    return r;
}

/* One control plane into out: namespace, name, cluster, roll, and components or a message
 * saying why nothing is compared. Returns 0, -EINVAL (it cannot be rendered: out says why),
 * -ENOMEM. */
static int plan_control_plane(const struct render_catalog *cat, const struct render_source *src,
                              const cJSON *ncp, bool allow_privileged, cJSON *out)
{
    const char *ns = str_of(ncp, "metadata", "namespace"), *name = str_of(ncp, "metadata", "name");
    struct api_errors errs = API_ERRORS_INIT;
    struct render_cluster *rc = NULL;
    struct render_cluster_pki *pki = NULL;
    const char *message = NULL;
    cJSON *comps;
    struct err e;
    bool roll = false, bad = false;
    int r;

    err_clear(&e);
    if (!cJSON_AddStringToObject(out, "namespace", ns ? ns : "default") ||
        !cJSON_AddStringToObject(out, "name", name ? name : ""))
        return -ENOMEM;
    if (str_of(ncp, "metadata", "deletionTimestamp")) {
        message = "being deleted";
        goto done;
    }
    r = render_cluster_resolve(cat, src, ns, name, &rc, &errs);
    if (r == -ENOMEM)
        goto oom;
    if (r < 0) {
        api_errors_to_err(&errs, NULL, &e);
        message = e.msg;
        bad = r == -EINVAL;
        goto done;
    }
    if (!cJSON_AddStringToObject(out, "cluster", render_cluster_name(rc)))
        goto oom;
    for (int i = 0; i < RENDER_PART__COUNT && !message; i++)
        if (render_cluster_missing(rc, (enum render_part)i)) {
            snprintf(e.msg, sizeof(e.msg), "not created yet: %s",
                     render_cluster_missing(rc, (enum render_part)i));
            message = e.msg;
        }
    if (message)
        goto done;
    render_cluster_set_allow_privileged(rc, allow_privileged);
    r = render_cluster_pki_load(rc, src, 0, false, &pki, &errs);
    if (r == -ENOMEM)
        goto oom;
    if (r == -ENOENT) {
        message = "not created yet: its CA Secrets do not exist";
        goto done;
    }
    if (r < 0) {
        api_errors_to_err(&errs, NULL, &e);
        message = e.msg;
        bad = true;
        goto done;
    }
    if (!(comps = cJSON_AddArrayToObject(out, "components")))
        goto oom;
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        cJSON *comp = cJSON_CreateObject();
        if (!comp || !cJSON_AddItemToArray(comps, comp)) {
            cJSON_Delete(comp);
            goto oom;
        }
        r = plan_component(cat, rc, pki, src, ns, (enum render_part)i, comp, &roll);
        if (r == -ENOMEM)
            goto oom;
        bad = bad || r < 0;
    }
done:
    r = 0;
    if (!cJSON_AddBoolToObject(out, "roll", roll) ||
        (message && !cJSON_AddStringToObject(out, "message", message)))
        r = -ENOMEM;
    else if (bad)
        r = -EINVAL;
    goto out;
oom:
    r = -ENOMEM;
out:
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    api_errors_done(&errs);
    return r;
}

/* ---- text ---- */

static int print_text(const cJSON *result, struct buf *b)
{
    const cJSON *cp, *comp, *ch;
    int n = 0, rolling = 0;

    cJSON_ArrayForEach(cp, cJSON_GetObjectItemCaseSensitive(result, "controlPlanes")) {
        const char *msg = str_of(cp, "message", NULL), *cluster = str_of(cp, "cluster", NULL);
        struct buf which = BUF_INIT;
        int r;

        n++;
        cJSON_ArrayForEach(comp, cJSON_GetObjectItemCaseSensitive(cp, "components"))
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(comp, "roll")) &&
                buf_printf(&which, "%s%s", which.len ? ", " : "", str_of(comp, "component", NULL)) <
                    0)
                return -ENOMEM;
        rolling += which.len > 0;
        r = buf_printf(b, "NestedControlPlane %s/%s", str_of(cp, "namespace", NULL),
                       str_of(cp, "name", NULL));
        if (r >= 0 && cluster && strcmp(cluster, str_of(cp, "name", NULL)) != 0)
            r = buf_printf(b, " (cluster %s)", cluster);
        if (r >= 0)
            r = buf_printf(b, ": %s%s\n",
                           msg         ? msg
                           : which.len ? "would roll "
                                       : "nothing would roll",
                           msg         ? ""
                           : which.len ? which.data
                                       : "");
        buf_done(&which);
        if (r < 0)
            return -ENOMEM;
        cJSON_ArrayForEach(comp, cJSON_GetObjectItemCaseSensitive(cp, "components")) {
            const char *err = str_of(comp, "error", NULL);
            const cJSON *more = cJSON_GetObjectItemCaseSensitive(comp, "moreChanges");
            const char *state = err ? "cannot be rendered: "
                                : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(comp, "create"))
                                    ? "would be created (not a roll)"
                                : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(comp, "roll"))
                                    ? "would roll"
                                    : "unchanged";
            if (buf_printf(b, "  %-24s %s%s", str_of(comp, "component", NULL), state,
                           err ? err : "") < 0)
                return -ENOMEM;
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(comp, "roll")) &&
                buf_printf(b, " (StatefulSet %s, config %.12s -> %.12s)",
                           str_of(comp, "statefulSet", NULL),
                           str_of(comp, "runningConfigHash", NULL),
                           str_of(comp, "renderedConfigHash", NULL)) < 0)
                return -ENOMEM;
            if (buf_puts(b, "\n") < 0)
                return -ENOMEM;
            cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(comp, "changes")) {
                const char *kind = str_of(ch, "kind", NULL);
                const char *label = strcmp(kind, "flag") == 0           ? "flag"
                                    : strcmp(kind, "version") == 0      ? "version of"
                                    : strcmp(kind, "certificates") == 0 ? "certificates:"
                                                                        : "field";
                if (buf_printf(b, "    %s %s: %s -> %s\n", label,
                               strcmp(kind, "certificates") == 0 ? "Secret"
                                                                 : str_of(ch, "name", NULL),
                               str_of(ch, "from", NULL), str_of(ch, "to", NULL)) < 0)
                    return -ENOMEM;
            }
            if (cJSON_IsNumber(more) && buf_printf(b, "    and %d more\n", more->valueint) < 0)
                return -ENOMEM;
        }
    }
    return buf_printf(b, "%d control plane%s; %d would roll.\n", n, n == 1 ? "" : "s", rolling) < 0
               ? -ENOMEM
               : 0;
}

int cmd_plan(int argc, char **argv)
{
    static const struct {
        const struct kube_resource *res;
        const char *selector;
    } reads[] = {
        {&NESTCP_CONTROL_PLANES, NULL},
        {&NESTCP_ETCDS, NULL},
        {&NESTCP_APISERVERS, NULL},
        {&NESTCP_CONTROLLER_MANAGERS, NULL},
        {&NESTCP_NESTED_CLUSTERS, NULL},
        {&CAPI_CLUSTERS, NULL},
        {&KUBE_SECRETS, "cluster.x-k8s.io/cluster-name"},
        {&KUBE_STATEFULSETS, "app.kubernetes.io/managed-by=nestcp"},
    };
    struct plan_settings s;
    struct flag flags[FLAGS_MAX];
    struct render_catalog *cat = NULL;
    struct render_source src;
    struct mgmt m = {0};
    struct buf text = BUF_INIT;
    cJSON *objs = NULL, *result = NULL, *cps;
    const cJSON *o;
    char **rest = NULL;
    char *json = NULL;
    const char *ns;
    struct err e;
    int nflags, nrest = 0, status = 1, r, bad = 0;

    plan_defaults(&s);
    nflags = plan_flags(&s, flags, FLAGS_MAX);
    if (nflags < 0)
        return 1;
    r = flags_parse("plan", NULL, cmd_plan_help, flags, nflags, argc, argv, &rest, &nrest);
    if (r != 0)
        return r > 0 ? 0 : 2;
    free(rest);
    if (nrest > 0) {
        fprintf(stderr, "nestcp plan: unexpected argument (usage: nestcp plan [-n NS | -A] "
                        "[-o text|json])\n");
        return 2;
    }
    if (strcmp(s.output, "text") != 0 && strcmp(s.output, "json") != 0) {
        fprintf(stderr, "nestcp plan: --output: \"%s\" is not text or json\n", s.output);
        return 2;
    }
    err_clear(&e);
    if (render_catalog_open(s.templates, &cat, &e) < 0) {
        fprintf(stderr, "nestcp plan: --templates %s: %s\n", s.templates, e.msg);
        goto out;
    }
    if (mgmt_open(&m, s.kubeconfig, s.namespace_, &e) < 0) {
        fprintf(stderr, "nestcp plan: management cluster: %s\n", e.msg);
        goto out;
    }
    ns = s.all_namespaces ? NULL : m.namespace_;
    if (!(objs = cJSON_CreateArray()) || !(result = cJSON_CreateObject()) ||
        !(cps = cJSON_AddArrayToObject(result, "controlPlanes")))
        goto oom;
    for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
        if ((r = read_all(&m, reads[i].res, ns, reads[i].selector, objs, &e)) < 0) {
            fprintf(stderr, "nestcp plan: %s\n", e.msg);
            goto out;
        }
    }
    render_source_from_objects(objs, &src);
    cJSON_ArrayForEach(o, objs) {
        const char *kind = str_of(o, "kind", NULL);
        cJSON *cp;
        if (!kind || strcmp(kind, "NestedControlPlane") != 0)
            continue;
        if (!(cp = cJSON_CreateObject()) || !cJSON_AddItemToArray(cps, cp)) {
            cJSON_Delete(cp);
            goto oom;
        }
        r = plan_control_plane(cat, &src, o, s.allow_privileged, cp);
        if (r == -ENOMEM)
            goto oom;
        bad += r < 0;
    }
    if (strcmp(s.output, "json") == 0) {
        if (!(json = cJSON_Print(result)))
            goto oom;
        printf("%s\n", json);
    } else {
        if (print_text(result, &text) < 0)
            goto oom;
        fwrite(text.data, 1, text.len, stdout);
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "nestcp plan: cannot write to stdout\n");
        goto out;
    }
    if (bad)
        fprintf(stderr, "nestcp plan: %d control plane%s cannot be rendered (see above)\n", bad,
                bad == 1 ? "" : "s");
    status = bad ? 1 : 0;
    goto out;
oom:
    fprintf(stderr, "nestcp plan: out of memory\n");
out:
    free(json);
    buf_done(&text);
    cJSON_Delete(result);
    cJSON_Delete(objs);
    mgmt_close(&m);
    render_catalog_free(cat);
    return status;
}
