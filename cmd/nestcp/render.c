/* `nestcp render`: every object the controllers would create for the control planes in the
 * input, printed instead of applied (docs/render.md). */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/errors.h"
#include "api/kinds.h"
#include "cmd/nestcp/cmd.h"
#include "cmd/nestcp/flags.h"
#include "lib/pki/base64.h"
#include "lib/render/admission.h"
#include "lib/render/catalog.h"
#include "lib/render/cluster.h"
#include "lib/render/render.h"
#include "lib/util/buf.h"
#include "lib/util/yamlconv.h"

#ifndef NESTCP_DEFAULT_TEMPLATES
#define NESTCP_DEFAULT_TEMPLATES "templates"
#endif

/* Bound on one input file and on all input together. */
#define RENDER_INPUT_MAX (16 * 1024 * 1024)
/* Bound on the number of control planes in one input. */
#define RENDER_MAX_CLUSTERS 256

const char cmd_render_help[] =
    "Prints every object the nestcp controllers would create for the control planes in the\n"
    "input, without a management cluster: the CA Secrets that do not exist yet, each\n"
    "component's certificate Secret, the admin kubeconfig Secret, then per component (etcd,\n"
    "kube-apiserver, kube-controller-manager) its Services and StatefulSet, in apply order.\n"
    "\n"
    "Input: YAML documents (files, or stdin with -f -): NestedControlPlane objects with\n"
    "their NestedEtcd, NestedAPIServer and NestedControllerManager (referenced by name in\n"
    "CAPN's shape, or standalone with the cluster.x-k8s.io/cluster-name label), optionally\n"
    "the Cluster API Cluster and NestedCluster, and existing Secrets to reuse (CAs such as\n"
    "<cluster>-ca, earlier certificate Secrets, <cluster>-kubeconfig). Other kinds are\n"
    "ignored. Several clusters may be given at once.\n"
    "\n"
    "Output: a YAML stream on stdout (or a v1 List with --output json). Problems are printed\n"
    "on stderr, one line each naming the object and field; nothing is printed on stdout\n"
    "then. Exit status: 0 success, 1 bad input, 2 bad usage.";

/* Reads fd to the end, at most max bytes. */
static int read_all(int fd, size_t max, struct buf *out)
{
    char chunk[65536];

    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return 0;
        if (out->len + (size_t)n > max)
            return -ENOBUFS;
        if (buf_append(out, chunk, (size_t)n) < 0)
            return -ENOMEM;
    }
}

/* Parses one input into docs (appended). */
static int read_input(const char *path, cJSON *docs)
{
    struct buf text = BUF_INIT;
    struct err e = {0};
    cJSON *parsed = NULL;
    bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC), r;

    if (fd < 0) {
        fprintf(stderr, "nestcp render: %s: %s\n", path, strerror(errno));
        return -EINVAL;
    }
    r = read_all(fd, RENDER_INPUT_MAX, &text);
    if (!is_stdin)
        close(fd);
    if (r < 0) {
        fprintf(stderr, "nestcp render: %s: %s\n", path,
                r == -ENOBUFS ? "larger than 16 MiB" : strerror(-r));
        buf_done(&text);
        return -EINVAL;
    }
    r = yamlconv_parse_all(text.data ? text.data : "", text.len, is_stdin ? "<stdin>" : path,
                           &parsed, &e);
    buf_done(&text);
    if (r < 0) {
        fprintf(stderr, "nestcp render: %s\n", e.msg);
        return r == -ENOMEM ? r : -EINVAL;
    }
    while (parsed->child) {
        cJSON *d = cJSON_DetachItemViaPointer(parsed, parsed->child);
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(d, "items");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(d, "kind");
        /* A v1 List (kubectl get -o yaml) contributes its items. */
        if (cJSON_IsString(kind) && strcmp(kind->valuestring, "List") == 0 &&
            cJSON_IsArray(items)) {
            cJSON *list = cJSON_DetachItemFromObjectCaseSensitive(d, "items");
            while (list->child)
                cJSON_AddItemToArray(docs, cJSON_DetachItemViaPointer(list, list->child));
            cJSON_Delete(list);
            cJSON_Delete(d);
        } else {
            cJSON_AddItemToArray(docs, d);
        }
    }
    cJSON_Delete(parsed);
    return 0;
}

static const char *str_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Puts every object in a namespace, and turns a Secret's stringData into data, as the API
 * server would. Problems go to errs. */
static int normalise(cJSON *docs, const char *ns, struct api_errors *errs)
{
    cJSON *d;
    int i = 0;

    cJSON_ArrayForEach(d, docs) {
        cJSON *md = cJSON_GetObjectItemCaseSensitive(d, "metadata");
        const char *av = str_of(d, "apiVersion"), *kind = str_of(d, "kind");
        enum api_kind k;

        i++;
        if (!cJSON_IsObject(d) || !av || !kind || !cJSON_IsObject(md) || !str_of(md, "name")) {
            api_errors_add(errs, NULL,
                           "document %d: not an object with apiVersion, kind and metadata.name", i);
            continue;
        }
        if (!str_of(md, "namespace") && !cJSON_AddStringToObject(md, "namespace", ns))
            return -ENOMEM;
        if (api_kind_lookup(av, kind, &k) == -EPROTONOSUPPORT)
            api_errors_add(errs, NULL, "%s %s/%s: apiVersion \"%s\" is not served (use %s/%s)",
                           kind, str_of(md, "namespace"), str_of(md, "name"), av,
                           strncmp(av, API_GROUP_CLUSTER, strlen(API_GROUP_CLUSTER)) == 0
                               ? API_GROUP_CLUSTER
                               : API_GROUP_CONTROLPLANE,
                           API_VERSION_STORAGE);
        if (strcmp(av, "v1") == 0 && strcmp(kind, "Secret") == 0) {
            cJSON *sd = cJSON_DetachItemFromObjectCaseSensitive(d, "stringData"), *it;
            cJSON *data = cJSON_GetObjectItemCaseSensitive(d, "data");
            if (!sd)
                continue;
            if (!data && !(data = cJSON_AddObjectToObject(d, "data"))) {
                cJSON_Delete(sd);
                return -ENOMEM;
            }
            cJSON_ArrayForEach(it, sd) {
                char *b64 = NULL;
                if (!cJSON_IsString(it)) {
                    api_errors_add(errs, NULL, "Secret %s/%s: stringData.%s: is not a string",
                                   str_of(md, "namespace"), str_of(md, "name"), it->string);
                    continue;
                }
                if (pki_base64_encode(it->valuestring, strlen(it->valuestring), &b64) < 0) {
                    cJSON_Delete(sd);
                    return -ENOMEM;
                }
                cJSON_DeleteItemFromObjectCaseSensitive(data, it->string);
                cJSON_AddStringToObject(data, it->string, b64);
                free(b64);
            }
            cJSON_Delete(sd);
        }
    }
    return api_errors_oom(errs) ? -ENOMEM : 0;
}

/* Renders every NestedControlPlane of docs into out, in input order. */
static int render_all(const struct render_catalog *cat, const cJSON *docs, bool allow_privileged,
                      cJSON *out, struct api_errors *errs)
{
    struct render_cluster *rcs[RENDER_MAX_CLUSTERS];
    struct render_source src;
    const cJSON *d;
    int n = 0, r = 0;

    render_source_from_objects(docs, &src);
    cJSON_ArrayForEach(d, docs) {
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(d, "metadata");
        enum api_kind k;
        int q;

        if (api_kind_lookup(str_of(d, "apiVersion"), str_of(d, "kind"), &k) < 0 ||
            k != API_KIND_NESTED_CONTROL_PLANE)
            continue;
        if (n == RENDER_MAX_CLUSTERS) {
            api_errors_add(errs, NULL, "more than %d NestedControlPlanes in the input",
                           RENDER_MAX_CLUSTERS);
            r = -EINVAL;
            break;
        }
        q = render_cluster_resolve(cat, &src, str_of(md, "namespace"), str_of(md, "name"), &rcs[n],
                                   errs);
        if (q == -ENOMEM) {
            r = q;
            break;
        }
        if (q == 0)
            render_cluster_set_allow_privileged(rcs[n++], allow_privileged);
        else
            r = -EINVAL;
    }
    if (r == 0 && n == 0) {
        api_errors_add(errs, NULL, "the input holds no NestedControlPlane");
        r = -EINVAL;
    }
    /* Every cluster is resolved (and every problem reported) before any key is made. */
    for (int i = 0; i < n && r == 0; i++) {
        cJSON *objs = NULL;
        int q = render_cluster_all(cat, rcs[i], &src, 0, &objs, errs);
        if (q < 0) {
            r = q == -ENOMEM ? q : -EINVAL;
            continue;
        }
        while (objs->child)
            cJSON_AddItemToArray(out, cJSON_DetachItemViaPointer(objs, objs->child));
        cJSON_Delete(objs);
    }
    for (int i = 0; i < n; i++)
        render_cluster_free(rcs[i]);
    return r;
}

static int print_output(const cJSON *objs, const char *format)
{
    struct buf out = BUF_INIT;
    int r;

    if (strcmp(format, "json") == 0) {
        cJSON *list = cJSON_CreateObject();
        char *text = NULL;
        if (list && cJSON_AddStringToObject(list, "apiVersion", "v1") &&
            cJSON_AddStringToObject(list, "kind", "List") &&
            cJSON_AddItemReferenceToObject(list, "items", (cJSON *)objs))
            text = cJSON_Print(list);
        cJSON_Delete(list);
        if (!text)
            return -ENOMEM;
        r = fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 ? -EIO : 0;
        free(text);
    } else {
        r = render_emit_yaml(objs, &out);
        if (r == 0 && fwrite(out.data ? out.data : "", 1, out.len, stdout) != out.len)
            r = -EIO;
        buf_done(&out);
    }
    if (r == 0 && fflush(stdout) != 0)
        r = -EIO;
    return r;
}

/* `--admission-params [NS/]NAME`: the ConfigMap the manager keeps for the admission policy. */
static int print_admission_params(const struct render_catalog *cat, const char *ref,
                                  const char *output)
{
    const char *slash = strchr(ref, '/');
    char ns[256] = "";
    cJSON *list = NULL, *cm = NULL;
    int r;

    if (slash && (size_t)(slash - ref) >= sizeof(ns))
        slash = NULL;
    if (slash)
        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - ref), ref);
    if (!*(slash ? slash + 1 : ref) || (slash && !*ns)) {
        fprintf(stderr, "nestcp render: --admission-params: \"%s\" is not NAME or NAMESPACE/NAME\n",
                ref);
        return -EINVAL;
    }
    if ((r = render_admission_params(cat, ns, slash ? slash + 1 : ref, &cm)) < 0)
        return r;
    if (!(list = cJSON_CreateArray()) || !cJSON_AddItemToArray(list, cm)) {
        cJSON_Delete(cm);
        cJSON_Delete(list);
        return -ENOMEM;
    }
    r = print_output(list, output);
    cJSON_Delete(list);
    if (r < 0 && r != -ENOMEM) {
        fprintf(stderr, "nestcp render: writing the output failed\n");
        return -EIO;
    }
    return r;
}

struct render_settings {
    struct flag_list files;
    const char *templates, *ns, *output;
    const char *admission; /* --admission-params, or NULL */
    bool allow_privileged;
};

static void render_settings_defaults(struct render_settings *s)
{
    *s = (struct render_settings){
        .templates = NESTCP_DEFAULT_TEMPLATES, .ns = "default", .output = "yaml"};
}

static int render_flags(struct render_settings *s, struct flag *out, int cap)
{
    const struct flag flags[] = {
        {"filename", 'f', FLAG_LIST, &s->files, "FILE",
         "input YAML file, '-' for stdin (repeatable; default stdin)"},
        {"templates", 0, FLAG_STRING, &s->templates, "DIR", "the templates directory (packages)"},
        {"namespace", 'n', FLAG_STRING, &s->ns, "NS", "namespace of input objects that give none"},
        {"output", 'o', FLAG_STRING, &s->output, "FORMAT", "yaml or json"},
        {"allow-privileged-patches", 0, FLAG_BOOL, &s->allow_privileged, NULL,
         "as the manager's flag of that name (docs/security.md)"},
        {"admission-params", 0, FLAG_STRING, &s->admission, "[NS/]NAME",
         "print instead the ConfigMap of config/admission's ValidatingAdmissionPolicy, named "
         "so: what the packages know (docs/install.md)"},
    };

    return flags_copy(flags, (int)(sizeof(flags) / sizeof(flags[0])), out, cap);
}

int cmd_render_flags(struct flag *out, int cap)
{
    static struct render_settings defaults;

    render_settings_defaults(&defaults);
    return render_flags(&defaults, out, cap);
}

int cmd_render(int argc, char **argv)
{
    struct render_settings s;
    struct flag flags[FLAGS_MAX];
    struct flag_list *files = &s.files;
    const char *templates, *ns, *output;
    bool allow_privileged;
    int nflags;
    struct render_catalog *cat = NULL;
    struct api_errors errs = API_ERRORS_INIT;
    struct buf msg = BUF_INIT;
    cJSON *docs = NULL, *out = NULL;
    struct err e = {0};
    char **rest = NULL;
    int nrest = 0, status = 1, r;

    render_settings_defaults(&s);
    nflags = render_flags(&s, flags, FLAGS_MAX);
    if (nflags < 0)
        return 1;
    r = flags_parse("render", NULL, cmd_render_help, flags, nflags, argc, argv, &rest, &nrest);
    templates = s.templates;
    ns = s.ns;
    output = s.output;
    allow_privileged = s.allow_privileged;
    if (r == 1)
        return 0;
    if (r < 0)
        return 2;
    if (nrest > 0) {
        fprintf(stderr, "nestcp render: unexpected argument '%s' (inputs are given with -f)\n",
                rest[0]);
        status = 2;
        goto out;
    }
    if (strcmp(output, "yaml") != 0 && strcmp(output, "json") != 0) {
        fprintf(stderr, "nestcp render: --output: \"%s\" is not yaml or json\n", output);
        status = 2;
        goto out;
    }
    if (render_catalog_open(templates, &cat, &e) < 0) {
        fprintf(stderr, "nestcp render: templates %s: %s\n", templates, e.msg);
        goto out;
    }
    if (!(docs = cJSON_CreateArray()) || !(out = cJSON_CreateArray()))
        goto oom;
    if (s.admission) {
        if ((r = print_admission_params(cat, s.admission, output)) == -ENOMEM)
            goto oom;
        status = r == 0 ? 0 : r == -EINVAL ? 2 : 1;
        goto out;
    }
    for (int i = 0; i < (files->n ? files->n : 1); i++) {
        r = read_input(files->n ? files->items[i] : "-", docs);
        if (r == -ENOMEM)
            goto oom;
        if (r < 0)
            goto out;
    }
    if ((r = normalise(docs, ns, &errs)) == -ENOMEM)
        goto oom;
    if (api_errors_count(&errs) == 0 &&
        (r = render_all(cat, docs, allow_privileged, out, &errs)) == -ENOMEM)
        goto oom;
    if (api_errors_count(&errs) > 0) {
        if (api_errors_format(&errs, &msg) < 0)
            goto oom;
        fputs(msg.data, stderr);
        goto out;
    }
    if (print_output(out, output) < 0) {
        fprintf(stderr, "nestcp render: writing the output failed\n");
        goto out;
    }
    status = 0;
    goto out;
oom:
    fprintf(stderr, "nestcp render: out of memory\n");
out:
    buf_done(&msg);
    api_errors_done(&errs);
    cJSON_Delete(docs);
    cJSON_Delete(out);
    render_catalog_free(cat);
    flag_list_done(files);
    free(rest);
    return status;
}
