/* Kubeconfigs with embedded credentials (pki_kubeconfig_*). */

#include "lib/pki/kubeconfig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "lib/pki/base64.h"
#include "lib/pki/internal.h"
#include "lib/pki/key.h"
#include "lib/util/buf.h"
#include "lib/util/yamlconv.h"

int pki_kubeconfig_server_url(const char *host, int port, char *out, size_t out_size)
{
    unsigned char bin[16];
    int n;

    if (!host || !*host || port < 1 || port > 65535)
        return -EINVAL;
    if (inet_pton(AF_INET6, host, bin) == 1)
        n = snprintf(out, out_size, "https://[%s]:%d", host, port);
    else
        n = snprintf(out, out_size, "https://%s:%d", host, port);
    return n < 0 || (size_t)n >= out_size ? -EINVAL : 0;
}

/* Adds key: base64(pem) to obj. */
static int add_data(cJSON *obj, const char *key, const char *pem)
{
    char *b64 = NULL;
    cJSON *item;

    if (pki_base64_encode(pem, strlen(pem), &b64) < 0)
        return -ENOMEM;
    item = cJSON_CreateString(b64);
    OPENSSL_clear_free(b64, strlen(b64));
    if (!item || !cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return -ENOMEM;
    }
    return 0;
}

/* Appends {"<inner_key>": inner, "name": name} to array, keys in alphabetical order as
 * kubectl writes them. Takes inner. */
static int add_named(cJSON *array, const char *inner_key, cJSON *inner, const char *name)
{
    cJSON *entry = cJSON_CreateObject();
    bool name_first = strcmp("name", inner_key) < 0;

    if (!entry || !inner) {
        cJSON_Delete(entry);
        cJSON_Delete(inner);
        return -ENOMEM;
    }
    if (name_first && !cJSON_AddStringToObject(entry, "name", name)) {
        cJSON_Delete(entry);
        cJSON_Delete(inner);
        return -ENOMEM;
    }
    cJSON_AddItemToObject(entry, inner_key, inner);
    if ((!name_first && !cJSON_AddStringToObject(entry, "name", name)) ||
        !cJSON_AddItemToArray(array, entry)) {
        cJSON_Delete(entry);
        return -ENOMEM;
    }
    return 0;
}

int pki_kubeconfig_build(const struct pki_kubeconfig *kc, cJSON **ret_doc, struct err *e)
{
    char user[256], context[512];
    cJSON *doc = NULL, *clusters, *contexts, *users, *cl, *ctx, *us;
    int r = -ENOMEM;

    if (!kc->cluster_name || !*kc->cluster_name)
        return err_set(e, -EINVAL, "kubeconfig: cluster name is required");
    if (!kc->server || !*kc->server)
        return err_set(e, -EINVAL, "kubeconfig: server is required");
    if (!kc->ca_cert_pem || !kc->client_cert_pem || !kc->client_key_pem)
        return err_set(e, -EINVAL,
                       "kubeconfig: CA certificate, client certificate and key "
                       "are required");
    snprintf(user, sizeof(user), "%s-admin", kc->cluster_name);
    if (kc->user_name)
        snprintf(user, sizeof(user), "%s", kc->user_name);
    snprintf(context, sizeof(context), "%s@%s", user, kc->cluster_name);
    if (kc->context_name)
        snprintf(context, sizeof(context), "%s", kc->context_name);

    /* Keys in alphabetical order, as kubectl and Cluster API write them. */
    doc = cJSON_CreateObject();
    if (!doc || !cJSON_AddStringToObject(doc, "apiVersion", "v1") ||
        !(clusters = cJSON_AddArrayToObject(doc, "clusters")) ||
        !(contexts = cJSON_AddArrayToObject(doc, "contexts")) ||
        !cJSON_AddStringToObject(doc, "current-context", context) ||
        !cJSON_AddStringToObject(doc, "kind", "Config") ||
        !cJSON_AddObjectToObject(doc, "preferences") ||
        !(users = cJSON_AddArrayToObject(doc, "users")))
        goto out;

    cl = cJSON_CreateObject();
    if (!cl || add_data(cl, "certificate-authority-data", kc->ca_cert_pem) < 0 ||
        !cJSON_AddStringToObject(cl, "server", kc->server)) {
        cJSON_Delete(cl);
        goto out;
    }
    if (add_named(clusters, "cluster", cl, kc->cluster_name) < 0)
        goto out;

    ctx = cJSON_CreateObject();
    if (!ctx || !cJSON_AddStringToObject(ctx, "cluster", kc->cluster_name) ||
        !cJSON_AddStringToObject(ctx, "user", user)) {
        cJSON_Delete(ctx);
        goto out;
    }
    if (add_named(contexts, "context", ctx, context) < 0)
        goto out;

    us = cJSON_CreateObject();
    if (!us || add_data(us, "client-certificate-data", kc->client_cert_pem) < 0 ||
        add_data(us, "client-key-data", kc->client_key_pem) < 0) {
        cJSON_Delete(us);
        goto out;
    }
    if (add_named(users, "user", us, user) < 0)
        goto out;
    *ret_doc = doc;
    doc = NULL;
    r = 0;
out:
    cJSON_Delete(doc);
    return r < 0 ? err_set(e, r, "kubeconfig: out of memory") : 0;
}

/* Wipes every string of a cJSON tree that holds key material, before it is deleted. */
static void wipe_strings(cJSON *n)
{
    for (cJSON *c = n ? n->child : NULL; c; c = c->next)
        wipe_strings(c);
    if (n && cJSON_IsString(n) && n->valuestring)
        OPENSSL_cleanse(n->valuestring, strlen(n->valuestring));
}

int pki_kubeconfig_render(const struct pki_kubeconfig *kc, char **ret_yaml, struct err *e)
{
    struct buf out = BUF_INIT;
    cJSON *doc = NULL;
    char *yaml;
    int r;

    r = pki_kubeconfig_build(kc, &doc, e);
    if (r < 0)
        return r;
    r = yamlconv_emit(doc, &out);
    wipe_strings(doc);
    cJSON_Delete(doc);
    if (r < 0) {
        if (out.data)
            OPENSSL_cleanse(out.data, out.len);
        buf_done(&out);
        return err_set(e, r, "kubeconfig: out of memory");
    }
    yaml = buf_steal(&out);
    if (!yaml)
        return err_set(e, -ENOMEM, "kubeconfig: out of memory");
    *ret_yaml = yaml;
    return 0;
}

void pki_kubeconfig_creds_free(struct pki_kubeconfig_creds *c)
{
    if (!c)
        return;
    free(c->context_name);
    free(c->cluster_name);
    free(c->user_name);
    free(c->server);
    free(c->ca_cert_pem);
    free(c->client_cert_pem);
    if (c->client_key_pem)
        OPENSSL_clear_free(c->client_key_pem, strlen(c->client_key_pem));
    free(c);
}

/* Finds the entry of a named list ("clusters", "users", "contexts") with this name and
 * returns its inner object (entry[inner]). */
static const cJSON *find_named(const cJSON *doc, const char *list, const char *inner,
                               const char *name, const char *origin, struct err *e)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, list);
    const cJSON *it;
    int i = 0;

    cJSON_ArrayForEach(it, arr) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(it, inner);
            if (!cJSON_IsObject(o)) {
                err_set(e, -EINVAL, "%s: %s[%d].%s is not an object", origin, list, i, inner);
                return NULL;
            }
            return o;
        }
        i++;
    }
    err_set(e, -EINVAL, "%s: %s has no entry named \"%.100s\"", origin, list, name);
    return NULL;
}

static int copy_str(const cJSON *obj, const char *key, char **ret)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsString(s))
        return 0;
    *ret = strdup(s->valuestring);
    return *ret ? 0 : -ENOMEM;
}

/* Decodes obj[key] (base64 PEM) into *ret when present, and checks that it reads as a
 * certificate or (is_key) a private key. */
static int copy_data(const cJSON *obj, const char *key, bool is_key, const char *path,
                     const char *origin, char **ret, struct err *e)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, key);
    unsigned char *data = NULL;
    size_t len;
    int r;

    if (!s)
        return 0;
    if (!cJSON_IsString(s))
        return err_set(e, -EINVAL, "%s: %s.%s is not a string", origin, path, key);
    r = pki_base64_decode(s->valuestring, strlen(s->valuestring), PKI_PEM_MAX, &data, &len);
    if (r == -ENOBUFS)
        return err_set(e, r, "%s: %s.%s is larger than %d bytes", origin, path, key, PKI_PEM_MAX);
    if (r < 0)
        return err_set(e, r, "%s: %s.%s is not base64", origin, path, key);
    if (memchr(data, '\0', len)) {
        OPENSSL_clear_free(data, len + 1);
        return err_set(e, -EINVAL, "%s: %s.%s is not PEM text", origin, path, key);
    }
    /* Check the PEM now, so a damaged kubeconfig is refused here rather than half-read. */
    if (is_key) {
        EVP_PKEY *k = NULL;
        r = pki_ossl_load_key((char *)data, key, &k, e);
        EVP_PKEY_free(k);
    } else {
        X509 *x = NULL;
        r = pki_ossl_load_cert((char *)data, key, &x, e);
        X509_free(x);
    }
    if (r < 0) {
        OPENSSL_clear_free(data, len + 1);
        return err_prefix(e, "%s: %s.", origin, path);
    }
    *ret = (char *)data;
    return 0;
}

int pki_kubeconfig_read(const char *yaml, size_t len, const char *origin,
                        struct pki_kubeconfig_creds **ret_creds, struct err *e)
{
    struct pki_kubeconfig_creds *c = NULL;
    const cJSON *cur, *ctx, *cl, *us, *contexts;
    cJSON *doc = NULL;
    const char *ctx_name;
    int r;

    if (!origin)
        origin = "kubeconfig";
    if (len > PKI_KUBECONFIG_MAX)
        return err_set(e, -ENOBUFS, "%s: larger than %d bytes", origin, PKI_KUBECONFIG_MAX);
    r = yamlconv_parse_one(yaml, len, origin, &doc, e);
    if (r < 0)
        return r;
    r = -EINVAL;
    if (!cJSON_IsObject(doc)) {
        err_set(e, r, "%s: not a mapping", origin);
        goto out;
    }
    cur = cJSON_GetObjectItemCaseSensitive(doc, "current-context");
    contexts = cJSON_GetObjectItemCaseSensitive(doc, "contexts");
    if (cJSON_IsString(cur) && *cur->valuestring) {
        ctx_name = cur->valuestring;
    } else if (cJSON_GetArraySize(contexts) == 1 &&
               cJSON_IsString(cJSON_GetObjectItemCaseSensitive(contexts->child, "name"))) {
        ctx_name = cJSON_GetObjectItemCaseSensitive(contexts->child, "name")->valuestring;
    } else {
        err_set(e, r, "%s: current-context is not set", origin);
        goto out;
    }
    ctx = find_named(doc, "contexts", "context", ctx_name, origin, e);
    if (!ctx)
        goto out;
    c = calloc(1, sizeof(*c));
    if (!c) {
        r = err_set(e, -ENOMEM, "%s: out of memory", origin);
        goto out;
    }
    r = -ENOMEM;
    if (!(c->context_name = strdup(ctx_name)) || copy_str(ctx, "cluster", &c->cluster_name) < 0 ||
        copy_str(ctx, "user", &c->user_name) < 0) {
        err_set(e, r, "%s: out of memory", origin);
        goto out;
    }
    r = -EINVAL;
    if (!c->cluster_name || !c->user_name) {
        err_set(e, r, "%s: context \"%.100s\" needs a cluster and a user", origin, ctx_name);
        goto out;
    }
    cl = find_named(doc, "clusters", "cluster", c->cluster_name, origin, e);
    us = cl ? find_named(doc, "users", "user", c->user_name, origin, e) : NULL;
    if (!us)
        goto out;
    r = copy_str(cl, "server", &c->server);
    if (r == 0)
        r = copy_data(cl, "certificate-authority-data", false, "cluster", origin, &c->ca_cert_pem,
                      e);
    if (r == 0)
        r = copy_data(us, "client-certificate-data", false, "user", origin, &c->client_cert_pem, e);
    if (r == 0)
        r = copy_data(us, "client-key-data", true, "user", origin, &c->client_key_pem, e);
    if (r == -ENOMEM)
        err_set(e, r, "%s: out of memory", origin);
    if (r == 0) {
        *ret_creds = c;
        c = NULL;
    }
out:
    pki_kubeconfig_creds_free(c);
    wipe_strings(doc);
    cJSON_Delete(doc);
    return r;
}
