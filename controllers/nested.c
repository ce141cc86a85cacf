#include "controllers/nested.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct checked {
    char digest[RENDER_CLUSTER_HASH_MAX];
    int64_t until;
};

static bool memo_passed(void *ctx, const char *digest, int64_t now)
{
    const struct checked *c = strmap_get(&((struct nested_ctx *)ctx)->checked, digest);

    return c && c->until > now;
}

static void memo_remember(void *ctx, const char *digest, int64_t until)
{
    struct nested_ctx *n = ctx;
    struct checked *c;

    if (strmap_size(&n->checked) >= NESTED_MEMO_MAX)
        strmap_done(&n->checked, free);
    free(strmap_remove(&n->checked, digest));
    if (!(c = calloc(1, sizeof(*c))))
        return; /* only an optimisation */
    snprintf(c->digest, sizeof(c->digest), "%s", digest);
    c->until = until;
    if (strmap_put(&n->checked, c->digest, c) < 0)
        free(c);
}

void nested_ctx_init(struct nested_ctx *ctx, const struct render_catalog *cat,
                     struct keypool *keys, int64_t cert_renew_before)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->cat = cat;
    ctx->api_cat = render_cluster_api_catalog(cat);
    ctx->keys = keys;
    ctx->cert_renew_before = cert_renew_before;
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        ctx->parts[i].base = ctx;
        ctx->parts[i].part = (enum render_part)i;
    }
    ctx->memo = (struct render_check_memo){ctx, memo_passed, memo_remember};
}

void nested_ctx_done(struct nested_ctx *ctx)
{
    for (int i = 0; i < RENDER_PART__COUNT; i++)
        strmap_done(&ctx->parts[i].issued, free);
    strmap_done(&ctx->checked, free);
}

int nested_check_render(const struct render_catalog *cat, const struct render_cluster *rc,
                        enum render_part part, struct err *e)
{
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        cJSON *objs = NULL;
        int r;

        if ((part != RENDER_PART__COUNT && (int)part != i) ||
            !render_cluster_component_object(rc, (enum render_part)i) ||
            (i == RENDER_PART_APISERVER && !render_cluster_component_object(rc, RENDER_PART_ETCD)))
            continue;
        r = render_cluster_component(cat, rc, (enum render_part)i, "placeholder", &objs, NULL, e);
        cJSON_Delete(objs);
        if (r < 0)
            return r == -ENOMEM ? r : -EINVAL;
    }
    return 0;
}
