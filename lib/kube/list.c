/* kube_list_all: every page of a list, with the full-list fallback when a continue token
 * expires (the shape of client-go's pager with FullListIfExpired). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kube/client.h"
#include "lib/util/strutil.h"

struct kube_list {
    struct kube_client *c;
    struct kube_call *page;  /* the page in flight, NULL inside page_done */
    struct kube_request req; /* string fields point at the copies below */
    char *ns, *label_selector, *field_selector, *resource_version, *rv_match;
    cJSON *items;
    cJSON *first; /* the first page without its items: kind, apiVersion, metadata */
    int pages;
    bool full; /* the fallback unpaged list is running */
    kube_done_fn done;
    void *userdata;
};

static void list_free(struct kube_list *la)
{
    cJSON_Delete(la->items);
    cJSON_Delete(la->first);
    free(la->ns);
    free(la->label_selector);
    free(la->field_selector);
    free(la->resource_version);
    free(la->rv_match);
    free(la);
}

static void page_done(void *userdata, const struct kube_result *res);

/* Sends the next page (continue_token NULL: the first page). */
static int list_next(struct kube_list *la, const char *continue_token)
{
    struct kube_request r = la->req;

    r.verb = KUBE_LIST;
    r.continue_token = continue_token;
    if (continue_token) {
        r.resource_version = NULL; /* the server refuses both */
        r.resource_version_match = NULL;
    }
    if (la->full)
        r.limit = 0;
    return kube_request_start(la->c, &r, page_done, la, &la->page);
}

static void list_finish(struct kube_list *la, const struct kube_result *res)
{
    la->done(la->userdata, res);
    list_free(la);
}

static void page_done(void *userdata, const struct kube_result *res)
{
    struct kube_list *la = userdata;
    struct kube_result out;
    cJSON *items, *it, *meta;
    const char *cont = NULL;
    int r;

    la->page = NULL;
    if (res->code == -ESTALE && la->pages > 0 && !la->full) {
        /* The continue token expired: one unpaged list instead. */
        la->full = true;
        la->pages = 0;
        cJSON_Delete(la->items);
        cJSON_Delete(la->first);
        la->first = NULL;
        la->items = cJSON_CreateArray();
        r = la->items ? list_next(la, NULL) : -ENOMEM;
        if (r < 0) {
            out = (struct kube_result){.code = r, .message = "cannot restart the list"};
            list_finish(la, &out);
        }
        return;
    }
    if (res->code < 0 || !cJSON_IsObject(res->body)) {
        out = *res;
        if (out.code == 0) {
            out.code = -EIO;
            out.message = "list response is not an object";
        }
        list_finish(la, &out);
        return;
    }
    items = cJSON_GetObjectItemCaseSensitive(res->body, "items");
    while (items && (it = cJSON_DetachItemFromArray(items, 0)))
        cJSON_AddItemToArray(la->items, it);
    meta = cJSON_GetObjectItemCaseSensitive(res->body, "metadata");
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(meta, "continue")))
        cont = cJSON_GetObjectItemCaseSensitive(meta, "continue")->valuestring;
    if (la->pages++ == 0) {
        la->first = cJSON_Duplicate(res->body, 1);
        if (!la->first) {
            out = (struct kube_result){.code = -ENOMEM, .message = "out of memory"};
            list_finish(la, &out);
            return;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(la->first, "items");
        cJSON_DeleteItemFromObjectCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(la->first, "metadata"), "continue");
        cJSON_DeleteItemFromObjectCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(la->first, "metadata"), "remainingItemCount");
    }
    if (cont && cont[0]) {
        r = list_next(la, cont);
        if (r < 0) {
            out = (struct kube_result){.code = r, .message = "cannot request the next page"};
            list_finish(la, &out);
        }
        return;
    }
    cJSON_AddItemToObject(la->first, "items", la->items);
    la->items = NULL;
    out = (struct kube_result){
        .code = 0, .http_status = res->http_status, .body = la->first, .message = ""};
    list_finish(la, &out);
}

static int dup_opt(const char *s, char **ret)
{
    *ret = NULL;
    if (!s)
        return 0;
    *ret = strdup(s);
    return *ret ? 0 : -ENOMEM;
}

int kube_list_all(struct kube_client *c, const struct kube_request *req, kube_done_fn done,
                  void *userdata)
{
    return kube_list_start(c, req, done, userdata, NULL);
}

void kube_list_cancel(struct kube_list *la)
{
    if (la->page)
        kube_call_cancel(la->page); /* page_done ends the list with -ECANCELED */
}

int kube_list_start(struct kube_client *c, const struct kube_request *req, kube_done_fn done,
                    void *userdata, struct kube_list **ret_list)
{
    struct kube_list *la = calloc(1, sizeof(*la));
    int r = -ENOMEM;

    if (!la)
        return -ENOMEM;
    la->c = c;
    la->done = done;
    la->userdata = userdata;
    la->req = *req;
    if (dup_opt(req->namespace_, &la->ns) < 0 ||
        dup_opt(req->label_selector, &la->label_selector) < 0 ||
        dup_opt(req->field_selector, &la->field_selector) < 0 ||
        dup_opt(req->resource_version, &la->resource_version) < 0 ||
        dup_opt(req->resource_version_match, &la->rv_match) < 0)
        goto fail;
    la->req.namespace_ = la->ns;
    la->req.label_selector = la->label_selector;
    la->req.field_selector = la->field_selector;
    la->req.resource_version = la->resource_version;
    la->req.resource_version_match = la->rv_match;
    la->req.continue_token = NULL;
    la->req.body = NULL;
    la->items = cJSON_CreateArray();
    if (!la->items)
        goto fail;
    r = list_next(la, req->continue_token);
    if (r < 0)
        goto fail;
    if (ret_list)
        *ret_list = la;
    return 0;
fail:
    list_free(la);
    return r;
}
