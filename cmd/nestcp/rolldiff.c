#include "cmd/nestcp/rolldiff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HASH_ANNOTATION "nestcp.x-k8s.io/config-hash"
#define CERTS_VOLUME "certs"

const char *rolldiff_kind_name(enum rolldiff_kind kind)
{
    switch (kind) {
    case ROLLDIFF_VERSION:
        return "version";
    case ROLLDIFF_FLAG:
        return "flag";
    case ROLLDIFF_CERTIFICATES:
        return "certificates";
    case ROLLDIFF_FIELD:
        return "field";
    }
    return "unknown";
}

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void add(struct rolldiff *d, enum rolldiff_kind kind, const char *container,
                const char *what, const char *from, const char *to)
{
    struct rolldiff_change *c;

    for (size_t i = 0; i < d->n; i++)
        if (d->changes[i].kind == kind && strcmp(d->changes[i].what, what) == 0 &&
            strcmp(d->changes[i].container, container ? container : "") == 0)
            return;
    if (d->n == ROLLDIFF_MAX) {
        d->more++;
        return;
    }
    c = &d->changes[d->n++];
    c->kind = kind;
    snprintf(c->container, sizeof(c->container), "%s", container ? container : "");
    snprintf(c->what, sizeof(c->what), "%s", what);
    snprintf(c->from, sizeof(c->from), "%s", from ? from : ROLLDIFF_UNSET);
    snprintf(c->to, sizeof(c->to), "%s", to ? to : ROLLDIFF_UNSET);
}

/* The element of a named list (containers, volumes, env) called name, or NULL. */
static const cJSON *named(const cJSON *list, const char *name)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, list) {
        const char *n = str(o, "name");
        if (n && name && strcmp(n, name) == 0)
            return o;
    }
    return NULL;
}

/* The tag of an image reference ("registry.k8s.io/kube-apiserver:v1.36.3" -> "v1.36.3"), else
 * the whole reference. */
static const char *tag_of(const char *image)
{
    const char *colon = image ? strrchr(image, ':') : NULL;

    return colon && !strchr(colon, '/') ? colon + 1 : image;
}

/* The value of flag name (with its dashes) among a container's command and args: NULL when
 * absent, "" when it has no "=value"; repeated flags keep the last. */
static const char *flag_value(const cJSON *container, const char *name, size_t len)
{
    static const char *const lists[] = {"command", "args"};
    const char *found = NULL;

    for (size_t l = 0; l < 2; l++) {
        const cJSON *a;
        cJSON_ArrayForEach(a, get(container, lists[l])) {
            const char *s = cJSON_IsString(a) ? a->valuestring : NULL;
            if (s && strncmp(s, name, len) == 0 && (s[len] == '=' || s[len] == '\0'))
                found = s[len] == '=' ? s + len + 1 : "";
        }
    }
    return found;
}

/* Every flag of from that to lacks or sets to another value (to == NULL: absent). */
static void diff_flags(struct rolldiff *d, const char *cname, const cJSON *rendered,
                       const cJSON *running, bool removed_only)
{
    static const char *const lists[] = {"command", "args"};

    for (size_t l = 0; l < 2; l++) {
        const cJSON *a;
        cJSON_ArrayForEach(a, get(removed_only ? running : rendered, lists[l])) {
            const char *s = cJSON_IsString(a) ? a->valuestring : NULL;
            char name[192];
            size_t len;
            const char *mine, *theirs;

            if (!s || strncmp(s, "--", 2) != 0)
                continue;
            len = strcspn(s, "=");
            if (len >= sizeof(name))
                continue;
            memcpy(name, s, len);
            name[len] = '\0';
            mine = flag_value(removed_only ? running : rendered, name, len);
            theirs = flag_value(removed_only ? rendered : running, name, len);
            /* Only the last occurrence of a repeated flag is reported. */
            if (s[len] == '=' ? strcmp(mine, s + len + 1) != 0 : mine[0] != '\0')
                continue;
            if (removed_only && !theirs)
                add(d, ROLLDIFF_FLAG, cname, name, mine, NULL);
            else if (!removed_only && (!theirs || strcmp(theirs, mine) != 0))
                add(d, ROLLDIFF_FLAG, cname, name, theirs, mine);
        }
    }
}

/* Whether a positional word (not a --flag) differs between the two containers. */
static bool words_differ(const cJSON *a, const cJSON *b)
{
    static const char *const lists[] = {"command", "args"};

    for (size_t l = 0; l < 2; l++) {
        const cJSON *x = get(a, lists[l]) ? get(a, lists[l])->child : NULL;
        const cJSON *y = get(b, lists[l]) ? get(b, lists[l])->child : NULL;
        for (;;) {
            while (x && cJSON_IsString(x) && strncmp(x->valuestring, "--", 2) == 0)
                x = x->next;
            while (y && cJSON_IsString(y) && strncmp(y->valuestring, "--", 2) == 0)
                y = y->next;
            if (!x || !y) {
                if (x || y)
                    return true;
                break;
            }
            if (!cJSON_Compare(x, y, true))
                return true;
            x = x->next;
            y = y->next;
        }
    }
    return false;
}

static void json_text(const cJSON *v, char *out, size_t size)
{
    char *s;

    if (!v) {
        snprintf(out, size, "%s", ROLLDIFF_UNSET);
        return;
    }
    if (cJSON_IsString(v)) {
        snprintf(out, size, "%s", v->valuestring);
        return;
    }
    s = cJSON_PrintUnformatted(v);
    snprintf(out, size, "%s", s ? s : "?");
    free(s);
}

/* Whether path names one container ("....containers[name]"). */
static bool is_container(const char *path)
{
    const char *c = strstr(path, ".containers[");
    size_t n = strlen(path);

    while (c && strstr(c + 1, ".containers["))
        c = strstr(c + 1, ".containers[");
    return c && n > 0 && path[n - 1] == ']' && !strchr(c + 12, '.');
}

/* Fields compared as versions, flags and certificates, and the config hash itself. */
static bool skipped(const char *path, const char *key)
{
    if (is_container(path))
        return strcmp(key, "image") == 0 || strcmp(key, "command") == 0 || strcmp(key, "args") == 0;
    if (strstr(path, ".volumes[" CERTS_VOLUME "]"))
        return strcmp(key, "secret") == 0;
    return strcmp(key, HASH_ANNOTATION) == 0;
}

/* Every value the rendered node sets that the running one does not have, by path. */
static void diff_fields(struct rolldiff *d, const cJSON *r, const cJSON *l, const char *path)
{
    char sub[512], from[256], to[256];
    const cJSON *c;

    if (cJSON_IsObject(r) && cJSON_IsObject(l)) {
        cJSON_ArrayForEach(c, r) {
            if (skipped(path, c->string))
                continue;
            snprintf(sub, sizeof(sub), "%s.%s", path, c->string);
            diff_fields(d, c, get(l, c->string), sub);
        }
        return;
    }
    if (cJSON_IsArray(r) && cJSON_IsArray(l) && r->child && cJSON_IsObject(r->child) &&
        str(r->child, "name")) {
        cJSON_ArrayForEach(c, r) {
            snprintf(sub, sizeof(sub), "%s[%s]", path, str(c, "name") ? str(c, "name") : "?");
            diff_fields(d, c, named(l, str(c, "name")), sub);
        }
        cJSON_ArrayForEach(c, l) {
            if (named(r, str(c, "name")))
                continue;
            snprintf(sub, sizeof(sub), "%s[%s]", path, str(c, "name") ? str(c, "name") : "?");
            add(d, ROLLDIFF_FIELD, NULL, sub, "(present)", NULL);
        }
        return;
    }
    if (cJSON_IsArray(r) && cJSON_IsArray(l) && cJSON_GetArraySize(r) == cJSON_GetArraySize(l)) {
        int i = 0;
        const cJSON *lc = l->child;
        cJSON_ArrayForEach(c, r) {
            snprintf(sub, sizeof(sub), "%s[%d]", path, i++);
            diff_fields(d, c, lc, sub);
            lc = lc ? lc->next : NULL;
        }
        return;
    }
    if (l && cJSON_Compare(r, l, true))
        return;
    json_text(l, from, sizeof(from));
    json_text(r, to, sizeof(to));
    add(d, ROLLDIFF_FIELD, NULL, path, from, to);
}

int rolldiff_statefulset(const cJSON *rendered, const cJSON *running, struct rolldiff *ret)
{
    const cJSON *rt = get(get(rendered, "spec"), "template");
    const cJSON *lt = get(get(running, "spec"), "template");
    const char *rh = str(get(get(rt, "metadata"), "annotations"), HASH_ANNOTATION);
    const char *lh = str(get(get(lt, "metadata"), "annotations"), HASH_ANNOTATION);
    const cJSON *c, *rv, *lv;

    memset(ret, 0, sizeof(*ret));
    if (!cJSON_IsObject(rt))
        return -EINVAL;
    snprintf(ret->rendered_hash, sizeof(ret->rendered_hash), "%s", rh ? rh : "");
    snprintf(ret->running_hash, sizeof(ret->running_hash), "%s", lh ? lh : "");
    ret->roll = !rh || !lh || strcmp(rh, lh) != 0;
    if (!ret->roll)
        return 0;
    cJSON_ArrayForEach(c, get(get(rt, "spec"), "containers")) {
        const char *name = str(c, "name");
        const cJSON *lc = named(get(get(lt, "spec"), "containers"), name);
        const char *ri = str(c, "image"), *li = str(lc, "image");

        if (!lc)
            continue; /* a new container: reported as a field below */
        if (ri && (!li || strcmp(ri, li) != 0))
            add(ret, ROLLDIFF_VERSION, name, name, tag_of(li), tag_of(ri));
        diff_flags(ret, name, c, lc, false);
        diff_flags(ret, name, c, lc, true);
        if (words_differ(c, lc))
            add(ret, ROLLDIFF_FIELD, name, "command", "(other words)", "(other words)");
    }
    rv = named(get(get(rt, "spec"), "volumes"), CERTS_VOLUME);
    lv = named(get(get(lt, "spec"), "volumes"), CERTS_VOLUME);
    {
        const char *rs = str(get(rv, "secret"), "secretName"),
                   *ls = str(get(lv, "secret"), "secretName");
        if ((rs || ls) && (!rs || !ls || strcmp(rs, ls) != 0))
            add(ret, ROLLDIFF_CERTIFICATES, NULL, "certs", ls, rs);
    }
    diff_fields(ret, rt, lt, "spec.template");
    return 0;
}
