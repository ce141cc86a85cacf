#include "lib/ctrl/manager.h"

#include <stdlib.h>
#include <string.h>

#include "lib/util/buf.h"

/*
 * Notes about objects, kept from one reconcile to the next: a same-named object someone else
 * controls (conflicts), an object read live (found), a write rejected (rejected), a status
 * written lately (status_written).
 */

struct note {
    double until; /* wall clock */
    char *key;    /* "resource/ns/name" */
    cJSON *obj;   /* found: the object */
    char why[];
};

static void note_key(struct buf *b, const struct kube_resource *res, const char *ns,
                     const char *name)
{
    buf_printf(b, "%s/%s/%s", res->resource, ns ? ns : "", name ? name : "");
}

static const struct note *note_get(const struct strmap *notes, double now,
                                   const struct kube_resource *res, const char *ns,
                                   const char *name)
{
    struct buf key = BUF_INIT;
    const struct note *n = NULL;

    if (!notes || !res)
        return NULL;
    note_key(&key, res, ns, name);
    if (key.data)
        n = strmap_get(notes, key.data);
    buf_done(&key);
    return n && n->until > now ? n : NULL;
}

const char *ctrl_note_why(const struct strmap *notes, double now, const struct kube_resource *res,
                          const char *ns, const char *name)
{
    const struct note *n = note_get(notes, now, res, ns, name);

    return n ? n->why : NULL;
}

double ctrl_note_until(const struct strmap *notes, double now, const struct kube_resource *res,
                       const char *ns, const char *name)
{
    const struct note *n = note_get(notes, now, res, ns, name);

    return n ? n->until : 0;
}

const cJSON *ctrl_note_object(const struct strmap *notes, double now,
                              const struct kube_resource *res, const char *ns, const char *name)
{
    const struct note *n = note_get(notes, now, res, ns, name);

    return n ? n->obj : NULL;
}

void ctrl_note_free(void *value)
{
    struct note *n = value;

    if (n) {
        free(n->key);
        cJSON_Delete(n->obj);
    }
    free(n);
}

void ctrl_note_put(struct strmap *notes, const struct kube_resource *res, const char *ns,
                   const char *name, const char *why, cJSON *obj, double until)
{
    struct buf key = BUF_INIT;
    size_t len = why ? strlen(why) : 0;
    struct note *n = NULL;

    note_key(&key, res, ns, name);
    if (key.data)
        ctrl_note_free(strmap_remove(notes, key.data));
    if (key.data && (why || obj) && (n = calloc(1, sizeof(*n) + len + 1))) {
        n->until = until;
        n->key = buf_steal(&key);
        n->obj = obj;
        obj = NULL;
        if (len)
            memcpy(n->why, why, len);
        if (strmap_put(notes, n->key, n) < 0)
            ctrl_note_free(n);
    }
    cJSON_Delete(obj);
    buf_done(&key);
}
