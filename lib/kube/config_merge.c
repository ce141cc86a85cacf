/*
 * Where a kubeconfig comes from: one file, the ':'-separated list of $KUBECONFIG merged as
 * kubectl merges it, ~/.kube/config, or the in-cluster service account. What the files say is
 * read in config.c.
 */
#include "lib/kube/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/kube/config_internal.h"
#include "lib/util/buf.h"
#include "lib/util/yamlconv.h"

/* One kubeconfig file, read and parsed. */
struct kc_file {
    char *path;
    char *dir;  /* relative paths in the file resolve here; NULL: the current directory */
    cJSON *doc; /* NULL: the file is empty */
};

static void kc_file_done(struct kc_file *f)
{
    free(f->path);
    free(f->dir);
    cJSON_Delete(f->doc);
}

/* The directory part of path: "/a/b" -> "/a", "/b" -> "/", "b" -> NULL. */
static int dir_of(const char *path, char **ret)
{
    const char *slash = strrchr(path, '/');
    char *d;

    if (!slash) {
        *ret = NULL;
        return 0;
    }
    d = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
    if (!d)
        return -ENOMEM;
    *ret = d;
    return 0;
}

/* Reads and parses the file named by the first len bytes of path. Returns 0, -ENOENT (no such
 * file), -EACCES, -ENOBUFS (larger than KUBE_CONFIG_FILE_MAX), -EINVAL, -ENOMEM; the message in
 * e names the file. */
static int kc_file_read(const char *path, size_t len, struct kc_file *ret, struct err *e)
{
    struct kc_file f = {NULL, NULL, NULL};
    char *text = NULL;
    size_t text_len = 0;
    int r;

    f.path = strndup(path, len);
    if (!f.path)
        return -ENOMEM;
    r = util_read_file(f.path, KUBE_CONFIG_FILE_MAX, &text, &text_len);
    if (r < 0) {
        err_set(e, r, "kubeconfig %s: %s", f.path,
                r == -ENOBUFS ? "larger than 4 MiB" : strerror(-r));
        goto out;
    }
    r = dir_of(f.path, &f.dir);
    if (r < 0)
        goto out;
    r = kube_config_parse_doc(text, text_len, f.path, &f.doc, e);
    if (r < 0)
        goto out;
    *ret = f;
    f = (struct kc_file){NULL, NULL, NULL};
out:
    kc_file_done(&f);
    free(text);
    return r;
}

/* Builds the configuration from files read in order; origin is their paths joined by ':'. */
static int build(const struct kc_file *files, size_t n, const char *context,
                 struct kube_config **ret_cfg, struct err *e)
{
    struct kube_config_source src[KUBE_CONFIG_FILES_MAX];
    struct buf origin;
    size_t m = 0;
    int r = 0;

    buf_init(&origin, 0);
    for (size_t i = 0; i < n && r == 0; i++) {
        r = buf_printf(&origin, "%s%s", i ? ":" : "", files[i].path);
        if (files[i].doc)
            src[m++] = (struct kube_config_source){files[i].path, files[i].dir, files[i].doc};
    }
    if (r == 0)
        r = kube_config_build(src, m, origin.data, context, ret_cfg, e);
    buf_done(&origin);
    return r;
}

int kube_config_load_file(const char *path, const char *context, struct kube_config **ret_cfg,
                          struct err *e)
{
    struct kc_file f;
    int r;

    r = kc_file_read(path, strlen(path), &f, e);
    if (r < 0)
        return r;
    r = build(&f, 1, context, ret_cfg, e);
    kc_file_done(&f);
    return r;
}

/* kube_config_load_list; `what` names the list in the message when none of its files exists. */
static int load_list(const char *what, const char *list, const char *context,
                     struct kube_config **ret_cfg, struct err *e)
{
    struct kc_file files[KUBE_CONFIG_FILES_MAX];
    size_t n = 0, entries = 0;
    const char *p = list;
    int r = 0;

    for (;;) {
        size_t len = strcspn(p, ":");

        if (len > 0) {
            if (++entries > KUBE_CONFIG_FILES_MAX) {
                r = err_set(e, -EINVAL, "%s: more than %d files", what, KUBE_CONFIG_FILES_MAX);
                goto out;
            }
            r = kc_file_read(p, len, &files[n], e);
            if (r == 0)
                n++;
            else if (r != -ENOENT)
                goto out;
        }
        p += len;
        if (!*p)
            break;
        p++;
    }
    if (entries == 0) {
        r = err_set(e, -ENOENT, "%s: names no file", what);
        goto out;
    }
    if (n == 0) {
        r = err_set(e, -ENOENT, "%s: none of its files exists (%s)", what, list);
        goto out;
    }
    r = build(files, n, context, ret_cfg, e);
out:
    for (size_t i = 0; i < n; i++)
        kc_file_done(&files[i]);
    return r;
}

int kube_config_load_list(const char *list, const char *context, struct kube_config **ret_cfg,
                          struct err *e)
{
    return load_list("kubeconfig list", list, context, ret_cfg, e);
}

int kube_config_load(const char *path, struct kube_config **ret_cfg, struct err *e)
{
    const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
    struct buf b;
    int r;

    if (path && path[0])
        return kube_config_load_file(path, NULL, ret_cfg, e);
    /* As for kubectl, a $KUBECONFIG that names a file replaces ~/.kube/config. */
    if (env && env[strspn(env, ":")])
        return load_list("$KUBECONFIG", env, NULL, ret_cfg, e);
    if (home && home[0]) {
        struct kc_file f;

        buf_init(&b, 0);
        if (buf_printf(&b, "%s/.kube/config", home) < 0) {
            buf_done(&b);
            return -ENOMEM;
        }
        r = kc_file_read(b.data, b.len, &f, e);
        buf_done(&b);
        if (r == 0) {
            r = build(&f, 1, NULL, ret_cfg, e);
            kc_file_done(&f);
            return r;
        }
        if (r != -ENOENT)
            return r;
    }
    r = kube_config_in_cluster(NULL, ret_cfg, e);
    if (r == -ENOENT)
        err_set(e, r, "no kubeconfig (flag, $KUBECONFIG, ~/.kube/config) and not in a cluster");
    return r;
}
