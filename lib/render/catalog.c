#include "lib/render/catalog.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/render/tmpl.h"
#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"

/* A sorted list of names, in one allocation: the pointers, then (for feature gates) what each
 * is locked to, then the strings. Looked up by binary search. */
struct names {
    const char **v;
    signed char *locked; /* feature gates: -1 free, 0 or 1 the value it is locked to */
    size_t n;
};

struct render_package {
    char *component;
    char *line; /* "1.20" */
    int major, minor;
    cJSON *meta; /* package.yaml without the lists below */
    struct names lists[RENDER_NAMES__COUNT];
    struct tmpl **tmpls;
    int ntmpls;
};

struct channel {
    char *name;
    cJSON *doc;
};

struct render_catalog {
    struct render_package *pkgs;
    int npkgs;
    struct channel *chans;
    int nchans;
};

/* ---- names and versions ---- */

/* kdp's safelists: channel names are [a-z]+; component names [a-z0-9-], not starting with
 * '.' or '-', so a name can never walk out of the directory. */
static bool channel_name_ok(const char *s)
{
    if (!*s || strlen(s) > 63)
        return false;
    for (; *s; s++)
        if (*s < 'a' || *s > 'z')
            return false;
    return true;
}

static bool component_name_ok(const char *s)
{
    if (!*s || *s == '-' || strlen(s) > 63)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return false;
    return true;
}

static int parse_num(const char **p, int *ret)
{
    long v = 0;
    const char *s = *p;

    if (*s < '0' || *s > '9')
        return -EINVAL;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s++ - '0');
        if (v > 100000)
            return -EINVAL;
    }
    *p = s;
    *ret = (int)v;
    return 0;
}

int render_version_parse(const char *s, int *ret_major, int *ret_minor, int *ret_patch)
{
    int major, minor, patch = -1;

    if (!s)
        return -EINVAL;
    if (*s == 'v')
        s++;
    if (parse_num(&s, &major) < 0 || *s++ != '.' || parse_num(&s, &minor) < 0)
        return -EINVAL;
    if (*s == '.') {
        s++;
        if (parse_num(&s, &patch) < 0)
            return -EINVAL;
    }
    if (*s)
        return -EINVAL;
    *ret_major = major;
    *ret_minor = minor;
    *ret_patch = patch;
    return 0;
}

static int version_cmp(const char *a, const char *b)
{
    int am, an, ap, bm, bn, bp;

    if (render_version_parse(a, &am, &an, &ap) < 0)
        return -1; /* unparsable versions lose, as in kdp */
    if (render_version_parse(b, &bm, &bn, &bp) < 0)
        return 1;
    if (am != bm)
        return am < bm ? -1 : 1;
    if (an != bn)
        return an < bn ? -1 : 1;
    return ap < bp ? -1 : ap > bp;
}

/* ---- loading ---- */

/* Writes "a/b" into out; returns 0 or -ENAMETOOLONG. */
static int path_join(char *out, size_t size, const char *a, const char *b)
{
    int n = snprintf(out, size, "%s/%s", a, b);

    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the names in dir (no "." entries) in byte order; want_dirs selects directories or
 * regular files. */
static int list_dir(const char *dir, bool want_dirs, char ***ret_names, int *ret_n)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL, path[4096];
    int n = 0, r = 0;

    if (!d)
        return -errno;
    while ((de = readdir(d))) {
        struct stat st;
        char **nn;
        if (de->d_name[0] == '.')
            continue;
        if (path_join(path, sizeof(path), dir, de->d_name) < 0 || stat(path, &st) < 0)
            continue;
        if (want_dirs ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
            continue;
        nn = realloc(names, sizeof(*names) * (size_t)(n + 1));
        if (!nn || !(nn[n] = strdup(de->d_name))) {
            names = nn ? nn : names;
            r = -ENOMEM;
            break;
        }
        names = nn;
        n++;
    }
    closedir(d);
    if (r < 0) {
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return r;
    }
    qsort(names, (size_t)n, sizeof(*names), cmp_str);
    *ret_names = names;
    *ret_n = n;
    return 0;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static int read_yaml(const char *path, const char *origin, cJSON **ret_doc, struct err *e)
{
    char *text = NULL;
    size_t len = 0;
    int r = util_read_file(path, RENDER_MAX_TEMPLATE_BYTES, &text, &len);

    if (r < 0)
        return err_set(e, r, "%s: cannot read (%s)", origin, strerror(-r));
    r = yamlconv_parse_one(text, len, origin, ret_doc, e);
    free(text);
    return r;
}

static int load_channel(struct render_catalog *c, const char *dir, const char *name, struct err *e)
{
    char path[4096];
    cJSON *doc = NULL;
    const cJSON *m, *it;
    struct channel *nc;
    int r;

    if (path_join(path, sizeof(path), dir, name) < 0)
        return err_set(e, -ENAMETOOLONG, "channel %s: path too long", name);
    if ((r = read_yaml(path, name, &doc, e)) < 0)
        return r;
    m = cJSON_GetObjectItemCaseSensitive(doc, "manifests");
    if (!cJSON_IsArray(m)) {
        cJSON_Delete(doc);
        return err_set(e, -EINVAL, "channel %s: \"manifests\" must be a list", name);
    }
    cJSON_ArrayForEach(it, m) {
        const cJSON *pn = cJSON_GetObjectItemCaseSensitive(it, "name");
        const cJSON *pv = cJSON_GetObjectItemCaseSensitive(it, "version");
        int a, b, p;
        if (!cJSON_IsString(pn) || !component_name_ok(pn->valuestring) || !cJSON_IsString(pv) ||
            render_version_parse(pv->valuestring, &a, &b, &p) < 0 || p < 0) {
            cJSON_Delete(doc);
            return err_set(e, -EINVAL,
                           "channel %s: every entry needs a component name and a version "
                           "major.minor.patch",
                           name);
        }
    }
    nc = realloc(c->chans, sizeof(*nc) * (size_t)(c->nchans + 1));
    if (!nc) {
        cJSON_Delete(doc);
        return err_set(e, -ENOMEM, "out of memory");
    }
    c->chans = nc;
    nc[c->nchans].doc = doc;
    if (!(nc[c->nchans].name = strdup(name))) {
        cJSON_Delete(doc);
        return err_set(e, -ENOMEM, "out of memory");
    }
    c->nchans++;
    return 0;
}

/* The key of package.yaml that each list comes from. */
static const char *const list_keys[RENDER_NAMES__COUNT] = {
    [RENDER_FLAGS] = "flags",
    [RENDER_REMOVED_FLAGS] = "removedFlags",
    [RENDER_FEATURE_GATES] = "featureGates",
};

/* The name an element of list `which` gives: a flag is a string, a removed flag a string or
 * {flag, note}, a feature gate the key of {stage, default, locked}. NULL when malformed. */
static const char *list_name(enum render_names which, const cJSON *it)
{
    switch (which) {
    case RENDER_FLAGS:
        return cJSON_IsString(it) ? it->valuestring : NULL;
    case RENDER_REMOVED_FLAGS:
        if (cJSON_IsObject(it))
            it = cJSON_GetObjectItemCaseSensitive(it, "flag");
        return cJSON_IsString(it) ? it->valuestring : NULL;
    case RENDER_FEATURE_GATES:
        return cJSON_IsObject(it) ? it->string : NULL;
    default:
        return NULL;
    }
}

/* Moves list `which` out of the package's metadata into p->lists[which]. */
static int take_list(struct render_package *p, enum render_names which, const char *rel,
                     struct err *e)
{
    cJSON *list = cJSON_DetachItemFromObjectCaseSensitive(p->meta, list_keys[which]);
    const cJSON *it;
    size_t n = 0, bytes = 0, i = 0;
    struct names *out = &p->lists[which];
    char *str;
    int r = 0;

    if (!list)
        return 0;
    if (which == RENDER_FEATURE_GATES ? !cJSON_IsObject(list) : !cJSON_IsArray(list)) {
        r = err_set(e, -EINVAL, "%s/package.yaml: %s must be a %s", rel, list_keys[which],
                    which == RENDER_FEATURE_GATES ? "map of gates" : "list");
        goto out;
    }
    cJSON_ArrayForEach(it, list) {
        const char *name = list_name(which, it);
        if (!name) {
            r = err_set(
                e, -EINVAL, "%s/package.yaml: %s: entry %zu is not a %s", rel, list_keys[which], n,
                which == RENDER_FEATURE_GATES ? "gate {stage, default, locked}" : "flag name");
            goto out;
        }
        n++;
        bytes += strlen(name) + 1;
    }
    out->v = malloc(n * (sizeof(*out->v) + 1) + bytes + 1);
    if (!out->v) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    out->locked = (signed char *)(out->v + n);
    str = (char *)(out->locked + n);
    cJSON_ArrayForEach(it, list) {
        const char *name = list_name(which, it);
        size_t len = strlen(name) + 1;
        memcpy(str, name, len);
        out->v[i++] = str;
        str += len;
    }
    out->n = n;
    qsort(out->v, n, sizeof(*out->v), cmp_str);
    /* Only now that the names are in order can each gate's lock be put beside its name. */
    for (i = 0; which == RENDER_FEATURE_GATES && i < n; i++) {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(list, out->v[i]);
        const cJSON *locked = cJSON_GetObjectItemCaseSensitive(g, "locked");
        const cJSON *def = cJSON_GetObjectItemCaseSensitive(g, "default");
        out->locked[i] = (signed char)(cJSON_IsTrue(locked) ? cJSON_IsTrue(def) : -1);
    }
out:
    cJSON_Delete(list);
    return r;
}

/* Index of name in the list, or -1. */
static long names_find(const struct names *s, const char *name)
{
    const char **hit = s->n ? bsearch(&name, s->v, s->n, sizeof(*s->v), cmp_str) : NULL;

    return hit ? hit - s->v : -1;
}

static void package_done(struct render_package *p)
{
    for (int i = 0; i < p->ntmpls; i++)
        tmpl_free(p->tmpls[i]);
    free(p->tmpls);
    for (int i = 0; i < RENDER_NAMES__COUNT; i++)
        free(p->lists[i].v);
    cJSON_Delete(p->meta);
    free(p->component);
    free(p->line);
}

static int load_templates(struct render_package *p, const char *pdir, const char *rel,
                          struct err *e)
{
    char **files = NULL, path[4096], origin[512];
    int nfiles = 0, r;

    if ((r = list_dir(pdir, false, &files, &nfiles)) < 0)
        return err_set(e, r, "%s: cannot list (%s)", rel, strerror(-r));
    p->tmpls = calloc((size_t)nfiles + 1, sizeof(*p->tmpls));
    if (!p->tmpls) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < nfiles; i++) {
        char *text = NULL;
        size_t len = 0;
        if (!str_has_suffix(files[i], ".yaml") || strcmp(files[i], "package.yaml") == 0)
            continue;
        if (path_join(path, sizeof(path), pdir, files[i]) < 0 ||
            path_join(origin, sizeof(origin), rel, files[i]) < 0) {
            r = err_set(e, -ENAMETOOLONG, "%s/%s: path too long", rel, files[i]);
            goto out;
        }
        if ((r = util_read_file(path, RENDER_MAX_TEMPLATE_BYTES, &text, &len)) < 0) {
            err_set(e, r, "%s: cannot read (%s)", origin, strerror(-r));
            goto out;
        }
        r = tmpl_parse(origin, text, len, &p->tmpls[p->ntmpls], e);
        free(text);
        if (r < 0)
            goto out;
        p->ntmpls++;
    }
    if (p->ntmpls == 0)
        r = err_set(e, -EINVAL, "%s: no templates (*.yaml besides package.yaml)", rel);
out:
    free_names(files, nfiles);
    return r;
}

static int load_package(struct render_catalog *c, const char *base, const char *component,
                        const char *line, struct err *e)
{
    struct render_package p = {0}, *np;
    char pdir[4096], path[4096], rel[512], origin[600];
    const cJSON *v, *img;
    int patch, r;

    if (snprintf(rel, sizeof(rel), "packages/%s/%s", component, line) >= (int)sizeof(rel))
        return err_set(e, -ENAMETOOLONG, "packages/%s: name too long", component);
    if (render_version_parse(line, &p.major, &p.minor, &patch) < 0 || patch >= 0)
        return err_set(e, -EINVAL, "%s: a package directory is named major.minor", rel);
    if (path_join(pdir, sizeof(pdir), base, rel) < 0 ||
        path_join(path, sizeof(path), pdir, "package.yaml") < 0 ||
        path_join(origin, sizeof(origin), rel, "package.yaml") < 0)
        return err_set(e, -ENAMETOOLONG, "%s: path too long", rel);
    if ((r = read_yaml(path, origin, &p.meta, e)) < 0)
        return r;
    v = cJSON_GetObjectItemCaseSensitive(p.meta, "component");
    img = cJSON_GetObjectItemCaseSensitive(p.meta, "image");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, component) != 0 ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(img, "repository"))) {
        r = err_set(e, -EINVAL, "%s/package.yaml: needs component: %s and image.repository", rel,
                    component);
        goto fail;
    }
    if (!(p.component = strdup(component)) || !(p.line = strdup(line))) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < RENDER_NAMES__COUNT; i++)
        if ((r = take_list(&p, (enum render_names)i, rel, e)) < 0)
            goto fail;
    /* What changed against the previous package is for people reading the file. */
    cJSON_DeleteItemFromObjectCaseSensitive(p.meta, "changes");
    if ((r = load_templates(&p, pdir, rel, e)) < 0)
        goto fail;
    np = realloc(c->pkgs, sizeof(*np) * (size_t)(c->npkgs + 1));
    if (!np) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    c->pkgs = np;
    np[c->npkgs++] = p;
    return 0;
fail:
    package_done(&p);
    return r;
}

int render_catalog_open(const char *dir, struct render_catalog **ret_catalog, struct err *e)
{
    struct render_catalog *c = calloc(1, sizeof(*c));
    char **names = NULL, **comps = NULL, **lines = NULL, pkgdir[4096], cdir[4096];
    int n = 0, ncomps = 0, nlines = 0, r;

    if (!c)
        return err_set(e, -ENOMEM, "out of memory");
    if ((r = list_dir(dir, false, &names, &n)) < 0) {
        err_set(e, r, "templates directory %s: %s", dir, strerror(-r));
        goto out;
    }
    for (int i = 0; i < n; i++)
        if (channel_name_ok(names[i]) && (r = load_channel(c, dir, names[i], e)) < 0)
            goto out;
    if (path_join(pkgdir, sizeof(pkgdir), dir, "packages") < 0) {
        r = err_set(e, -ENAMETOOLONG, "templates directory %s: path too long", dir);
        goto out;
    }
    if ((r = list_dir(pkgdir, true, &comps, &ncomps)) < 0) {
        err_set(e, r, "templates directory %s: no packages/ (%s)", dir, strerror(-r));
        goto out;
    }
    for (int i = 0; i < ncomps; i++) {
        if (!component_name_ok(comps[i]))
            continue;
        if (path_join(cdir, sizeof(cdir), pkgdir, comps[i]) < 0)
            continue;
        if ((r = list_dir(cdir, true, &lines, &nlines)) < 0) {
            err_set(e, r, "packages/%s: %s", comps[i], strerror(-r));
            goto out;
        }
        for (int j = 0; j < nlines && r == 0; j++)
            r = load_package(c, dir, comps[i], lines[j], e);
        free_names(lines, nlines);
        lines = NULL;
        if (r < 0)
            goto out;
    }
    *ret_catalog = c;
    c = NULL;
    r = 0;
out:
    free_names(names, n);
    free_names(comps, ncomps);
    render_catalog_free(c);
    return r;
}

void render_catalog_free(struct render_catalog *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->npkgs; i++)
        package_done(&c->pkgs[i]);
    free(c->pkgs);
    for (int i = 0; i < c->nchans; i++) {
        free(c->chans[i].name);
        cJSON_Delete(c->chans[i].doc);
    }
    free(c->chans);
    free(c);
}

/* ---- lookups ---- */

const struct render_package *render_catalog_package(const struct render_catalog *c,
                                                    const char *component, const char *version)
{
    int major, minor, patch;

    if (!component || render_version_parse(version, &major, &minor, &patch) < 0)
        return NULL;
    for (int i = 0; i < c->npkgs; i++)
        if (strcmp(c->pkgs[i].component, component) == 0 && c->pkgs[i].major == major &&
            c->pkgs[i].minor == minor)
            return &c->pkgs[i];
    return NULL;
}

static bool component_known(const struct render_catalog *c, const char *component)
{
    for (int i = 0; i < c->npkgs; i++)
        if (strcmp(c->pkgs[i].component, component) == 0)
            return true;
    return false;
}

/* The newest version of component that channel lists, or NULL. */
static const char *channel_latest(const struct channel *ch, const char *component)
{
    const cJSON *it, *m = cJSON_GetObjectItemCaseSensitive(ch->doc, "manifests");
    const char *best = NULL;

    cJSON_ArrayForEach(it, m) {
        const char *n = cJSON_GetObjectItemCaseSensitive(it, "name")->valuestring;
        const char *v = cJSON_GetObjectItemCaseSensitive(it, "version")->valuestring;
        if (strcmp(n, component) == 0 && (!best || version_cmp(v, best) > 0))
            best = v;
    }
    return best;
}

/* True when major.minor is older than every line of component that is shipped: a retired line,
 * not merely one nobody has packaged yet. */
static bool older_than_every_line(const struct render_catalog *c, const char *component, int major,
                                  int minor)
{
    for (int i = 0; i < c->npkgs; i++) {
        const struct render_package *p = &c->pkgs[i];

        if (strcmp(p->component, component) == 0 &&
            (p->major < major || (p->major == major && p->minor <= minor)))
            return false;
    }
    return true;
}

static void known_lines(const struct render_catalog *c, const char *component, char *out,
                        size_t size);

bool render_catalog_line_retired(const struct render_catalog *c, const char *component,
                                 const char *version)
{
    int major, minor, patch;

    return component_known(c, component) &&
           render_version_parse(version, &major, &minor, &patch) == 0 &&
           older_than_every_line(c, component, major, minor);
}

void render_catalog_lines(const struct render_catalog *c, const char *component, char *out,
                          size_t size)
{
    known_lines(c, component, out, size);
}

static void known_lines(const struct render_catalog *c, const char *component, char *out,
                        size_t size)
{
    size_t used = 0;

    out[0] = '\0';
    for (int i = 0; i < c->npkgs && used < size; i++)
        if (strcmp(c->pkgs[i].component, component) == 0)
            used += (size_t)snprintf(out + used, size - used, "%s%s", used ? ", " : "",
                                     c->pkgs[i].line);
}

int render_catalog_resolve(const struct render_catalog *c, const char *component,
                           const char *version, const char *channel,
                           const struct render_package **ret_pkg,
                           char ret_version[static RENDER_VERSION_MAX], struct err *e)
{
    const struct render_package *p;
    const char *v = version;
    char known[256];
    int major, minor, patch;

    if (!component || !component_known(c, component))
        return err_set(e, -ENOENT, "no packages for component \"%s\"", component ? component : "");
    if (!v || !*v) {
        const char *name = channel && *channel ? channel : "stable";
        const struct channel *ch = NULL;
        if (!channel_name_ok(name))
            return err_set(e, -EINVAL, "channel \"%s\": a channel name is lower-case letters",
                           name);
        for (int i = 0; i < c->nchans; i++)
            if (strcmp(c->chans[i].name, name) == 0)
                ch = &c->chans[i];
        if (!ch)
            return err_set(e, -ENOENT, "channel \"%s\" does not exist", name);
        v = channel_latest(ch, component);
        if (!v)
            return err_set(e, -ENOENT, "channel \"%s\" lists no version of %s", name, component);
    }
    if (render_version_parse(v, &major, &minor, &patch) < 0 || patch < 0)
        return err_set(e, -EINVAL, "version \"%s\": want major.minor.patch, e.g. 1.36.3", v);
    p = render_catalog_package(c, component, v);
    if (!p) {
        known_lines(c, component, known, sizeof(known));
        if (older_than_every_line(c, component, major, minor))
            return err_set(e, -EOPNOTSUPP,
                           "version %d.%d.%d: %s %d.%d is no longer supported (supported lines: "
                           "%s); move to the oldest supported line one minor version at a "
                           "time, through every line in between",
                           major, minor, patch, component, major, minor, known);
        return err_set(e, -ENOENT,
                       "version %d.%d.%d: no %s package for %d.%d (supported lines: %s)", major,
                       minor, patch, component, major, minor, known);
    }
    snprintf(ret_version, RENDER_VERSION_MAX, "%d.%d.%d", major, minor, patch);
    *ret_pkg = p;
    return 0;
}

int render_catalog_versions(const struct render_catalog *c, cJSON **ret_versions)
{
    cJSON *out = cJSON_CreateObject();

    if (!out)
        return -ENOMEM;
    for (int i = 0; i < c->npkgs; i++) {
        const struct render_package *p = &c->pkgs[i];
        cJSON *comp = cJSON_GetObjectItemCaseSensitive(out, p->component), *pk, *chs;
        if (!comp) {
            comp = cJSON_AddObjectToObject(out, p->component);
            if (!comp || !cJSON_AddArrayToObject(comp, "packages") ||
                !(chs = cJSON_AddObjectToObject(comp, "channels")))
                goto oom;
            for (int j = 0; j < c->nchans; j++) {
                const char *v = channel_latest(&c->chans[j], p->component);
                if (v && !cJSON_AddStringToObject(chs, c->chans[j].name, v))
                    goto oom;
            }
        }
        pk = cJSON_GetObjectItemCaseSensitive(comp, "packages");
        if (!cJSON_AddItemToArray(pk, cJSON_CreateString(p->line)))
            goto oom;
    }
    *ret_versions = out;
    return 0;
oom:
    cJSON_Delete(out);
    return -ENOMEM;
}

const char *render_package_component(const struct render_package *p)
{
    return p->component;
}

const char *render_package_line(const struct render_package *p)
{
    return p->line;
}

const cJSON *render_package_metadata(const struct render_package *p)
{
    return p->meta;
}

bool render_package_knows_flag(const struct render_package *p, const char *flag)
{
    return names_find(&p->lists[RENDER_FLAGS], flag) >= 0;
}

bool render_package_knows_feature_gate(const struct render_package *p, const char *gate,
                                       int *ret_locked_to)
{
    const struct names *s = &p->lists[RENDER_FEATURE_GATES];
    long i = names_find(s, gate);

    if (i < 0)
        return false;
    if (ret_locked_to)
        *ret_locked_to = s->locked[i];
    return true;
}

size_t render_package_names(const struct render_package *p, enum render_names which,
                            const char *const **ret_names)
{
    *ret_names = p->lists[which].v;
    return p->lists[which].n;
}

int render_package_image(const struct render_package *p, const char *version, char *out,
                         size_t size)
{
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(p->meta, "image");
    const cJSON *repo = cJSON_GetObjectItemCaseSensitive(img, "repository");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(img, "tagPrefix");
    const cJSON *suf = cJSON_GetObjectItemCaseSensitive(img, "tagSuffix");
    int n = snprintf(out, size, "%s:%s%s%s", repo->valuestring,
                     cJSON_IsString(pre) ? pre->valuestring : "", version,
                     cJSON_IsString(suf) ? suf->valuestring : "");

    return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

int render_package_template_count(const struct render_package *p)
{
    return p->ntmpls;
}

const struct tmpl *render_package_template(const struct render_package *p, int i)
{
    return i >= 0 && i < p->ntmpls ? p->tmpls[i] : NULL;
}
