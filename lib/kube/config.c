#include "lib/kube/config.h"
#include "lib/kube/config_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/util/buf.h"
#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount/"
#define TOKEN_RECHECK_SECONDS 60.0

void kube_config_free(struct kube_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->server);
    free(cfg->ca_pem);
    free(cfg->ca_file);
    free(cfg->cert_pem);
    if (cfg->key_pem)
        explicit_bzero(cfg->key_pem, cfg->key_len);
    free(cfg->key_pem);
    if (cfg->token)
        explicit_bzero(cfg->token, strlen(cfg->token));
    free(cfg->token);
    free(cfg->token_file);
    free(cfg->namespace_);
    free(cfg->origin);
    free(cfg);
}

static int dup_mem(const char *src, size_t len, char **ret)
{
    char *d;

    if (!src) {
        *ret = NULL;
        return 0;
    }
    d = malloc(len + 1);
    if (!d)
        return -ENOMEM;
    memcpy(d, src, len);
    d[len] = '\0';
    *ret = d;
    return 0;
}

struct kube_config *kube_config_dup(const struct kube_config *cfg)
{
    struct kube_config *d = calloc(1, sizeof(*d));

    if (!d)
        return NULL;
    *d = *cfg;
    d->server = d->ca_pem = d->ca_file = d->cert_pem = d->key_pem = d->token = d->token_file = NULL;
    d->namespace_ = d->origin = NULL;
    if (dup_mem(cfg->ca_pem, cfg->ca_len, &d->ca_pem) < 0 ||
        dup_mem(cfg->cert_pem, cfg->cert_len, &d->cert_pem) < 0 ||
        dup_mem(cfg->key_pem, cfg->key_len, &d->key_pem) < 0)
        goto fail;
    if ((cfg->server && !(d->server = strdup(cfg->server))) ||
        (cfg->token && !(d->token = strdup(cfg->token))) ||
        (cfg->token_file && !(d->token_file = strdup(cfg->token_file))) ||
        (cfg->ca_file && !(d->ca_file = strdup(cfg->ca_file))) ||
        (cfg->namespace_ && !(d->namespace_ = strdup(cfg->namespace_))) ||
        (cfg->origin && !(d->origin = strdup(cfg->origin))))
        goto fail;
    return d;
fail:
    kube_config_free(d);
    return NULL;
}

/* Decodes standard base64, ignoring whitespace. Returns 0 or -EINVAL/-ENOMEM. */
static int base64_decode(const char *in, char **ret, size_t *ret_len)
{
    size_t n = strlen(in), o = 0;
    unsigned acc = 0;
    int bits = 0, pad = 0;
    char *out = malloc(n / 4 * 3 + 4);

    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)in[i];
        int v;

        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
            continue;
        if (ch == '=') {
            pad++;
            continue;
        }
        if (pad)
            goto bad; /* data after padding */
        if (ch >= 'A' && ch <= 'Z')
            v = ch - 'A';
        else if (ch >= 'a' && ch <= 'z')
            v = ch - 'a' + 26;
        else if (ch >= '0' && ch <= '9')
            v = ch - '0' + 52;
        else if (ch == '+')
            v = 62;
        else if (ch == '/')
            v = 63;
        else
            goto bad;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (pad > 2 || bits >= 6)
        goto bad;
    out[o] = '\0';
    *ret = out;
    *ret_len = o;
    return 0;
bad:
    free(out);
    return -EINVAL;
}

static int resolve_path(const char *base_dir, const char *p, char **ret)
{
    struct buf b;

    buf_init(&b, 0);
    if (p[0] == '/' || !base_dir || !base_dir[0]) {
        if (buf_puts(&b, p) < 0)
            goto oom;
    } else if (buf_printf(&b, "%s/%s", base_dir, p) < 0) {
        goto oom;
    }
    *ret = buf_steal(&b);
    return *ret ? 0 : -ENOMEM;
oom:
    buf_done(&b);
    return -ENOMEM;
}

/* Reads a PEM file or decodes *-data. Exactly one of (file, data) is non-NULL. */
static int load_blob(const char *origin, const char *where, const char *field, const char *base_dir,
                     const char *file, const char *data, char **ret, size_t *ret_len, struct err *e)
{
    char *path = NULL;
    int r;

    if (data) {
        r = base64_decode(data, ret, ret_len);
        if (r == -EINVAL)
            return err_set(e, r, "%s: %s.%s-data: not valid base64", origin, where, field);
        return r;
    }
    r = resolve_path(base_dir, file, &path);
    if (r < 0)
        return r;
    r = util_read_file(path, KUBE_CONFIG_FILE_MAX, ret, ret_len);
    if (r < 0)
        err_set(e, r, "%s: %s.%s: cannot read %s: %s", origin, where, field, path, strerror(-r));
    free(path);
    return r;
}

/* The first entry called name in the list `list` (contexts, clusters, users) of the sources in
 * order: kubectl's merge keeps the first definition of a name and ignores later ones. Returns
 * false when no source defines it; otherwise sets *ret_src, *ret_index (the entry's position in
 * its source's list) and *ret_inner (its `inner` field, NULL if absent). */
static bool find_named(const struct kube_config_source *src, size_t n, const char *list,
                       const char *name, const char *inner,
                       const struct kube_config_source **ret_src, int *ret_index,
                       const cJSON **ret_inner)
{
    for (size_t s = 0; s < n; s++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(src[s].doc, list), *it;
        int i = 0;

        cJSON_ArrayForEach(it, arr) {
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");

            if (cJSON_IsString(nm) && strcmp(nm->valuestring, name) == 0) {
                *ret_src = &src[s];
                *ret_index = i;
                *ret_inner = cJSON_GetObjectItemCaseSensitive(it, inner);
                return true;
            }
            i++;
        }
    }
    return false;
}

/* A string field of obj: 0 and *ret (borrowed, NULL if absent), or -EINVAL if not a string. */
static int get_str(const cJSON *obj, const char *key, const char **ret)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    *ret = NULL;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v))
        return -EINVAL;
    *ret = v->valuestring;
    return 0;
}

#define GET_STR(origin_, obj_, key_, ret_, where_)                                                 \
    do {                                                                                           \
        if (get_str(obj_, key_, ret_) < 0) {                                                       \
            r = err_set(e, -EINVAL, "%s: %s.%s: must be a string", origin_, where_, key_);         \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* Remembers ca_file as it is now: it was just read. */
static void ca_file_seen(struct kube_config *cfg)
{
    struct stat st;

    if (stat(cfg->ca_file, &st) < 0)
        return;
    cfg->ca_mtime = st.st_mtim;
    cfg->ca_size = st.st_size;
    cfg->ca_ino = (unsigned long long)st.st_ino;
}

/* True when pem holds at least one certificate and nothing that fails to parse as one. */
static bool ca_bundle_valid(const char *pem, size_t len)
{
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    int n = 0;
    X509 *x;

    if (!b)
        return false;
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
        X509_free(x);
        n++;
    }
    /* The loop ends at the end of the text (PEM_R_NO_START_LINE) or at a damaged block. */
    if (ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE)
        n = 0;
    ERR_clear_error();
    BIO_free(b);
    return n > 0;
}

int kube_config_ca(struct kube_config *cfg, struct err *e)
{
    struct stat st;
    char *text = NULL;
    size_t len = 0;
    int r;

    if (!cfg->ca_file)
        return 0;
    if (stat(cfg->ca_file, &st) < 0) {
        r = -errno;
        /* Reported once; a file being swapped in comes back, and is looked at then. */
        if (cfg->ca_ino == 0)
            return 0;
        cfg->ca_ino = 0;
        return err_set(e, r, "CA file %s: %s; keeping the previous one", cfg->ca_file,
                       strerror(-r));
    }
    if (st.st_mtim.tv_sec == cfg->ca_mtime.tv_sec && st.st_mtim.tv_nsec == cfg->ca_mtime.tv_nsec &&
        st.st_size == cfg->ca_size && (unsigned long long)st.st_ino == cfg->ca_ino)
        return 0;
    /* Whatever happens below, this version of the file has been looked at. */
    cfg->ca_mtime = st.st_mtim;
    cfg->ca_size = st.st_size;
    cfg->ca_ino = (unsigned long long)st.st_ino;
    r = util_read_file(cfg->ca_file, KUBE_CONFIG_FILE_MAX, &text, &len);
    if (r < 0)
        return err_set(e, r, "CA file %s: %s", cfg->ca_file, strerror(-r));
    if (!ca_bundle_valid(text, len)) {
        free(text);
        return err_set(e, -EINVAL,
                       "CA file %s: not a PEM bundle of certificates; keeping the "
                       "previous one",
                       cfg->ca_file);
    }
    if (cfg->ca_pem && len == cfg->ca_len && memcmp(text, cfg->ca_pem, len) == 0) {
        free(text);
        return 0;
    }
    free(cfg->ca_pem);
    cfg->ca_pem = text;
    cfg->ca_len = len;
    cfg->ca_generation++;
    return 1;
}

static int parse_cluster(const cJSON *cluster, const char *where, const char *origin,
                         const char *base_dir, struct kube_config *cfg, struct err *e)
{
    const char *server, *ca_file, *ca_data;
    const cJSON *skip;
    int r = 0;

    if (!cJSON_IsObject(cluster))
        return err_set(e, -EINVAL, "%s: %s: missing or not a mapping", origin, where);
    GET_STR(origin, cluster, "server", &server, where);
    GET_STR(origin, cluster, "certificate-authority", &ca_file, where);
    GET_STR(origin, cluster, "certificate-authority-data", &ca_data, where);
    skip = cJSON_GetObjectItemCaseSensitive(cluster, "insecure-skip-tls-verify");
    if (cJSON_IsTrue(skip))
        return err_set(e, -EOPNOTSUPP,
                       "%s: %s.insecure-skip-tls-verify: not supported: TLS is always verified",
                       origin, where);
    if (!server || !server[0])
        return err_set(e, -EINVAL, "%s: %s.server: missing", origin, where);
    if (!str_has_prefix(server, "https://"))
        return err_set(e, -EINVAL, "%s: %s.server: \"%s\" is not an https:// URL", origin, where,
                       server);
    cfg->server = strdup(server);
    if (!cfg->server)
        return -ENOMEM;
    while (str_has_suffix(cfg->server, "/") && strlen(cfg->server) > strlen("https://"))
        cfg->server[strlen(cfg->server) - 1] = '\0';
    if (ca_data || ca_file) {
        r = load_blob(origin, where, "certificate-authority", base_dir, ca_data ? NULL : ca_file,
                      ca_data, &cfg->ca_pem, &cfg->ca_len, e);
        if (r < 0)
            goto out;
        if (!strstr(cfg->ca_pem, "-----BEGIN CERTIFICATE-----")) {
            r = err_set(e, -EINVAL, "%s: %s.certificate-authority%s: no PEM certificate found",
                        origin, where, ca_data ? "-data" : "");
            goto out;
        }
        if (!ca_data) {
            r = resolve_path(base_dir, ca_file, &cfg->ca_file);
            if (r == 0)
                ca_file_seen(cfg);
        }
    }
out:
    return r;
}

static int parse_user(const cJSON *user, const char *where, const char *origin,
                      const char *base_dir, struct kube_config *cfg, struct err *e)
{
    static const char *const unsupported[] = {"exec", "auth-provider", "username", "password"};
    const char *cert_file, *cert_data, *key_file, *key_data, *token, *token_file;
    int r = 0;

    if (!cJSON_IsObject(user))
        return err_set(e, -EINVAL, "%s: %s: missing or not a mapping", origin, where);
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
        if (cJSON_GetObjectItemCaseSensitive(user, unsupported[i]))
            return err_set(e, -EOPNOTSUPP, "%s: %s.%s: not supported", origin, where,
                           unsupported[i]);
    GET_STR(origin, user, "client-certificate", &cert_file, where);
    GET_STR(origin, user, "client-certificate-data", &cert_data, where);
    GET_STR(origin, user, "client-key", &key_file, where);
    GET_STR(origin, user, "client-key-data", &key_data, where);
    GET_STR(origin, user, "token", &token, where);
    GET_STR(origin, user, "tokenFile", &token_file, where);
    if (!!(cert_file || cert_data) != !!(key_file || key_data))
        return err_set(e, -EINVAL, "%s: %s: client-certificate and client-key must be set together",
                       origin, where);
    if (cert_file || cert_data) {
        r = load_blob(origin, where, "client-certificate", base_dir, cert_data ? NULL : cert_file,
                      cert_data, &cfg->cert_pem, &cfg->cert_len, e);
        if (r < 0)
            goto out;
        r = load_blob(origin, where, "client-key", base_dir, key_data ? NULL : key_file, key_data,
                      &cfg->key_pem, &cfg->key_len, e);
        if (r < 0)
            goto out;
        if (!strstr(cfg->cert_pem, "-----BEGIN CERTIFICATE-----"))
            return err_set(e, -EINVAL, "%s: %s.client-certificate%s: no PEM certificate found",
                           origin, where, cert_data ? "-data" : "");
        if (!strstr(cfg->key_pem, "PRIVATE KEY-----"))
            return err_set(e, -EINVAL, "%s: %s.client-key%s: no PEM private key found", origin,
                           where, key_data ? "-data" : "");
    }
    if (token_file) {
        r = resolve_path(base_dir, token_file, &cfg->token_file);
        if (r < 0)
            goto out;
        r = kube_config_token(cfg, &token, e);
        if (r < 0) {
            err_prefix(e, "%s: %s.tokenFile: ", origin, where);
            goto out;
        }
    } else if (token) {
        cfg->token = strdup(token);
        if (!cfg->token)
            return -ENOMEM;
    }
out:
    return r;
}

/* Checks, in one source, the top-level fields a merge reads: kubectl refuses a file in which
 * they have the wrong type even when another file defines what is used. */
static int check_source(const struct kube_config_source *s, struct err *e)
{
    static const char *const lists[] = {"contexts", "clusters", "users"};
    const char *current;

    if (get_str(s->doc, "current-context", &current) < 0)
        return err_set(e, -EINVAL, "%s: current-context: must be a string", s->origin);
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(s->doc, lists[i]), *a, *b;
        int ia = 0;

        if (l && !cJSON_IsNull(l) && !cJSON_IsArray(l))
            return err_set(e, -EINVAL, "%s: %s: must be a list", s->origin, lists[i]);
        /* As kubectl: a name defined twice in one file makes the file invalid. */
        cJSON_ArrayForEach(a, l) {
            const char *na, *nb;
            int ib = 0;

            if (get_str(a, "name", &na) < 0 || !na) {
                ia++;
                continue;
            }
            cJSON_ArrayForEach(b, l) {
                if (ib == ia)
                    break;
                if (get_str(b, "name", &nb) == 0 && nb && strcmp(na, nb) == 0)
                    return err_set(e, -EINVAL,
                                   "%s: %s[%d].name: \"%s\" is defined twice (also %s[%d])",
                                   s->origin, lists[i], ia, na, lists[i], ib);
                ib++;
            }
            ia++;
        }
    }
    return 0;
}

int kube_config_build(const struct kube_config_source *src, size_t n, const char *origin,
                      const char *context, struct kube_config **ret_cfg, struct err *e)
{
    const struct kube_config_source *ctx_src, *cluster_src, *user_src;
    const cJSON *ctx, *cluster, *user;
    const char *cluster_name, *user_name, *ns;
    struct kube_config *cfg = NULL;
    char where[256];
    int r, idx;

    for (size_t i = 0; i < n; i++) {
        const char *current;

        r = check_source(&src[i], e);
        if (r < 0)
            return r;
        (void)get_str(src[i].doc, "current-context", &current);
        if (!context && current && current[0])
            context = current;
    }
    if (!context)
        return err_set(e, -EINVAL, "%s: current-context: missing", origin);
    cfg = calloc(1, sizeof(*cfg));
    if (!cfg || !(cfg->origin = strdup(origin))) {
        r = -ENOMEM;
        goto out;
    }
    if (!find_named(src, n, "contexts", context, "context", &ctx_src, &idx, &ctx)) {
        r = err_set(e, -EINVAL, "%s: contexts: no context named \"%s\"", origin, context);
        goto out;
    }
    snprintf(where, sizeof(where), "contexts[%d].context", idx);
    if (!cJSON_IsObject(ctx)) {
        r = err_set(e, -EINVAL, "%s: %s: missing or not a mapping", ctx_src->origin, where);
        goto out;
    }
    GET_STR(ctx_src->origin, ctx, "cluster", &cluster_name, where);
    GET_STR(ctx_src->origin, ctx, "user", &user_name, where);
    GET_STR(ctx_src->origin, ctx, "namespace", &ns, where);
    if (!cluster_name) {
        r = err_set(e, -EINVAL, "%s: %s.cluster: missing", ctx_src->origin, where);
        goto out;
    }
    if (!find_named(src, n, "clusters", cluster_name, "cluster", &cluster_src, &idx, &cluster)) {
        r = err_set(e, -EINVAL, "%s: clusters: no cluster named \"%s\"", origin, cluster_name);
        goto out;
    }
    snprintf(where, sizeof(where), "clusters[%d].cluster", idx);
    r = parse_cluster(cluster, where, cluster_src->origin, cluster_src->base_dir, cfg, e);
    if (r < 0)
        goto out;
    if (user_name && user_name[0]) {
        if (!find_named(src, n, "users", user_name, "user", &user_src, &idx, &user)) {
            r = err_set(e, -EINVAL, "%s: users: no user named \"%s\"", origin, user_name);
            goto out;
        }
        snprintf(where, sizeof(where), "users[%d].user", idx);
        r = parse_user(user, where, user_src->origin, user_src->base_dir, cfg, e);
        if (r < 0)
            goto out;
    }
    cfg->namespace_ = strdup(ns && ns[0] ? ns : "default");
    if (!cfg->namespace_) {
        r = -ENOMEM;
        goto out;
    }
    *ret_cfg = cfg;
    cfg = NULL;
    r = 0;
out:
    kube_config_free(cfg);
    return r;
}

int kube_config_parse_doc(const char *text, size_t len, const char *origin, cJSON **ret_doc,
                          struct err *e)
{
    cJSON *docs = NULL, *doc = NULL;
    int n, r;

    r = yamlconv_parse_all(text, len, origin, &docs, e);
    if (r < 0)
        return r;
    n = cJSON_GetArraySize(docs);
    if (n > 1) {
        r = err_set(e, -EINVAL, "%s: expected one YAML document, found %d", origin, n);
        goto out;
    }
    if (n == 1 && !cJSON_IsNull(cJSON_GetArrayItem(docs, 0))) {
        doc = cJSON_DetachItemFromArray(docs, 0);
        if (!cJSON_IsObject(doc)) {
            cJSON_Delete(doc);
            r = err_set(e, -EINVAL, "%s: not a mapping", origin);
            goto out;
        }
    }
    *ret_doc = doc;
    r = 0;
out:
    cJSON_Delete(docs);
    return r;
}

int kube_config_parse(const char *text, size_t len, const char *origin, const char *base_dir,
                      const char *context, struct kube_config **ret_cfg, struct err *e)
{
    struct kube_config_source src = {origin, base_dir, NULL};
    cJSON *doc = NULL;
    int r;

    r = kube_config_parse_doc(text, len, origin, &doc, e);
    if (r < 0)
        return r;
    src.doc = doc;
    r = kube_config_build(&src, doc ? 1 : 0, origin, context, ret_cfg, e);
    cJSON_Delete(doc);
    return r;
}

int kube_config_token(struct kube_config *cfg, const char **ret_token, struct err *e)
{
    struct stat st;
    char *text = NULL;
    size_t len = 0;
    double now;
    int r;

    if (!cfg->token_file) {
        *ret_token = cfg->token;
        return 0;
    }
    now = time_mono();
    if (stat(cfg->token_file, &st) < 0) {
        r = -errno;
        goto fail;
    }
    if (cfg->token && st.st_mtim.tv_sec == cfg->token_mtime.tv_sec &&
        st.st_mtim.tv_nsec == cfg->token_mtime.tv_nsec && st.st_size == cfg->token_size &&
        (unsigned long long)st.st_ino == cfg->token_ino &&
        now - cfg->token_checked < TOKEN_RECHECK_SECONDS) {
        *ret_token = cfg->token;
        return 0;
    }
    r = util_read_file(cfg->token_file, KUBE_CONFIG_FILE_MAX, &text, &len);
    if (r < 0)
        goto fail;
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        text[--len] = '\0';
    if (len == 0 || memchr(text, '\n', len)) {
        free(text);
        r = -EINVAL;
        goto fail;
    }
    if (cfg->token)
        explicit_bzero(cfg->token, strlen(cfg->token));
    free(cfg->token);
    cfg->token = text;
    cfg->token_mtime = st.st_mtim;
    cfg->token_size = st.st_size;
    cfg->token_ino = st.st_ino;
    cfg->token_checked = now;
    *ret_token = cfg->token;
    return 0;
fail:
    err_set(e, r, "token file %s: %s", cfg->token_file,
            r == -EINVAL ? "empty or more than one line" : strerror(-r));
    return r;
}

int kube_config_in_cluster(const struct kube_incluster_paths *paths, struct kube_config **ret_cfg,
                           struct err *e)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    const char *token_path = paths && paths->token ? paths->token : SA_DIR "token";
    const char *ca_path = paths && paths->ca ? paths->ca : SA_DIR "ca.crt";
    const char *ns_path = paths && paths->namespace_ ? paths->namespace_ : SA_DIR "namespace";
    struct kube_config *cfg = NULL;
    const char *tok;
    char *ns = NULL;
    size_t ns_len = 0;
    struct buf b;
    int r, p;

    buf_init(&b, 0);
    if (!host || !host[0] || !port || !port[0])
        return err_set(e, -ENOENT, "in-cluster: KUBERNETES_SERVICE_HOST/PORT not set");
    if (str_to_int(port, 1, 65535, &p) < 0)
        return err_set(e, -EINVAL, "in-cluster: KUBERNETES_SERVICE_PORT \"%s\" is not a port",
                       port);
    cfg = calloc(1, sizeof(*cfg));
    if (!cfg)
        return -ENOMEM;
    r = strchr(host, ':') ? buf_printf(&b, "https://[%s]:%d", host, p)
                          : buf_printf(&b, "https://%s:%d", host, p);
    if (r < 0)
        goto out;
    cfg->server = buf_steal(&b);
    cfg->origin = strdup("in-cluster");
    cfg->token_file = strdup(token_path);
    if (!cfg->server || !cfg->origin || !cfg->token_file) {
        r = -ENOMEM;
        goto out;
    }
    r = util_read_file(ca_path, KUBE_CONFIG_FILE_MAX, &cfg->ca_pem, &cfg->ca_len);
    if (r < 0) {
        err_set(e, r, "in-cluster: CA %s: %s", ca_path, strerror(-r));
        goto out;
    }
    cfg->ca_file = strdup(ca_path);
    if (!cfg->ca_file) {
        r = -ENOMEM;
        goto out;
    }
    ca_file_seen(cfg);
    r = kube_config_token(cfg, &tok, e);
    if (r < 0) {
        err_prefix(e, "in-cluster: ");
        goto out;
    }
    if (util_read_file(ns_path, 4096, &ns, &ns_len) == 0) {
        while (ns_len > 0 && (ns[ns_len - 1] == '\n' || ns[ns_len - 1] == ' '))
            ns[--ns_len] = '\0';
    }
    cfg->namespace_ = strdup(ns && ns[0] ? ns : "default");
    if (!cfg->namespace_) {
        r = -ENOMEM;
        goto out;
    }
    *ret_cfg = cfg;
    cfg = NULL;
    r = 0;
out:
    free(ns);
    buf_done(&b);
    kube_config_free(cfg);
    return r;
}
