#include "test/nodeagent/imagemap.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"

struct imagemap_rule {
    struct imagemap_rule *next; /* newest first */
    char *suffix;
    char *tag; /* a version line or release the image's tag must name; NULL: any tag */
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
        free(r->tag);
        free(r->binary);
        free(r);
    }
    free(m);
}

/* The tag of an image reference ("v1.36.3" of "registry.k8s.io/kube-apiserver:v1.36.3"), or
 * NULL when it has none; points into image, ends at '@' or the end. */
static const char *image_tag(const char *image, size_t *ret_len)
{
    size_t n = strcspn(image, "@");
    const char *slash = memrchr(image, '/', n), *from = slash ? slash : image;
    const char *colon = memchr(from, ':', n - (size_t)(from - image));

    if (!colon)
        return NULL;
    *ret_len = n - (size_t)(colon + 1 - image);
    return colon + 1;
}

/* A rule's tag "v1.36" (or "1.36") matches the image tags "v1.36", "v1.36.3" and "3.6.17-0"
 * style tags of its line, not "v1.361". */
static bool tag_matches(const char *want, const char *tag, size_t len)
{
    size_t w;

    if (*want == 'v')
        want++;
    if (len > 0 && *tag == 'v')
        tag++, len--;
    w = strlen(want);
    if (len < w || memcmp(tag, want, w) != 0)
        return false;
    return len == w || tag[w] == '.' || tag[w] == '-' || tag[w] == '+';
}

int imagemap_add(struct imagemap *m, const char *suffix, const char *binary)
{
    struct imagemap_rule *r;
    const char *slash, *colon;
    size_t n;

    colon = strchr(strrchr(suffix, '/') ? strrchr(suffix, '/') : suffix, ':');
    n = colon ? (size_t)(colon - suffix) : strlen(suffix);
    if (n == 0 || suffix[n - 1] == '/' || (colon && !colon[1]))
        return -EINVAL;
    if (binary[0] != '/' && strcmp(binary, IMAGEMAP_HOST) != 0)
        return -EINVAL;
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->suffix = strndup(suffix, n);
    r->tag = colon ? strdup(colon + 1) : NULL;
    r->binary = strdup(binary);
    if (!r->suffix || !r->binary || (colon && !r->tag)) {
        free(r->suffix);
        free(r->tag);
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

/* One release directory of hack/kube-build.sh's cache: "<component>-<version>/bin". */
struct release {
    const char *component; /* "kubernetes", "etcd" or "cluster-api" */
    char version[64];      /* "1.36.3" */
    char line[64];         /* "1.36" */
};

static int release_cmp(const void *a, const void *b)
{
    return strverscmp(((const struct release *)a)->version, ((const struct release *)b)->version);
}

/* The images a release directory serves: the repository name, and the binary's file name
 * (Cluster API's image holds its core manager as /manager). */
struct release_image {
    const char *image;
    const char *file;
};

static int add_release_rule(struct imagemap *m, const char *root, const struct release *rel,
                            const char *tag)
{
    static const struct release_image kube[] = {
        {"kube-apiserver", "kube-apiserver"},
        {"kube-controller-manager", "kube-controller-manager"},
        {NULL, NULL}};
    static const struct release_image etcd[] = {{"etcd", "etcd"}, {NULL, NULL}};
    static const struct release_image capi[] = {{"cluster-api-controller", "manager"},
                                                {NULL, NULL}};
    const struct release_image *images = strcmp(rel->component, "etcd") == 0          ? etcd
                                         : strcmp(rel->component, "cluster-api") == 0 ? capi
                                                                                      : kube;
    char path[4096], rule[256];
    int r;

    for (size_t i = 0; images[i].image; i++) {
        if ((size_t)snprintf(path, sizeof(path), "%s/%s-%s/bin/%s", root, rel->component,
                             rel->version, images[i].file) >= sizeof(path))
            return -ENAMETOOLONG;
        if (access(path, X_OK) < 0)
            continue;
        snprintf(rule, sizeof(rule), "%s%s%s", images[i].image, tag ? ":" : "", tag ? tag : "");
        r = imagemap_add(m, rule, path);
        if (r < 0)
            return r;
    }
    return 0;
}

int imagemap_add_defaults(struct imagemap *m, const char *bin_root)
{
    struct release rels[64];
    size_t n = 0;
    struct dirent *d;
    DIR *dir;
    int r = 0;

    if (!bin_root)
        return 0;
    dir = opendir(bin_root);
    if (!dir)
        return 0;
    while ((d = readdir(dir)) && n < sizeof(rels) / sizeof(rels[0])) {
        static const char *const components[] = {"kubernetes", "etcd", "cluster-api"};

        for (size_t i = 0; i < sizeof(components) / sizeof(components[0]); i++) {
            size_t len = strlen(components[i]);
            const char *v = d->d_name + len + 1;
            char *dot;

            if (strncmp(d->d_name, components[i], len) != 0 || d->d_name[len] != '-' ||
                !isdigit((unsigned char)*v) || strlen(v) >= sizeof(rels[n].version))
                continue;
            rels[n].component = components[i];
            snprintf(rels[n].version, sizeof(rels[n].version), "%s", v);
            snprintf(rels[n].line, sizeof(rels[n].line), "%s", v);
            dot = strchr(rels[n].line, '.');
            dot = dot ? strchr(dot + 1, '.') : NULL;
            if (dot)
                *dot = '\0';
            n++;
        }
    }
    closedir(dir);
    qsort(rels, n, sizeof(rels[0]), release_cmp);
    /* Later rules win: any tag maps to the newest release, a line's tag to that line's newest
     * patch, and an exact release to itself. */
    for (size_t i = 0; i < n && r == 0; i++)
        r = add_release_rule(m, bin_root, &rels[i], NULL);
    for (size_t i = 0; i < n && r == 0; i++)
        r = add_release_rule(m, bin_root, &rels[i], rels[i].line);
    for (size_t i = 0; i < n && r == 0; i++)
        r = add_release_rule(m, bin_root, &rels[i], rels[i].version);
    return r;
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
    size_t tag_len = 0;
    const char *tag = image_tag(image, &tag_len);

    if (imagemap_repository(image, repo, sizeof(repo)) < 0)
        return -ENOENT;
    for (const struct imagemap_rule *r = m->rules; r; r = r->next) {
        size_t a = strlen(repo), b = strlen(r->suffix);

        if (r->tag && (!tag || !tag_matches(r->tag, tag, tag_len)))
            continue;

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
