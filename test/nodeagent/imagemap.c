#include "test/nodeagent/imagemap.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"

struct imagemap_rule {
    struct imagemap_rule *next; /* newest first */
    char *suffix;
    char *binary;
    const char *name; /* last path component of suffix */
};

struct imagemap {
    struct imagemap_rule *rules;
};

int imagemap_new(struct imagemap **ret_map)
{
    struct imagemap *m = calloc(1, sizeof(*m));

    if (!m)
        return -ENOMEM;
    *ret_map = m;
    return 0;
}

void imagemap_free(struct imagemap *m)
{
    if (!m)
        return;
    while (m->rules) {
        struct imagemap_rule *r = m->rules;

        m->rules = r->next;
        free(r->suffix);
        free(r->binary);
        free(r);
    }
    free(m);
}

int imagemap_add(struct imagemap *m, const char *suffix, const char *binary)
{
    struct imagemap_rule *r;
    const char *slash;

    if (!*suffix || suffix[strlen(suffix) - 1] == '/')
        return -EINVAL;
    if (binary[0] != '/' && strcmp(binary, IMAGEMAP_HOST) != 0)
        return -EINVAL;
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->suffix = strdup(suffix);
    r->binary = strdup(binary);
    if (!r->suffix || !r->binary) {
        free(r->suffix);
        free(r->binary);
        free(r);
        return -ENOMEM;
    }
    slash = strrchr(r->suffix, '/');
    r->name = slash ? slash + 1 : r->suffix;
    r->next = m->rules;
    m->rules = r;
    return 0;
}

int imagemap_add_defaults(struct imagemap *m, const char *kube_bin_dir)
{
    static const char *const kube[] = {"kube-apiserver", "kube-controller-manager"};
    char path[4096];
    int r;

    r = imagemap_add(m, "etcd", "/usr/bin/etcd");
    if (r < 0 || !kube_bin_dir)
        return r;
    for (size_t i = 0; i < sizeof(kube) / sizeof(kube[0]); i++) {
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", kube_bin_dir, kube[i]) >= sizeof(path))
            return -ENAMETOOLONG;
        r = imagemap_add(m, kube[i], path);
        if (r < 0)
            return r;
    }
    return 0;
}

int imagemap_load_file(struct imagemap *m, const char *path, struct err *e)
{
    char *text = NULL, *line, *next;
    int r, lineno = 0;

    r = util_read_file(path, IMAGEMAP_FILE_MAX, &text, NULL);
    if (r < 0)
        return err_set(e, r, "%s: %s", path, strerror(-r));
    for (line = text; line; line = next) {
        char *suffix, *binary, *end;

        lineno++;
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        while (isspace((unsigned char)*line))
            line++;
        if (!*line || *line == '#')
            continue;
        suffix = line;
        for (end = suffix; *end && !isspace((unsigned char)*end); end++)
            ;
        binary = end;
        while (isspace((unsigned char)*binary))
            *binary++ = '\0';
        for (end = binary; *end && !isspace((unsigned char)*end); end++)
            ;
        if (*end) {
            *end++ = '\0';
            while (isspace((unsigned char)*end))
                end++;
        }
        if (!*binary || *end) {
            r = err_set(e, -EINVAL, "%s:%d: expected `<repository-suffix> <binary>`", path, lineno);
            goto out;
        }
        r = imagemap_add(m, suffix, binary);
        if (r == -EINVAL)
            r = err_set(e, r, "%s:%d: binary must be an absolute path or `%s`", path, lineno,
                        IMAGEMAP_HOST);
        if (r < 0)
            goto out;
    }
    r = 0;
out:
    free(text);
    return r;
}

int imagemap_repository(const char *image, char *out, size_t size)
{
    size_t n = strcspn(image, "@");
    const char *slash, *colon;

    /* A tag is a ':' after the last '/', so "host:5000/etcd" keeps its port. */
    slash = memrchr(image, '/', n);
    colon = memchr(slash ? slash : image, ':', n - (size_t)((slash ? slash : image) - image));
    if (colon)
        n = (size_t)(colon - image);
    if (n == 0)
        return -EINVAL;
    if (n >= size)
        return -ENAMETOOLONG;
    memcpy(out, image, n);
    out[n] = '\0';
    return 0;
}

int imagemap_resolve_image(const struct imagemap *m, const char *image, const char **ret_binary)
{
    char repo[1024];

    if (imagemap_repository(image, repo, sizeof(repo)) < 0)
        return -ENOENT;
    for (const struct imagemap_rule *r = m->rules; r; r = r->next) {
        size_t a = strlen(repo), b = strlen(r->suffix);

        /* The suffix matches at a path or word boundary: "etcd" matches "quay.io/coreos/etcd"
         * and "bitnami/etcd", not "fetcd". */
        if (a < b || strcmp(repo + a - b, r->suffix) != 0)
            continue;
        if (a > b && repo[a - b - 1] != '/' && repo[a - b - 1] != '-' && repo[a - b - 1] != '_')
            continue;
        *ret_binary = r->binary;
        return 0;
    }
    return -ENOENT;
}

int imagemap_resolve_command(const struct imagemap *m, const char *word, const char **ret_binary)
{
    const char *slash = strrchr(word, '/');
    const char *base = slash ? slash + 1 : word;

    for (const struct imagemap_rule *r = m->rules; r; r = r->next) {
        if (strcmp(r->binary, IMAGEMAP_HOST) == 0 || strcmp(base, r->name) != 0)
            continue;
        *ret_binary = r->binary;
        return 0;
    }
    return -ENOENT;
}

int imagemap_bin_dirs(const struct imagemap *m, char *out, size_t size)
{
    size_t len = 0;

    if (size == 0)
        return -ENAMETOOLONG;
    out[0] = '\0';
    for (const struct imagemap_rule *r = m->rules; r; r = r->next) {
        const char *slash = strrchr(r->binary, '/');
        size_t n;
        bool seen = false;

        if (!slash)
            continue;
        n = (size_t)(slash - r->binary);
        if (n == 0)
            n = 1;
        for (const char *p = out; *p;) {
            size_t k = strcspn(p, ":");

            if (k == n && memcmp(p, r->binary, n) == 0)
                seen = true;
            p += k + (p[k] == ':');
        }
        if (seen)
            continue;
        if (len + (len > 0) + n + 1 > size)
            return -ENAMETOOLONG;
        if (len > 0)
            out[len++] = ':';
        memcpy(out + len, r->binary, n);
        len += n;
        out[len] = '\0';
    }
    return 0;
}
