#include "controllers/nested.h"

#include <string.h>

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
}
