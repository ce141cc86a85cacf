#include "lib/etcd/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* 2^53 - 1: a JSON number up to this reads exactly into a double; 2^53 itself may be 2^53 + 1
 * rounded by the parser. */
#define EXACT_DOUBLE_MAX 9007199254740991.0

int etcd_json_parse_id(const char *s, uint64_t *ret_id)
{
    uint64_t v = 0;
    size_t n = 0;

    if (!s || !*s)
        return -EINVAL;
    for (; s[n]; n++) {
        unsigned d;

        if (s[n] < '0' || s[n] > '9')
            return -EINVAL;
        d = (unsigned)(s[n] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    *ret_id = v;
    return 0;
}

char *etcd_json_format_id(uint64_t id, char out[static ETCD_ID_STRLEN])
{
    snprintf(out, ETCD_ID_STRLEN, "%" PRIu64, id);
    return out;
}

/* Copies s into dst (size bytes) with control characters replaced by spaces. */
static void copy_clean(char *dst, size_t size, const char *s)
{
    size_t i = 0;

    for (; s[i] && i + 1 < size; i++)
        dst[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
    dst[i] = '\0';
}

/* ---- typed fields ---- */

static int bad(struct err *e, const char *path, const char *field, const char *what)
{
    return err_set(e, -EBADMSG, "etcd response: %s%s%s: %s", path, path[0] ? "." : "", field, what);
}

/* An absent field reads as 0. */
static int get_u64(const cJSON *obj, const char *field, const char *path, uint64_t *ret,
                   struct err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    uint64_t x;
    int r;

    if (!v || cJSON_IsNull(v)) {
        *ret = 0;
        return 0;
    }
    if (cJSON_IsString(v)) {
        r = etcd_json_parse_id(v->valuestring, &x);
        if (r == -ERANGE)
            return bad(e, path, field, "larger than a uint64");
        if (r < 0)
            return bad(e, path, field, "not an unsigned decimal integer");
        *ret = x;
        return 0;
    }
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;

        if (!(d >= 0 && d <= EXACT_DOUBLE_MAX) || (double)(uint64_t)d != d)
            return bad(e, path, field, "a JSON number that is no exact unsigned integer");
        *ret = (uint64_t)d;
        return 0;
    }
    return bad(e, path, field, "not an integer");
}

static int get_i64(const cJSON *obj, const char *field, const char *path, int64_t *ret,
                   struct err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    const char *s;
    uint64_t x;
    bool neg;

    if (!v || cJSON_IsNull(v)) {
        *ret = 0;
        return 0;
    }
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;

        if (!(d >= -EXACT_DOUBLE_MAX && d <= EXACT_DOUBLE_MAX) || (double)(int64_t)d != d)
            return bad(e, path, field, "a JSON number that is no exact integer");
        *ret = (int64_t)d;
        return 0;
    }
    if (!cJSON_IsString(v))
        return bad(e, path, field, "not an integer");
    s = v->valuestring;
    neg = s[0] == '-';
    if (etcd_json_parse_id(s + neg, &x) < 0 || x > (uint64_t)INT64_MAX + neg)
        return bad(e, path, field, "not a decimal int64");
    *ret = neg ? (x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x) : (int64_t)x;
    return 0;
}

static int get_bool(const cJSON *obj, const char *field, const char *path, bool *ret, struct err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);

    if (!v || cJSON_IsNull(v)) {
        *ret = false;
        return 0;
    }
    if (!cJSON_IsBool(v))
        return bad(e, path, field, "not a boolean");
    *ret = cJSON_IsTrue(v);
    return 0;
}

/* A borrowed string, "" when absent. */
static int get_str(const cJSON *obj, const char *field, const char *path, const char **ret,
                   struct err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);

    if (!v || cJSON_IsNull(v)) {
        *ret = "";
        return 0;
    }
    if (!cJSON_IsString(v))
        return bad(e, path, field, "not a string");
    if (strlen(v->valuestring) > ETCD_URL_MAX)
        return bad(e, path, field, "longer than its bound");
    *ret = v->valuestring;
    return 0;
}

static int get_header(const cJSON *root, struct etcd_header *h, struct err *e)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "header");
    int r;

    memset(h, 0, sizeof(*h));
    if (!o || cJSON_IsNull(o))
        return 0;
    if (!cJSON_IsObject(o))
        return bad(e, "", "header", "not an object");
    if ((r = get_u64(o, "cluster_id", "header", &h->cluster_id, e)) < 0 ||
        (r = get_u64(o, "member_id", "header", &h->member_id, e)) < 0 ||
        (r = get_u64(o, "revision", "header", &h->revision, e)) < 0 ||
        (r = get_u64(o, "raft_term", "header", &h->raft_term, e)) < 0)
        return r;
    return 0;
}

static cJSON *parse_root(const char *json, size_t len, struct err *e)
{
    cJSON *root;

    if (!json || len == 0) {
        err_set(e, -EBADMSG, "etcd response: empty body");
        return NULL;
    }
    if (len > ETCD_JSON_MAX) {
        err_set(e, -EBADMSG, "etcd response: larger than %zu bytes", ETCD_JSON_MAX);
        return NULL;
    }
    root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(root)) {
        err_set(e, -EBADMSG, "etcd response: not a JSON object");
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* ---- members ---- */

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void member_done(struct etcd_member *m)
{
    free(m->name);
    strv_free(m->peer_urls, m->n_peer_urls);
    strv_free(m->client_urls, m->n_client_urls);
    memset(m, 0, sizeof(*m));
}

void etcd_member_list_free(struct etcd_member_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->n_members; i++)
        member_done(&list->members[i]);
    free(list->members);
    if (list->added)
        member_done(list->added);
    free(list->added);
    free(list);
}

static int get_urls(const cJSON *obj, const char *field, const char *path, char ***ret_v,
                    size_t *ret_n, struct err *e)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, field), *it;
    char **v;
    size_t n = 0;
    int size;

    *ret_v = NULL;
    *ret_n = 0;
    if (!a || cJSON_IsNull(a))
        return 0;
    if (!cJSON_IsArray(a))
        return bad(e, path, field, "not an array");
    size = cJSON_GetArraySize(a);
    if (size == 0)
        return 0;
    if (size > ETCD_URLS_MAX)
        return err_set(e, -E2BIG, "etcd response: %s.%s: more than %d URLs", path, field,
                       ETCD_URLS_MAX);
    v = calloc((size_t)size, sizeof(*v));
    if (!v)
        return -ENOMEM;
    cJSON_ArrayForEach(it, a) {
        if (!cJSON_IsString(it) || strlen(it->valuestring) > ETCD_URL_MAX) {
            strv_free(v, n);
            err_set(e, -EBADMSG, "etcd response: %s.%s[%zu]: %s", path, field, n,
                    cJSON_IsString(it) ? "longer than its bound" : "not a string");
            return -EBADMSG;
        }
        v[n] = strdup(it->valuestring);
        if (!v[n]) {
            strv_free(v, n);
            return -ENOMEM;
        }
        n++;
    }
    *ret_v = v;
    *ret_n = n;
    return 0;
}

/* Fills m from o; on failure m holds nothing. */
static int parse_member(const cJSON *o, const char *path, struct etcd_member *m, struct err *e)
{
    const char *name;
    int r;

    memset(m, 0, sizeof(*m));
    if (!cJSON_IsObject(o))
        return err_set(e, -EBADMSG, "etcd response: %s: not an object", path);
    if (!cJSON_GetObjectItemCaseSensitive(o, "ID"))
        return bad(e, path, "ID", "missing");
    if ((r = get_u64(o, "ID", path, &m->id, e)) < 0 ||
        (r = get_str(o, "name", path, &name, e)) < 0 ||
        (r = get_bool(o, "isLearner", path, &m->is_learner, e)) < 0)
        goto fail;
    if (m->id == 0) {
        r = bad(e, path, "ID", "is 0");
        goto fail;
    }
    r = -ENOMEM;
    m->name = strdup(name);
    if (!m->name)
        goto fail;
    if ((r = get_urls(o, "peerURLs", path, &m->peer_urls, &m->n_peer_urls, e)) < 0 ||
        (r = get_urls(o, "clientURLs", path, &m->client_urls, &m->n_client_urls, e)) < 0)
        goto fail;
    return 0;
fail:
    member_done(m);
    return r;
}

int etcd_json_parse_members(const char *json, size_t len, struct etcd_member_list **ret_list,
                            struct err *e)
{
    struct etcd_member_list *list = NULL;
    const cJSON *a, *it, *added;
    cJSON *root;
    char path[48];
    int r, size;

    root = parse_root(json, len, e);
    if (!root)
        return -EBADMSG;
    r = -ENOMEM;
    list = calloc(1, sizeof(*list));
    if (!list)
        goto out;
    r = get_header(root, &list->header, e);
    if (r < 0)
        goto out;
    a = cJSON_GetObjectItemCaseSensitive(root, "members");
    if (a && !cJSON_IsNull(a)) {
        if (!cJSON_IsArray(a)) {
            r = bad(e, "", "members", "not an array");
            goto out;
        }
        size = cJSON_GetArraySize(a);
        if (size > ETCD_MEMBERS_MAX) {
            r = err_set(e, -E2BIG, "etcd response: more than %d members", ETCD_MEMBERS_MAX);
            goto out;
        }
        if (size > 0) {
            r = -ENOMEM;
            list->members = calloc((size_t)size, sizeof(*list->members));
            if (!list->members)
                goto out;
        }
        cJSON_ArrayForEach(it, a) {
            snprintf(path, sizeof(path), "members[%zu]", list->n_members);
            r = parse_member(it, path, &list->members[list->n_members], e);
            if (r < 0)
                goto out;
            for (size_t i = 0; i < list->n_members; i++) {
                if (list->members[i].id == list->members[list->n_members].id) {
                    member_done(&list->members[list->n_members]);
                    r = bad(e, path, "ID", "appears twice");
                    goto out;
                }
            }
            list->n_members++;
        }
    }
    added = cJSON_GetObjectItemCaseSensitive(root, "member");
    if (added && !cJSON_IsNull(added)) {
        r = -ENOMEM;
        list->added = calloc(1, sizeof(*list->added));
        if (!list->added)
            goto out;
        r = parse_member(added, "member", list->added, e);
        if (r < 0) {
            free(list->added);
            list->added = NULL;
            goto out;
        }
    }
    *ret_list = list;
    list = NULL;
    r = 0;
out:
    etcd_member_list_free(list);
    cJSON_Delete(root);
    return r;
}

const struct etcd_member *etcd_member_list_find(const struct etcd_member_list *list, uint64_t id)
{
    for (size_t i = 0; list && i < list->n_members; i++)
        if (list->members[i].id == id)
            return &list->members[i];
    return NULL;
}

const struct etcd_member *etcd_member_list_find_peer_url(const struct etcd_member_list *list,
                                                         const char *peer_url)
{
    for (size_t i = 0; list && peer_url && i < list->n_members; i++)
        for (size_t j = 0; j < list->members[i].n_peer_urls; j++)
            if (strcmp(list->members[i].peer_urls[j], peer_url) == 0)
                return &list->members[i];
    return NULL;
}

/* ---- status and health ---- */

int etcd_json_parse_status(const char *json, size_t len, struct etcd_status *ret_status,
                           struct err *e)
{
    struct etcd_status s;
    const cJSON *errors, *it;
    const char *str;
    cJSON *root;
    size_t used = 0;
    int r;

    root = parse_root(json, len, e);
    if (!root)
        return -EBADMSG;
    memset(&s, 0, sizeof(s));
    if ((r = get_header(root, &s.header, e)) < 0 || (r = get_str(root, "version", "", &str, e)) < 0)
        goto out;
    copy_clean(s.version, sizeof(s.version), str);
    if ((r = get_str(root, "storageVersion", "", &str, e)) < 0)
        goto out;
    copy_clean(s.storage_version, sizeof(s.storage_version), str);
    if ((r = get_i64(root, "dbSize", "", &s.db_size, e)) < 0 ||
        (r = get_i64(root, "dbSizeInUse", "", &s.db_size_in_use, e)) < 0 ||
        (r = get_i64(root, "dbSizeQuota", "", &s.db_size_quota, e)) < 0 ||
        (r = get_u64(root, "leader", "", &s.leader, e)) < 0 ||
        (r = get_u64(root, "raftIndex", "", &s.raft_index, e)) < 0 ||
        (r = get_u64(root, "raftTerm", "", &s.raft_term, e)) < 0 ||
        (r = get_u64(root, "raftAppliedIndex", "", &s.raft_applied_index, e)) < 0 ||
        (r = get_bool(root, "isLearner", "", &s.is_learner, e)) < 0)
        goto out;
    errors = cJSON_GetObjectItemCaseSensitive(root, "errors");
    if (errors && !cJSON_IsNull(errors)) {
        if (!cJSON_IsArray(errors)) {
            r = bad(e, "", "errors", "not an array");
            goto out;
        }
        cJSON_ArrayForEach(it, errors) {
            if (!cJSON_IsString(it)) {
                r = bad(e, "", "errors", "holds something other than a string");
                goto out;
            }
            if (used + 3 < sizeof(s.errors)) {
                if (used) {
                    memcpy(s.errors + used, "; ", 2);
                    used += 2;
                }
                copy_clean(s.errors + used, sizeof(s.errors) - used, it->valuestring);
                used += strlen(s.errors + used);
            }
            s.n_errors++;
        }
    }
    *ret_status = s;
    r = 0;
out:
    cJSON_Delete(root);
    return r;
}

int etcd_json_parse_health(const char *json, size_t len, struct err *e)
{
    const char *health, *reason;
    char clean[ERR_MSG_MAX];
    cJSON *root;
    int r;

    root = parse_root(json, len, e);
    if (!root)
        return -EBADMSG;
    if ((r = get_str(root, "health", "", &health, e)) < 0 ||
        (r = get_str(root, "reason", "", &reason, e)) < 0)
        goto out;
    if (strcmp(health, "true") == 0) {
        r = 0;
    } else if (strcmp(health, "false") == 0) {
        copy_clean(clean, sizeof(clean), reason[0] ? reason : "unhealthy");
        r = err_set(e, -ENETDOWN, "%s", clean);
    } else {
        r = bad(e, "", "health", "neither \"true\" nor \"false\"");
    }
out:
    cJSON_Delete(root);
    return r;
}

/* ---- errors ---- */

/* etcd's messages (api/v3rpc/rpctypes), matched as substrings in this order: the text of a
 * longer message that contains a shorter one comes first. */
static const struct {
    const char *text;
    int code;
} known_messages[] = {
    {"can only promote a learner member which is in sync with leader", -EAGAIN},
    {"can only promote a learner member", -EALREADY},
    {"too many learner members in cluster", -EUSERS},
    {"member not found", -ENOENT},
    {"ID not found", -ENOENT},
    {"Peer URLs already exists", -EEXIST},
    {"member ID already exist", -EEXIST},
    {"re-configuration failed due to not enough started members", -EHOSTDOWN},
    {"unhealthy cluster", -ENETDOWN},
    {"no leader", -EBUSY},
    {"leader changed", -EBUSY},
    {"request timed out", -EBUSY},
    {"too many requests", -EBUSY},
    {"server stopped", -EBUSY},
    {"rpc not supported for learner", -EOPNOTSUPP},
    {"not capable", -EOPNOTSUPP},
    {"given member URLs are invalid", -EINVAL},
    {"permission denied", -EPERM},
};

static int code_of_message(const char *m)
{
    if (!m)
        return 0;
    /* What the gateway answers for a path it does not route. */
    if (strcmp(m, "Not Found") == 0)
        return -EOPNOTSUPP;
    for (size_t i = 0; i < sizeof(known_messages) / sizeof(known_messages[0]); i++)
        if (strstr(m, known_messages[i].text))
            return known_messages[i].code;
    return 0;
}

static int code_of_grpc(double c)
{
    switch ((int)c) {
    case 3:  /* INVALID_ARGUMENT */
    case 11: /* OUT_OF_RANGE */
        return -EINVAL;
    case 4:  /* DEADLINE_EXCEEDED */
    case 8:  /* RESOURCE_EXHAUSTED */
    case 14: /* UNAVAILABLE */
        return -EBUSY;
    case 5: /* NOT_FOUND */
        return -ENOENT;
    case 6: /* ALREADY_EXISTS */
        return -EEXIST;
    case 7: /* PERMISSION_DENIED */
        return -EPERM;
    case 12: /* UNIMPLEMENTED */
        return -EOPNOTSUPP;
    case 16: /* UNAUTHENTICATED */
        return -EACCES;
    default:
        return 0;
    }
}

static int code_of_http(long status)
{
    switch (status) {
    case 400:
        return -EINVAL;
    case 401:
        return -EACCES;
    case 403:
        return -EPERM;
    case 404:
        return -EOPNOTSUPP;
    case 429:
    case 503:
    case 504:
        return -EBUSY;
    default:
        return -EIO;
    }
}

int etcd_json_parse_error(long http_status, const char *body, size_t len, struct err *e)
{
    const char *message = NULL;
    char clean[ERR_MSG_MAX];
    cJSON *root = NULL;
    int code = 0;

    if (http_status >= 200 && http_status < 300)
        return 0;
    if (body && len > 0 && len <= ETCD_JSON_MAX)
        root = cJSON_ParseWithLength(body, len);
    if (cJSON_IsObject(root)) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "message");
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "code");

        if (!cJSON_IsString(m) || !m->valuestring[0])
            m = cJSON_GetObjectItemCaseSensitive(root, "error");
        if (cJSON_IsString(m) && m->valuestring[0])
            message = m->valuestring;
        code = code_of_message(message);
        if (!code && cJSON_IsNumber(g) && g->valuedouble >= 0 && g->valuedouble < 64)
            code = code_of_grpc(g->valuedouble);
    }
    if (!code)
        code = code_of_http(http_status);
    if (message) {
        copy_clean(clean, sizeof(clean), message);
        err_set(e, code, "%s", clean);
    } else {
        err_set(e, code, "HTTP %ld", http_status);
    }
    cJSON_Delete(root);
    return code;
}

/* ---- request bodies ---- */

int etcd_json_add_body(const char *const *peer_urls, size_t n_peer_urls, bool is_learner,
                       char **ret_body, struct err *e)
{
    cJSON *root, *urls;
    char *body;

    if (!peer_urls || n_peer_urls == 0 || n_peer_urls > ETCD_URLS_MAX)
        return err_set(e, -EINVAL, "etcd member add: 1 to %d peer URLs are needed, not %zu",
                       ETCD_URLS_MAX, n_peer_urls);
    for (size_t i = 0; i < n_peer_urls; i++) {
        const char *u = peer_urls[i];
        size_t len = u ? strlen(u) : 0;

        if (len == 0 || len > ETCD_URL_MAX)
            return err_set(e, -EINVAL, "etcd member add: peer URL %zu is empty or too long", i);
        for (size_t j = 0; j < len; j++)
            if ((unsigned char)u[j] < 0x21 || u[j] == 0x7f)
                return err_set(e, -EINVAL,
                               "etcd member add: peer URL %zu holds a space or control character",
                               i);
    }
    root = cJSON_CreateObject();
    urls = cJSON_AddArrayToObject(root, "peerURLs");
    if (!urls)
        goto oom;
    for (size_t i = 0; i < n_peer_urls; i++) {
        cJSON *s = cJSON_CreateString(peer_urls[i]);

        if (!s || !cJSON_AddItemToArray(urls, s)) {
            cJSON_Delete(s);
            goto oom;
        }
    }
    if (!cJSON_AddBoolToObject(root, "isLearner", is_learner))
        goto oom;
    body = cJSON_PrintUnformatted(root);
    if (!body)
        goto oom;
    cJSON_Delete(root);
    *ret_body = body;
    return 0;
oom:
    cJSON_Delete(root);
    return -ENOMEM;
}

int etcd_json_id_body(uint64_t id, char **ret_body)
{
    char num[ETCD_ID_STRLEN], *body;
    size_t size = sizeof(num) + 16;

    body = malloc(size);
    if (!body)
        return -ENOMEM;
    snprintf(body, size, "{\"ID\":\"%s\"}", etcd_json_format_id(id, num));
    *ret_body = body;
    return 0;
}
