/*
 * What a steady-state reconcile pays to find a control plane's certs Secrets still good when
 * the check memo knows every check: render_cluster_certs_find of the etcd and apiserver parts
 * (7 leaves and 6 copied CA files; 3 etcd members, ECDSA-P256), against a floor measured in the
 * same run, one SHA-256 of every data value of those two Secrets (the least a check keyed by
 * what it reads has to read). Absolute figures move with the machine's load; the ratio is what
 * to compare between builds.
 *
 *   bench_certs_memo [seconds] [templates-dir]   (defaults: 1 second a figure, the source
 *                                                tree's templates/, found from this path)
 *
 * Prints figures and the ratio; asserts nothing about speed.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/render/catalog.h"
#include "lib/render/cluster.h"
#include "lib/util/strutil.h"
#include "lib/util/yamlconv.h"

#include "bench_inputs.h"

static const char input[] = BENCH_CLUSTER("");

/* A memo in the manager's shape, small enough to search in order. */
struct memo {
    struct {
        char digest[RENDER_CLUSTER_HASH_MAX];
        int64_t until, value;
    } v[64];
    int n, hits;
};

static bool memo_passed(void *ctx, const char *digest, int64_t now, int64_t *ret_value)
{
    struct memo *m = ctx;

    for (int i = 0; i < m->n; i++)
        if (strcmp(m->v[i].digest, digest) == 0 && m->v[i].until > now) {
            if (ret_value)
                *ret_value = m->v[i].value;
            m->hits++;
            return true;
        }
    return false;
}

static void memo_remember(void *ctx, const char *digest, int64_t until, int64_t value)
{
    struct memo *m = ctx;

    if (m->n == 64)
        return;
    snprintf(m->v[m->n].digest, sizeof(m->v[m->n].digest), "%s", digest);
    m->v[m->n].until = until;
    m->v[m->n].value = value;
    m->n++;
}

static const cJSON *certs_secret(const cJSON *objs, const char *prefix)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, objs) {
        const cJSON *n = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "name");
        if (cJSON_IsString(n) && strncmp(n->valuestring, prefix, strlen(prefix)) == 0)
            return o;
    }
    return NULL;
}

/* Both Secrets found good; false when either is not. */
static bool find_both(const struct render_cluster *rc, const struct render_cluster_pki *pki,
                      const struct render_source *src)
{
    char name[RENDER_CLUSTER_NAME_MAX];
    struct err e = {0};

    return render_cluster_certs_find(rc, pki, src, RENDER_PART_ETCD, NULL, name, NULL, &e) == 0 &&
           render_cluster_certs_find(rc, pki, src, RENDER_PART_APISERVER, NULL, name, NULL, &e) ==
               0;
}

/* One SHA-256 of every data value of both Secrets. */
static bool digest_both(const cJSON *const secrets[2])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[32];
    bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;

    for (int i = 0; i < 2; i++) {
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItem(secrets[i], "data")) {
            ok = ok && EVP_DigestUpdate(ctx, v->valuestring, strlen(v->valuestring) + 1) == 1;
        }
    }
    ok = ok && EVP_DigestFinal_ex(ctx, md, NULL) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0, t0, found_s, floor_s;
    const char *me = __FILE__, *at = strstr(me, "/test/bench/");
    struct api_errors errs = API_ERRORS_INIT;
    struct render_catalog *cat = NULL;
    struct render_cluster *rc = NULL;
    struct render_cluster_pki *pki = NULL;
    struct memo *memo = calloc(1, sizeof(*memo));
    struct render_check_memo m = {memo, memo_passed, memo_remember};
    struct render_source src;
    const cJSON *secrets[2];
    cJSON *objs = NULL, *out = NULL;
    long found = 0, floors = 0;
    struct err e = {0};
    char dir[4096];
    int status = 1;

    if (seconds <= 0)
        seconds = 1.0;
    if (argc > 2)
        snprintf(dir, sizeof(dir), "%s", argv[2]);
    else
        snprintf(dir, sizeof(dir), "%.*s/templates", at ? (int)(at - me) : 1, at ? me : ".");
    if (!memo || render_catalog_open(dir, &cat, &e) < 0 ||
        yamlconv_parse_all(input, strlen(input), "bench", &objs, &e) < 0) {
        fprintf(stderr, "bench_certs_memo: %s\n", e.msg[0] ? e.msg : "out of memory");
        goto out;
    }
    /* Every Secret made once, as the controllers would have created them. */
    render_source_from_objects(objs, &src);
    if (render_cluster_resolve(cat, &src, "bench", "b", &rc, &errs) < 0 ||
        render_cluster_all(cat, rc, &src, 0, &out, &errs) < 0)
        goto failed;
    while (out->child)
        cJSON_AddItemToArray(objs, cJSON_DetachItemViaPointer(out, out->child));
    render_cluster_free(rc);
    rc = NULL;
    secrets[0] = certs_secret(objs, "b-etcd-certs-");
    secrets[1] = certs_secret(objs, "b-apiserver-certs-");
    if (!secrets[0] || !secrets[1])
        goto failed;

    /* A reconcile's view: the memo learns every check in the first find. */
    render_source_from_objects(objs, &src);
    if (render_cluster_resolve(cat, &src, "bench", "b", &rc, &errs) < 0)
        goto failed;
    render_cluster_set_check_memo(rc, &m);
    if (render_cluster_pki_load(rc, &src, 0, false, &pki, &errs) < 0 || !find_both(rc, pki, &src))
        goto failed;
    memo->hits = 0;
    t0 = time_mono();
    do {
        if (!find_both(rc, pki, &src))
            goto failed;
        found++;
    } while ((found_s = time_mono() - t0) < seconds);
    t0 = time_mono();
    do {
        if (!digest_both(secrets))
            goto failed;
        floors++;
    } while ((floor_s = time_mono() - t0) < seconds);

    printf("etcd and apiserver certs Secrets found good under the check memo (%d hits each):\n",
           memo->hits / (int)found);
    printf("  %-40s %9.0f /s %8.2f us\n", "found (render_cluster_certs_find x2)", found / found_s,
           found_s / found * 1e6);
    printf("  %-40s %9.0f /s %8.2f us\n", "floor (SHA-256 of their data values)", floors / floor_s,
           floor_s / floors * 1e6);
    printf("  %-40s %9.1fx\n", "ratio found / floor", (found_s / found) / (floor_s / floors));
    status = 0;
    goto out;
failed:
    fprintf(stderr, "bench_certs_memo: %s\n",
            errs.n ? errs.lines[0] : "a certs Secret was not found good");
out:
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    cJSON_Delete(out);
    cJSON_Delete(objs);
    api_errors_done(&errs);
    render_catalog_free(cat);
    free(memo);
    return status;
}
