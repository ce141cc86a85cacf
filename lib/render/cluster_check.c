/* The render check (render_cluster_check): whether a control plane's components render at all,
 * remembered under the check memo by a digest of everything a render reads. */

#include <errno.h>
#include <stdio.h>

#include "lib/render/cluster_internal.h"
#include "lib/render/cluster_pki_internal.h"

static void digest_strmap(struct digest *d, const struct api_strmap *m)
{
    render_pki_digest_int(d, (long long)m->n);
    for (size_t i = 0; i < m->n; i++) {
        render_pki_digest_str(d, m->items[i].key);
        render_pki_digest_str(d, m->items[i].value);
    }
}

/* An object as a render reads it: its spec stands behind its uid and generation, which the
 * API server bumps with every change of it; labels and annotations change without one. False
 * when the object has no uid or generation, so that a change could go unseen. */
static bool digest_object(struct digest *d, const char *tag, const char *api_version,
                          const struct api_meta *m)
{
    render_pki_digest_str(d, tag);
    if (!m)
        return true;
    if (!m->uid || !*m->uid || m->generation <= 0)
        return false;
    render_pki_digest_str(d, api_version);
    render_pki_digest_str(d, m->name);
    render_pki_digest_str(d, m->uid);
    render_pki_digest_int(d, m->generation);
    digest_strmap(d, &m->labels);
    digest_strmap(d, &m->annotations);
    return true;
}

/* The digest of what rendering part (RENDER_PART__COUNT: every component) reads: the objects
 * resolved into rc and the settings made on it. "" when there is no memo, or an object could
 * change unseen. */
static void inputs_digest(const struct render_cluster *rc, enum render_part part,
                          char out[RENDER_CLUSTER_HASH_MAX])
{
    bool ok;
    struct digest d;

    out[0] = '\0';
    if (!render_digest_begin(rc, &d, "render"))
        return;
    render_pki_digest_int(&d, (long long)part);
    render_pki_digest_str(&d, rc->ns);
    render_pki_digest_str(&d, rc->name);
    render_pki_digest_int(&d, rc->allow_privileged);
    render_pki_digest_int(&d, rc->etcd_storage_kept);
    render_pki_digest_str(&d, rc->manager_namespace);
    ok = digest_object(&d, "control plane", rc->ncp_api_version, rc->ncp ? &rc->ncp->meta : NULL);
    ok = ok && digest_object(&d, "cluster", NULL, rc->capi ? &rc->capi->meta : NULL);
    ok = ok && digest_object(&d, "nested cluster", NULL, rc->nc ? &rc->nc->meta : NULL);
    for (int i = 0; ok && i < RENDER_PART__COUNT; i++) {
        const struct render_cluster_part *p = &rc->parts[i];
        ok = digest_object(&d, render_part_short((enum render_part)i), p->api_version,
                           p->obj ? &p->obj->meta : NULL);
    }
    if (!ok) {
        EVP_MD_CTX_free(d.ctx);
        return;
    }
    render_pki_digest_end(&d, out);
}

int render_cluster_check(const struct render_catalog *cat, const struct render_cluster *rc,
                         enum render_part part, int64_t now, struct err *e)
{
    const struct render_check_memo *m = rc->memo;
    char digest[RENDER_CLUSTER_HASH_MAX];

    inputs_digest(rc, part, digest);
    if (digest[0] && m->passed(m->ctx, digest, now, NULL))
        return 0;
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
    if (digest[0])
        m->remember(m->ctx, digest, now + RENDER_CHECK_MEMO_TTL, 0);
    return 0;
}
