#include "cmd/nestcp/kcserver.h"

#include <errno.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"

#define HTTPS "https://"

/* Splits the authority of an https:// URL: host (brackets kept) and port text. */
static int split_authority(const char *url, const char **ret_host, size_t *ret_host_len,
                           const char **ret_port, size_t *ret_port_len)
{
    const char *a, *end, *colon;

    if (!str_has_prefix(url, HTTPS))
        return -EINVAL;
    a = url + strlen(HTTPS);
    end = a + strcspn(a, "/?#");
    if (a[0] == '[') {
        const char *close = memchr(a, ']', (size_t)(end - a));
        if (!close)
            return -EINVAL;
        colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
        if (!colon && close + 1 != end)
            return -EINVAL;
    } else {
        colon = memchr(a, ':', (size_t)(end - a));
    }
    *ret_host = a;
    *ret_host_len = (size_t)((colon ? colon : end) - a);
    *ret_port = colon ? colon + 1 : end;
    *ret_port_len = colon ? (size_t)(end - colon - 1) : 0;
    return 0;
}

int kcserver_check_url(const char *url, struct err *e)
{
    const char *host, *port;
    size_t host_len, port_len;
    char digits[8];
    int p;

    if (!url || !*url)
        return err_set(e, -EINVAL, "--server: empty URL");
    if (!str_has_prefix(url, HTTPS))
        return err_set(e, -EINVAL,
                       "--server: \"%s\" is not an https:// URL (the tenant's API server only "
                       "speaks TLS, and its certificate is always verified)",
                       url);
    if (strpbrk(url, " \t\r\n") || strpbrk(url, "?#@"))
        return err_set(e, -EINVAL,
                       "--server: \"%s\" has whitespace, user info, a query or a fragment", url);
    if (split_authority(url, &host, &host_len, &port, &port_len) < 0 || host_len == 0 ||
        (host[0] == '[' && host_len < 3))
        return err_set(e, -EINVAL, "--server: \"%s\" names no host", url);
    if (port_len > 0 || port[-1] == ':') {
        if (port_len == 0 || port_len >= sizeof(digits) || strspn(port, "0123456789") < port_len)
            return err_set(e, -EINVAL, "--server: \"%s\": the port is not a number", url);
        memcpy(digits, port, port_len);
        digits[port_len] = '\0';
        if (str_to_int(digits, 1, 65535, &p) < 0)
            return err_set(e, -EINVAL, "--server: \"%s\": the port is not in 1..65535", url);
    }
    return 0;
}

int kcserver_url_host(const char *url, char *out, size_t out_size)
{
    const char *host, *port;
    size_t host_len, port_len;

    if (split_authority(url, &host, &host_len, &port, &port_len) < 0 || host_len == 0)
        return -EINVAL;
    if (host[0] == '[') {
        host++;
        host_len -= 2;
    }
    if (host_len == 0 || host_len >= out_size)
        return -EINVAL;
    memcpy(out, host, host_len);
    out[host_len] = '\0';
    return 0;
}

/* The element of the array list (a kubeconfig's contexts or clusters) named name. */
static cJSON *named(cJSON *list, const char *name)
{
    cJSON *item;

    cJSON_ArrayForEach(item, list) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(item, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return item;
    }
    return NULL;
}

static int set_string(cJSON *obj, const char *key, const char *value)
{
    cJSON *v = cJSON_CreateString(value);

    if (!v)
        return -ENOMEM;
    if (cJSON_HasObjectItem(obj, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v) ? 0 : -ENOMEM;
    return cJSON_AddItemToObject(obj, key, v) ? 0 : (cJSON_Delete(v), -ENOMEM);
}

int kcserver_rewrite(const char *text, size_t len, const char *origin, const char *server,
                     struct buf *out, struct err *e)
{
    cJSON *doc = NULL, *contexts, *clusters, *ctx, *cl, *cluster;
    const cJSON *current, *ctx_cluster, *old_server;
    char old_host[256], new_host[256];
    int r;

    r = kcserver_check_url(server, e);
    if (r < 0)
        return r;
    r = yamlconv_parse_one(text, len, origin, &doc, e);
    if (r < 0)
        return r;
    r = -EINVAL;
    contexts = cJSON_GetObjectItemCaseSensitive(doc, "contexts");
    clusters = cJSON_GetObjectItemCaseSensitive(doc, "clusters");
    current = cJSON_GetObjectItemCaseSensitive(doc, "current-context");
    if (!cJSON_IsString(current) || !current->valuestring[0]) {
        err_set(e, r, "%s: current-context is not set", origin);
        goto out;
    }
    ctx = named(contexts, current->valuestring);
    ctx_cluster = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ctx, "context"),
                                                   "cluster");
    if (!ctx || !cJSON_IsString(ctx_cluster)) {
        err_set(e, r, "%s: contexts[%s].context.cluster is not set", origin, current->valuestring);
        goto out;
    }
    cl = named(clusters, ctx_cluster->valuestring);
    cluster = cJSON_GetObjectItemCaseSensitive(cl, "cluster");
    if (!cJSON_IsObject(cluster)) {
        err_set(e, r, "%s: clusters[%s].cluster: no such cluster", origin,
                ctx_cluster->valuestring);
        goto out;
    }
    old_server = cJSON_GetObjectItemCaseSensitive(cluster, "server");
    if (!cJSON_IsString(old_server) ||
        kcserver_url_host(old_server->valuestring, old_host, sizeof(old_host)) < 0) {
        err_set(e, r, "%s: clusters[%s].cluster.server is not an https:// URL", origin,
                ctx_cluster->valuestring);
        goto out;
    }
    if (kcserver_url_host(server, new_host, sizeof(new_host)) < 0) {
        err_set(e, r, "--server: \"%s\": the host is too long", server);
        goto out;
    }
    r = -ENOMEM;
    if (set_string(cluster, "server", server) < 0)
        goto out;
    if (strcmp(old_host, new_host) != 0 && !cJSON_HasObjectItem(cluster, "tls-server-name") &&
        set_string(cluster, "tls-server-name", old_host) < 0)
        goto out;
    r = yamlconv_emit(doc, out);
out:
    cJSON_Delete(doc);
    return r;
}
