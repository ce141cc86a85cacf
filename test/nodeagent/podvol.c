#include "test/nodeagent/podvol.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util/strutil.h"
#include "test/nodeagent/podenv.h"
#include "test/nodeagent/podsec.h"

#define PODVOL_DEFAULT_MODE 0644
#define PODVOL_PATH_MAX 4096

/* The relative paths a volume's directory should hold. */
struct podvol_names {
    char **v;
    size_t n;
};

static int names_add(struct podvol_names *s, const char *name)
{
    char **v = realloc(s->v, (s->n + 1) * sizeof(*v));

    if (!v)
        return -ENOMEM;
    s->v = v;
    s->v[s->n] = strdup(name);
    if (!s->v[s->n])
        return -ENOMEM;
    s->n++;
    return 0;
}

static bool names_has(const struct podvol_names *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0)
            return true;
    return false;
}

static void names_done(struct podvol_names *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
}

int podvol_mkdir_p(const char *path, unsigned mode)
{
    char tmp[PODVOL_PATH_MAX];
    size_t len = strlen(path);

    if (len == 0 || len >= sizeof(tmp))
        return -ENAMETOOLONG;
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, mode) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static bool file_holds(const char *path, const void *data, size_t len, unsigned mode)
{
    struct stat st;
    char *have;
    bool same = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (fd < 0)
        return false;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len &&
        (st.st_mode & 07777) == mode) {
        have = malloc(len + 1);
        if (have && read(fd, have, len + 1) == (ssize_t)len)
            same = memcmp(have, data, len) == 0;
        free(have);
    }
    close(fd);
    return same;
}

int podvol_write_file(const char *path, const void *data, size_t len, unsigned mode)
{
    char tmp[PODVOL_PATH_MAX];
    const char *p = data;
    int fd, r = 0;

    if (file_holds(path, data, len, mode))
        return 0;
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid()) >= sizeof(tmp))
        return -ENAMETOOLONG;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = -errno;
            break;
        }
        p += n;
        len -= (size_t)n;
    }
    if (r == 0 && fchmod(fd, mode) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0)
        unlink(tmp);
    return r;
}

/* A path inside a volume: relative, not empty, no ".." component. */
static bool rel_path_ok(const char *p)
{
    if (!*p || *p == '/')
        return false;
    while (*p) {
        size_t n = strcspn(p, "/");

        if ((n == 2 && p[0] == '.' && p[1] == '.') || n == 0)
            return false;
        p += n;
        if (*p == '/')
            p++;
    }
    return true;
}

static int volume_source(const cJSON *vol, const struct podvol_dirs *dirs, char *out, size_t size)
{
    const char *name = podobj_str(vol, "name", NULL);
    const char *host = podobj_str(vol, "hostPath", "path", NULL);
    const char *claim_path;
    size_t n;

    if (!name || !rel_path_ok(name) || strchr(name, '/'))
        return -EINVAL;
    if (podobj_get(vol, "persistentVolumeClaim", NULL)) {
        claim_path = podobj_str(dirs->claims, name, NULL);
        if (!claim_path)
            return -ENOENT; /* not resolved: no bound PersistentVolume */
        n = (size_t)snprintf(out, size, "%s", claim_path);
    } else if (host) {
        if (host[0] != '/')
            return -EINVAL;
        n = (size_t)snprintf(out, size, "%s", host);
    } else if (podobj_get(vol, "secret", NULL) || podobj_get(vol, "configMap", NULL) ||
               podobj_get(vol, "projected", NULL) || podobj_get(vol, "emptyDir", NULL) ||
               podobj_get(vol, "downwardAPI", NULL)) {
        n = (size_t)snprintf(out, size, "%s/volumes/%s", dirs->pod_dir, name);
    } else {
        return -EOPNOTSUPP;
    }
    return n < size ? 0 : -ENAMETOOLONG;
}

/* ---- claims ---- */

static const char *claim_name(const cJSON *vol)
{
    return podobj_str(vol, "persistentVolumeClaim", "claimName", NULL) ?: "?";
}

/* The claim ns/claim may be mounted once it is Bound and not going away. */
static int claim_check(const cJSON *pvc, const char *ns, const char *claim, struct err *e)
{
    const char *phase = podobj_str(pvc, "status", "phase", NULL);

    if (podobj_get(pvc, "metadata", "deletionTimestamp", NULL))
        return err_set(e, -ENOENT, "PersistentVolumeClaim %s/%s is being deleted", ns, claim);
    if (!phase || strcmp(phase, "Bound") != 0 || !podobj_str(pvc, "spec", "volumeName", NULL))
        return err_set(e, -EAGAIN, "PersistentVolumeClaim %s/%s is not bound (phase %s)", ns, claim,
                       phase ? phase : "not set");
    return 0;
}

/* The host path of PersistentVolume pv, which must be bound to the claim ns/claim (uid). */
static int volume_path(const cJSON *pv, const char *ns, const char *claim, const char *uid,
                       const char **ret_path, struct err *e)
{
    const char *name = podobj_str(pv, "metadata", "name", NULL) ?: "?";
    const cJSON *ref = podobj_get(pv, "spec", "claimRef", NULL);
    const char *ref_ns = podobj_str(ref, "namespace", NULL);
    const char *ref_name = podobj_str(ref, "name", NULL);
    const char *ref_uid = podobj_str(ref, "uid", NULL);
    const char *path = podobj_str(pv, "spec", "hostPath", "path", NULL);

    if (podobj_get(pv, "metadata", "deletionTimestamp", NULL))
        return err_set(e, -ENOENT, "PersistentVolume %s of claim %s/%s is being deleted", name, ns,
                       claim);
    if (!ref_ns || !ref_name || strcmp(ref_ns, ns) != 0 || strcmp(ref_name, claim) != 0 ||
        (ref_uid && uid && strcmp(ref_uid, uid) != 0))
        return err_set(e, -EINVAL,
                       "PersistentVolume %s is bound to %s/%s (uid %s), not to "
                       "PersistentVolumeClaim %s/%s (uid %s)",
                       name, ref_ns ?: "-", ref_name ?: "-", ref_uid ?: "-", ns, claim, uid ?: "-");
    if (!path)
        path = podobj_str(pv, "spec", "local", "path", NULL);
    if (!path)
        return err_set(e, -EOPNOTSUPP,
                       "PersistentVolume %s of PersistentVolumeClaim %s/%s is neither hostPath "
                       "nor local: this node mounts no other volumes",
                       name, ns, claim);
    if (path[0] != '/')
        return err_set(e, -EINVAL, "PersistentVolume %s: path %s is not absolute", name, path);
    *ret_path = path;
    return 0;
}

static int resolve_claim(const cJSON *pod, const char *claim, podobj_resolve_fn resolve,
                         void *userdata, const char **ret_path, struct err *e)
{
    const char *ns = podobj_str(pod, "metadata", "namespace", NULL) ?: "default";
    const cJSON *pvc = NULL, *pv = NULL;
    const char *pv_name;
    int r;

    if (!rel_path_ok(claim) || strchr(claim, '/'))
        return err_set(e, -EINVAL, "bad claimName \"%s\"", claim);
    r = resolve ? resolve(userdata, "PersistentVolumeClaim", ns, claim, &pvc) : -ENOENT;
    if (r < 0)
        return err_set(e, r, "PersistentVolumeClaim %s/%s not found", ns, claim);
    r = claim_check(pvc, ns, claim, e);
    if (r < 0)
        return r;
    pv_name = podobj_str(pvc, "spec", "volumeName", NULL);
    r = resolve(userdata, "PersistentVolume", NULL, pv_name, &pv);
    if (r < 0)
        return err_set(e, r, "PersistentVolumeClaim %s/%s: its PersistentVolume %s not found", ns,
                       claim, pv_name);
    return volume_path(pv, ns, claim, podobj_str(pvc, "metadata", "uid", NULL), ret_path, e);
}

int podvol_claims_resolve(const cJSON *pod, podobj_resolve_fn resolve, void *userdata,
                          cJSON **ret_claims, struct err *e)
{
    cJSON *claims = cJSON_CreateObject();
    const cJSON *vol;
    int r = 0;

    if (!claims)
        return -ENOMEM;
    cJSON_ArrayForEach(vol, podobj_get(pod, "spec", "volumes", NULL)) {
        const char *name = podobj_str(vol, "name", NULL);
        const char *claim = podobj_str(vol, "persistentVolumeClaim", "claimName", NULL);
        const char *path = NULL;

        if (!podobj_get(vol, "persistentVolumeClaim", NULL))
            continue;
        if (!name || !claim)
            r = err_set(e, -EINVAL, "persistentVolumeClaim without a claimName");
        else
            r = resolve_claim(pod, claim, resolve, userdata, &path, e);
        if (r == 0 && !cJSON_AddStringToObject(claims, name, path))
            r = err_set(e, -ENOMEM, "out of memory");
        if (r < 0) {
            err_prefix(e, "volume %s: ", name ?: "?");
            cJSON_Delete(claims);
            return r;
        }
    }
    *ret_claims = claims;
    return 0;
}

/* A claim's directory is the PersistentVolume's: it must be there, and is never created. */
static int claim_dir_check(const char *dir, const char *claim, struct err *e)
{
    struct stat st;
    int r;

    if (stat(dir, &st) < 0) {
        r = -errno;
        return err_set(e, r, "claim %s: %s: %s", claim, dir, strerror(-r));
    }
    if (!S_ISDIR(st.st_mode))
        return err_set(e, -ENOTDIR, "claim %s: %s is not a directory", claim, dir);
    return 0;
}

static int write_key(const char *voldir, const char *rel, const char *data, size_t len,
                     unsigned mode, struct podvol_names *names)
{
    char path[PODVOL_PATH_MAX];
    char *slash;
    int r;

    if (!rel_path_ok(rel))
        return -EINVAL;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", voldir, rel) >= sizeof(path))
        return -ENAMETOOLONG;
    slash = strrchr(path, '/');
    *slash = '\0';
    r = podvol_mkdir_p(path, 0755);
    *slash = '/';
    if (r == 0)
        r = podvol_write_file(path, data, len, mode);
    if (r == 0)
        r = names_add(names, rel);
    return r;
}

/* Writes the keys of one Secret or ConfigMap source (a `secret`/`configMap` volume or a
 * projected source) into voldir. */
static int write_source(const cJSON *pod, const char *kind, const cJSON *src, unsigned def_mode,
                        const char *voldir, podobj_resolve_fn resolve, void *userdata,
                        struct podvol_names *names, struct err *e)
{
    const char *ns = podobj_str(pod, "metadata", "namespace", NULL) ?: "default";
    const char *name = podobj_str(src, strcmp(kind, "Secret") == 0 ? "secretName" : "name", NULL);
    const cJSON *obj = NULL, *items = podobj_get(src, "items", NULL), *item;
    bool optional = podobj_bool(src, "optional", false);
    /* Readable by the pod's fsGroup (own_volume sets the group). */
    bool fs_group = podsec_fs_group(pod, NULL) >= 0;
    int r;

    if (fs_group)
        def_mode |= 0440;

    if (!name && strcmp(kind, "Secret") == 0)
        name = podobj_str(src, "name", NULL); /* projected secret sources use `name` */
    if (!name)
        return err_set(e, -EINVAL, "%s source without a name", kind);
    r = resolve ? resolve(userdata, kind, ns, name, &obj) : -ENOENT;
    if (r == -ENOENT && optional)
        return 0;
    if (r < 0)
        return err_set(e, r, "%s %s/%s not found", kind, ns, name);
    if (cJSON_IsArray(items) && cJSON_GetArraySize(items) > 0) {
        cJSON_ArrayForEach(item, items) {
            const char *key = podobj_str(item, "key", NULL);
            const char *path = podobj_str(item, "path", NULL);
            unsigned mode = (unsigned)podobj_long(item, "mode", (long)def_mode) & 07777;

            if (fs_group)
                mode |= 0440;
            char *data = NULL;
            size_t len;

            if (!key || !path)
                return err_set(e, -EINVAL, "%s %s: item without key or path", kind, name);
            r = podobj_data_value(obj, kind, key, &data, &len);
            if (r == -ENOENT && optional)
                continue;
            if (r == -ENOENT)
                return err_set(e, r, "%s %s has no key %s", kind, name, key);
            if (r == 0)
                r = write_key(voldir, path, data, len, mode, names);
            free(data);
            if (r < 0)
                return err_set(e, r, "%s %s key %s -> %s: %s", kind, name, key, path, strerror(-r));
        }
        return 0;
    }
    for (int pass = 0; pass < 2; pass++) {
        const char *member = pass == 0 ? "data" : "binaryData";

        if (pass == 1 && strcmp(kind, "Secret") == 0)
            break;
        cJSON_ArrayForEach(item, podobj_get(obj, member, NULL)) {
            char *data = NULL;
            size_t len;

            r = podobj_data_value(obj, kind, item->string, &data, &len);
            if (r == 0)
                r = write_key(voldir, item->string, data, len, def_mode, names);
            free(data);
            if (r < 0)
                return err_set(e, r, "%s %s key %s: %s", kind, name, item->string, strerror(-r));
        }
    }
    return 0;
}

/* Writes a projected serviceAccountToken source: a token the owner requests for the pod's
 * ServiceAccount, bound to the pod, with the source's audience and lifetime (resolve's
 * "ServiceAccountToken"). Until the owner has one, -EAGAIN: the pod waits, as a kubelet's
 * does for its token. */
static int write_token(const cJSON *pod, const cJSON *src, unsigned mode, const char *voldir,
                       podobj_resolve_fn resolve, void *userdata, struct podvol_names *names,
                       struct err *e)
{
    const char *ns = podobj_str(pod, "metadata", "namespace", NULL) ?: "default";
    const char *name = podobj_str(pod, "metadata", "name", NULL);
    const char *uid = podobj_str(pod, "metadata", "uid", NULL) ?: "";
    const char *sa = podobj_str(pod, "spec", "serviceAccountName", NULL) ?: "default";
    const char *path = podobj_str(src, "path", NULL);
    const char *audience = podobj_str(src, "audience", NULL) ?: "";
    long lifetime = podobj_long(src, "expirationSeconds", 3600);
    const cJSON *obj = NULL;
    const char *token;
    char key[PODVOL_PATH_MAX];
    int r;

    if (!name || !path)
        return err_set(e, -EINVAL, "serviceAccountToken source without a path");
    if ((size_t)snprintf(key, sizeof(key), "%s/%s/%s/%ld/%s", name, uid, sa, lifetime, audience) >=
        sizeof(key))
        return err_set(e, -ENAMETOOLONG, "serviceAccountToken: audience too long");
    r = resolve ? resolve(userdata, "ServiceAccountToken", ns, key, &obj) : -ENOENT;
    if (r == -EAGAIN)
        return err_set(e, r, "a token of ServiceAccount %s/%s is being requested", ns, sa);
    if (r < 0)
        return err_set(e, r, "no token of ServiceAccount %s/%s: %s", ns, sa, strerror(-r));
    token = podobj_str(obj, "token", NULL);
    if (!token)
        return err_set(e, -EINVAL, "no token of ServiceAccount %s/%s", ns, sa);
    r = write_key(voldir, path, token, strlen(token), mode, names);
    return r < 0 ? err_set(e, r, "token -> %s: %s", path, strerror(-r)) : 0;
}

/* Writes a downwardAPI source (a projected source or a downwardAPI volume): one file per item,
 * the pod's own fields only (metadata.name, namespace, uid, labels['k'], annotations['k']). */
static int write_downward(const cJSON *pod, const cJSON *src, unsigned def_mode, const char *voldir,
                          struct podvol_names *names, struct err *e)
{
    const cJSON *item;
    int r;

    cJSON_ArrayForEach(item, podobj_get(src, "items", NULL)) {
        const char *path = podobj_str(item, "path", NULL);
        const char *field = podobj_str(item, "fieldRef", "fieldPath", NULL);
        unsigned mode = (unsigned)podobj_long(item, "mode", (long)def_mode) & 07777;
        char tmp[320]; /* a label or annotation key: 253 + 1 + 63 */
        const char *value = NULL;

        if (field && strncmp(field, "metadata.", 9) == 0)
            value = podenv_fieldref(pod, field, NULL, tmp, sizeof(tmp));
        if (!path || !value)
            return err_set(e, -EOPNOTSUPP, "downwardAPI item %s: only metadata fields",
                           path ? path : "?");
        r = write_key(voldir, path, value, strlen(value), mode, names);
        if (r < 0)
            return err_set(e, r, "downwardAPI %s: %s", path, strerror(-r));
    }
    return 0;
}

/* Removes the regular files under dir (relative path prefix rel) that names does not list. */
static void prune(const char *dir, const char *rel, const struct podvol_names *names)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    if (!d)
        return;
    while ((de = readdir(d))) {
        char path[PODVOL_PATH_MAX], sub[PODVOL_PATH_MAX];

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path) ||
            (size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name) >=
                sizeof(sub))
            continue;
        if (de->d_type == DT_DIR)
            prune(path, sub, names);
        else if (!names_has(names, sub))
            unlink(path);
    }
    closedir(d);
}

/* ---- fsGroup ---- */

/* What the kubelet gives a volume of a pod with an fsGroup (SetVolumeOwnership): every file
 * and directory in the group, readable by it (read-only volumes) or writable too, directories
 * searchable and set-group-ID so that what the pod creates stays in the group. Symbolic links
 * are left alone. */
static int own_tree(const char *path, gid_t gid, bool readonly, int depth)
{
    mode_t mask = readonly ? 0440 : 0660;
    struct stat st;
    DIR *d;
    struct dirent *de;
    int r = 0;

    if (depth > 64)
        return -ELOOP;
    if (lstat(path, &st) < 0)
        return -errno;
    if (S_ISLNK(st.st_mode))
        return 0;
    if (S_ISDIR(st.st_mode))
        mask |= S_ISGID | 0110;
    if (st.st_gid != gid && lchown(path, (uid_t)-1, gid) < 0)
        return -errno;
    if ((st.st_mode & mask) != mask && chmod(path, (st.st_mode & 07777) | mask) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return 0;
    d = opendir(path);
    if (!d)
        return -errno;
    while (r == 0 && (de = readdir(d))) {
        char sub[PODVOL_PATH_MAX];

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >= sizeof(sub))
            r = -ENAMETOOLONG;
        else
            r = own_tree(sub, gid, readonly, depth + 1);
    }
    closedir(d);
    return r;
}

/* Applies the pod's fsGroup to a volume's directory; with fsGroupChangePolicy OnRootMismatch,
 * only when the directory itself is not in the group with the group's rights yet. */
static int own_volume(const cJSON *pod, const char *dir, bool readonly, struct err *e)
{
    bool on_root_mismatch;
    long gid = podsec_fs_group(pod, &on_root_mismatch);
    mode_t want = (readonly ? 0550 : 0770) | S_ISGID;
    struct stat st;
    int r;

    if (gid < 0)
        return 0;
    if (on_root_mismatch && stat(dir, &st) == 0 && st.st_gid == (gid_t)gid &&
        (st.st_mode & want) == want)
        return 0;
    r = own_tree(dir, (gid_t)gid, readonly, 0);
    return r < 0 ? err_set(e, r, "fsGroup %ld on %s: %s", gid, dir, strerror(-r)) : 0;
}

static int prepare_volume(const cJSON *pod, const cJSON *vol, const struct podvol_dirs *dirs,
                          podobj_resolve_fn resolve, void *userdata, struct err *e)
{
    struct podvol_names names = {NULL, 0};
    char dir[PODVOL_PATH_MAX];
    const cJSON *src;
    int r = volume_source(vol, dirs, dir, sizeof(dir));

    if (r == -EOPNOTSUPP)
        return err_set(e, r, "this node runs no volumes of this type");
    if (r == -ENOENT)
        return err_set(e, r, "claim %s has no bound PersistentVolume", claim_name(vol));
    if (r < 0)
        return err_set(e, r, "bad volume name or path");
    if (podobj_get(vol, "persistentVolumeClaim", NULL)) {
        /* As a CSI volume with fsGroupPolicy File gets it; a real kubelet leaves a hostPath
         * PersistentVolume as it is, but here a claim stands for any provisioned volume. */
        r = claim_dir_check(dir, claim_name(vol), e);
        return r < 0 ? r : own_volume(pod, dir, false, e);
    }
    if (podobj_get(vol, "hostPath", NULL)) {
        const char *type = podobj_str(vol, "hostPath", "type", NULL);

        if (type && strcmp(type, "DirectoryOrCreate") == 0)
            r = podvol_mkdir_p(dir, 0755);
        return r < 0 ? err_set(e, r, "hostPath %s: %s", dir, strerror(-r)) : 0;
    }
    if (podobj_get(vol, "emptyDir", NULL)) {
        /* World-writable, as the kubelet makes it, whoever the pod runs as. */
        r = podvol_mkdir_p(dir, 0777);
        if (r == 0 && chmod(dir, 0777) < 0)
            r = -errno;
        if (r < 0)
            return err_set(e, r, "%s: %s", dir, strerror(-r));
        return own_volume(pod, dir, false, e);
    }
    r = podvol_mkdir_p(dir, 0755);
    if (r < 0)
        return err_set(e, r, "%s: %s", dir, strerror(-r));
    if ((src = podobj_get(vol, "secret", NULL)) || (src = podobj_get(vol, "configMap", NULL))) {
        const char *kind = podobj_get(vol, "secret", NULL) ? "Secret" : "ConfigMap";
        unsigned mode = (unsigned)podobj_long(src, "defaultMode", PODVOL_DEFAULT_MODE) & 07777;

        r = write_source(pod, kind, src, mode, dir, resolve, userdata, &names, e);
    } else if ((src = podobj_get(vol, "projected", NULL))) {
        unsigned mode = (unsigned)podobj_long(src, "defaultMode", PODVOL_DEFAULT_MODE) & 07777;
        const cJSON *s;

        cJSON_ArrayForEach(s, podobj_get(src, "sources", NULL)) {
            const cJSON *sec = podobj_get(s, "secret", NULL);
            const cJSON *cm = podobj_get(s, "configMap", NULL);
            const cJSON *token = podobj_get(s, "serviceAccountToken", NULL);
            const cJSON *downward = podobj_get(s, "downwardAPI", NULL);

            if (sec || cm)
                r = write_source(pod, sec ? "Secret" : "ConfigMap", sec ? sec : cm, mode, dir,
                                 resolve, userdata, &names, e);
            else if (token)
                r = write_token(pod, token, mode, dir, resolve, userdata, &names, e);
            else if (downward)
                r = write_downward(pod, downward, mode, dir, &names, e);
            else
                r = err_set(e, -EOPNOTSUPP, "projected: a source of an unsupported kind");
            if (r < 0)
                break;
        }
    } else if ((src = podobj_get(vol, "downwardAPI", NULL))) {
        unsigned mode = (unsigned)podobj_long(src, "defaultMode", PODVOL_DEFAULT_MODE) & 07777;

        r = write_downward(pod, src, mode, dir, &names, e);
    }
    if (r == 0)
        prune(dir, "", &names);
    if (r == 0)
        r = own_volume(pod, dir, true, e);
    names_done(&names);
    return r;
}

int podvol_prepare(const cJSON *pod, const struct podvol_dirs *dirs, podobj_resolve_fn resolve,
                   void *userdata, struct err *e)
{
    const cJSON *vol;
    int r;

    cJSON_ArrayForEach(vol, podobj_get(pod, "spec", "volumes", NULL)) {
        r = prepare_volume(pod, vol, dirs, resolve, userdata, e);
        if (r < 0) {
            err_prefix(e, "volume %s: ", podobj_str(vol, "name", NULL) ?: "?");
            return r;
        }
    }
    return 0;
}

static int depth(const char *p)
{
    int n = 0;

    for (; *p; p++)
        n += *p == '/';
    return n;
}

static int mount_cmp(const void *a, const void *b)
{
    const struct podvol_mount *x = a, *y = b;

    return depth(x->target) - depth(y->target);
}

void podvol_mounts_free(struct podvol_mount *mounts, size_t n)
{
    if (!mounts)
        return;
    for (size_t i = 0; i < n; i++) {
        free(mounts[i].source);
        free(mounts[i].target);
    }
    free(mounts);
}

static const cJSON *find_volume(const cJSON *pod, const char *name)
{
    const cJSON *vol;

    cJSON_ArrayForEach(vol, podobj_get(pod, "spec", "volumes", NULL)) {
        const char *n = podobj_str(vol, "name", NULL);

        if (n && strcmp(n, name) == 0)
            return vol;
    }
    return NULL;
}

int podvol_mounts(const cJSON *pod, const cJSON *container, const struct podvol_dirs *dirs,
                  const char *hosts_path, struct podvol_mount **ret_mounts, size_t *ret_n,
                  struct err *e)
{
    const cJSON *vm, *list = podobj_get(container, "volumeMounts", NULL);
    size_t n = 0, max = (size_t)cJSON_GetArraySize(list) + 1;
    struct podvol_mount *m = calloc(max, sizeof(*m));
    bool hosts_mounted = false;
    int r = -ENOMEM;

    if (!m)
        return -ENOMEM;
    cJSON_ArrayForEach(vm, list) {
        const char *name = podobj_str(vm, "name", NULL);
        const char *target = podobj_str(vm, "mountPath", NULL);
        const char *sub = podobj_str(vm, "subPath", NULL);
        const cJSON *vol = name ? find_volume(pod, name) : NULL;
        char src[PODVOL_PATH_MAX];

        if (!vol || !target || target[0] != '/') {
            r = err_set(e, -EINVAL, "volumeMount %s: no such volume or a relative mountPath",
                        name ? name : "?");
            goto fail;
        }
        r = volume_source(vol, dirs, src, sizeof(src));
        if (r == -ENOENT) {
            err_set(e, r, "volumeMount %s: claim %s has no bound PersistentVolume", name,
                    claim_name(vol));
            goto fail;
        }
        if (r < 0) {
            err_set(e, r, "volumeMount %s: volume cannot be provided", name);
            goto fail;
        }
        /* Checked at each start: a missing source would be made up by the mount. */
        if (podobj_get(vol, "persistentVolumeClaim", NULL) &&
            (r = claim_dir_check(src, claim_name(vol), e)) < 0) {
            err_prefix(e, "volumeMount %s: ", name);
            goto fail;
        }
        if (sub && *sub) {
            size_t len = strlen(src);

            if (!rel_path_ok(sub) ||
                (size_t)snprintf(src + len, sizeof(src) - len, "/%s", sub) >= sizeof(src) - len) {
                r = err_set(e, -EINVAL, "volumeMount %s: bad subPath %s", name, sub);
                goto fail;
            }
        }
        if (strcmp(target, "/etc/hosts") == 0)
            hosts_mounted = true;
        m[n].source = strdup(src);
        m[n].target = strdup(target);
        /* A claim mounted readOnly is read-only in every container, as with the kubelet. */
        m[n].readonly =
            podobj_bool(vm, "readOnly", false) ||
            podobj_bool(podobj_get(vol, "persistentVolumeClaim", NULL), "readOnly", false);
        n++;
        if (!m[n - 1].source || !m[n - 1].target) {
            r = -ENOMEM;
            goto fail;
        }
    }
    if (hosts_path && !hosts_mounted) {
        m[n].source = strdup(hosts_path);
        m[n].target = strdup("/etc/hosts");
        n++;
        if (!m[n - 1].source || !m[n - 1].target) {
            r = -ENOMEM;
            goto fail;
        }
    }
    qsort(m, n, sizeof(*m), mount_cmp);
    *ret_mounts = m;
    *ret_n = n;
    return 0;
fail:
    podvol_mounts_free(m, n);
    return r;
}
