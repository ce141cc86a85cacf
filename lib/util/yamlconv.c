#include "lib/util/yamlconv.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

struct frame {
    cJSON *node;
    char *pending_key; /* for mappings: a key read, waiting for its value */
};

struct parse_state {
    struct frame stack[YAMLCONV_MAX_DEPTH + 1];
    int depth;
    size_t nodes;
    cJSON *doc;
};

static bool str_in(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

static bool looks_float(const char *s)
{
    const char *p = s;
    bool digits = false;

    if (*p == '+' || *p == '-')
        p++;
    while (*p >= '0' && *p <= '9') {
        p++;
        digits = true;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            p++;
            digits = true;
        }
    }
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

static const char *const null_words[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const true_words[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                         "on",   "On",   "ON",   "y",   "Y",   NULL};
static const char *const false_words[] = {"false", "False", "FALSE", "no", "No", "NO",
                                          "off",   "Off",   "OFF",   "n",  "N",  NULL};

/* Resolves a plain scalar to a typed cJSON node. */
static cJSON *resolve_plain(const char *s)
{
    char *end;

    /* Most scalars are names and flags: no word above starts with their first letter. */
    if (!*s || strchr("~nNtTyYoOfF", *s)) {
        if (str_in(s, null_words))
            return cJSON_CreateNull();
        if (str_in(s, true_words))
            return cJSON_CreateTrue();
        if (str_in(s, false_words))
            return cJSON_CreateFalse();
    }
    if ((s[0] >= '0' && s[0] <= '9') ||
        ((s[0] == '-' || s[0] == '+') && s[1] >= '0' && s[1] <= '9')) {
        long long v;
        errno = 0;
        v = strtoll(s, &end, 0);
        if (*end == '\0' && errno == 0)
            return cJSON_CreateNumber((double)v);
        if (looks_float(s))
            return cJSON_CreateNumber(strtod(s, NULL));
    } else if (s[0] == '.' && looks_float(s)) {
        return cJSON_CreateNumber(strtod(s, NULL));
    }
    if (strcmp(s, ".inf") == 0 || strcmp(s, ".Inf") == 0 || strcmp(s, "+.inf") == 0)
        return cJSON_CreateNumber(INFINITY);
    if (strcmp(s, "-.inf") == 0 || strcmp(s, "-.Inf") == 0)
        return cJSON_CreateNumber(-INFINITY);
    return cJSON_CreateString(s);
}

static int mark_err(struct err *e, const char *origin, const yaml_mark_t *m, const char *what)
{
    return err_set(e, -EINVAL, "%s: line %zu, column %zu: %s", origin, m->line + 1, m->column + 1,
                   what);
}

/* Adds node to the container on top of the stack (or makes it the document root). */
static int attach(struct parse_state *st, cJSON *node, const char *origin, const yaml_mark_t *m,
                  struct err *e)
{
    struct frame *top;

    if (++st->nodes > YAMLCONV_MAX_NODES) {
        cJSON_Delete(node);
        return mark_err(e, origin, m, "document has too many nodes");
    }
    if (st->depth == 0) {
        st->doc = node;
        return 0;
    }
    top = &st->stack[st->depth - 1];
    if (cJSON_IsArray(top->node)) {
        cJSON_AddItemToArray(top->node, node);
        return 0;
    }
    if (!top->pending_key) {
        /* a key: must be a scalar */
        if (cJSON_IsObject(node) || cJSON_IsArray(node)) {
            cJSON_Delete(node);
            return mark_err(e, origin, m, "mapping keys must be scalars");
        }
        if (cJSON_IsString(node)) {
            top->pending_key = strdup(node->valuestring);
        } else {
            char *k = cJSON_PrintUnformatted(node);
            top->pending_key = k;
        }
        cJSON_Delete(node);
        if (!top->pending_key)
            return err_set(e, -ENOMEM, "out of memory");
        if (cJSON_GetObjectItemCaseSensitive(top->node, top->pending_key)) {
            char msg[400];
            /* At the top of a document this is most often two files joined without the "---"
             * that starts a document: say so. */
            snprintf(msg, sizeof(msg), "duplicate key \"%.200s\"%s", top->pending_key,
                     st->depth == 1 ? " (a second object without a \"---\" line before it?)" : "");
            return mark_err(e, origin, m, msg);
        }
        return 0;
    }
    cJSON_AddItemToObject(top->node, top->pending_key, node);
    free(top->pending_key);
    top->pending_key = NULL;
    return 0;
}

static void state_clear(struct parse_state *st)
{
    /* containers still open are not yet attached to their parents */
    for (int i = 0; i < st->depth; i++) {
        free(st->stack[i].pending_key);
        cJSON_Delete(st->stack[i].node);
    }
    cJSON_Delete(st->doc);
    st->depth = 0;
    st->doc = NULL;
}

int yamlconv_parse_all(const char *text, size_t len, const char *origin, cJSON **ret_docs,
                       struct err *e)
{
    struct parse_state st = {0};
    yaml_parser_t parser;
    yaml_event_t ev;
    cJSON *docs = cJSON_CreateArray();
    int r = -EINVAL;
    bool done = false;

    if (!docs)
        return err_set(e, -ENOMEM, "out of memory");
    if (!yaml_parser_initialize(&parser)) {
        cJSON_Delete(docs);
        return err_set(e, -ENOMEM, "out of memory");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (!done) {
        cJSON *node = NULL;

        if (!yaml_parser_parse(&parser, &ev)) {
            char msg[256];
            snprintf(msg, sizeof(msg), "%s%s%s", parser.problem ? parser.problem : "syntax error",
                     parser.context ? " " : "", parser.context ? parser.context : "");
            r = mark_err(e, origin, &parser.problem_mark, msg);
            goto out;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            st.doc = NULL;
            st.nodes = 0;
            break;
        case YAML_DOCUMENT_END_EVENT:
            if (st.doc && !cJSON_IsNull(st.doc))
                cJSON_AddItemToArray(docs, st.doc);
            else
                cJSON_Delete(st.doc);
            st.doc = NULL;
            break;
        case YAML_ALIAS_EVENT:
            r = mark_err(e, origin, &ev.start_mark, "YAML aliases are not supported");
            yaml_event_delete(&ev);
            goto out;
        case YAML_SCALAR_EVENT: {
            const char *v = (const char *)ev.data.scalar.value;
            const char *tag = (const char *)ev.data.scalar.tag;
            if (ev.data.scalar.anchor) {
                r = mark_err(e, origin, &ev.start_mark, "YAML anchors are not supported");
                yaml_event_delete(&ev);
                goto out;
            }
            if ((tag && strcmp(tag, YAML_STR_TAG) == 0) || !ev.data.scalar.plain_implicit)
                node = cJSON_CreateString(v);
            else
                node = resolve_plain(v);
            if (!node) {
                r = err_set(e, -ENOMEM, "out of memory");
                yaml_event_delete(&ev);
                goto out;
            }
            r = attach(&st, node, origin, &ev.start_mark, e);
            if (r < 0) {
                yaml_event_delete(&ev);
                goto out;
            }
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            bool seq = ev.type == YAML_SEQUENCE_START_EVENT;
            const yaml_char_t *anchor =
                seq ? ev.data.sequence_start.anchor : ev.data.mapping_start.anchor;
            if (anchor) {
                r = mark_err(e, origin, &ev.start_mark, "YAML anchors are not supported");
                yaml_event_delete(&ev);
                goto out;
            }
            if (st.depth >= YAMLCONV_MAX_DEPTH) {
                r = mark_err(e, origin, &ev.start_mark, "nesting is too deep");
                yaml_event_delete(&ev);
                goto out;
            }
            node = seq ? cJSON_CreateArray() : cJSON_CreateObject();
            if (!node) {
                r = err_set(e, -ENOMEM, "out of memory");
                yaml_event_delete(&ev);
                goto out;
            }
            st.stack[st.depth].node = node;
            st.stack[st.depth].pending_key = NULL;
            st.depth++;
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            st.depth--;
            node = st.stack[st.depth].node;
            free(st.stack[st.depth].pending_key);
            st.stack[st.depth].pending_key = NULL;
            r = attach(&st, node, origin, &ev.start_mark, e);
            if (r < 0) {
                yaml_event_delete(&ev);
                goto out;
            }
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    *ret_docs = docs;
    docs = NULL;
    r = 0;
out:
    state_clear(&st);
    cJSON_Delete(docs);
    yaml_parser_delete(&parser);
    return r;
}

int yamlconv_parse_one(const char *text, size_t len, const char *origin, cJSON **ret_doc,
                       struct err *e)
{
    cJSON *docs = NULL;
    int n, r;

    r = yamlconv_parse_all(text, len, origin, &docs, e);
    if (r < 0)
        return r;
    n = cJSON_GetArraySize(docs);
    if (n != 1) {
        cJSON_Delete(docs);
        return err_set(e, -EINVAL, "%s: expected one YAML document, found %d", origin, n);
    }
    *ret_doc = cJSON_DetachItemFromArray(docs, 0);
    cJSON_Delete(docs);
    return 0;
}

/* ---- emitting ---- */

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
    return buf_append(data, buffer, size) == 0;
}

/* True when s, written plain, would read back as something other than this string. */
static bool needs_quotes(const char *s)
{
    cJSON *n;
    bool q;

    if (!*s)
        return true;
    n = resolve_plain(s);
    q = !n || !cJSON_IsString(n);
    cJSON_Delete(n);
    if (!q && (strchr("-?:,[]{}#&*!|>'\"%@`", s[0]) || s[0] == ' ' || s[strlen(s) - 1] == ' '))
        q = true;
    return q;
}

static int emit_node(yaml_emitter_t *em, const cJSON *n)
{
    yaml_event_t ev;
    char num[64];
    const char *val;
    yaml_scalar_style_t style = YAML_PLAIN_SCALAR_STYLE;

    if (cJSON_IsObject(n) || cJSON_IsArray(n)) {
        bool obj = cJSON_IsObject(n);
        bool empty = n->child == NULL;
        const cJSON *c;

        if (obj)
            yaml_mapping_start_event_initialize(
                &ev, NULL, NULL, 1, empty ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
        else
            yaml_sequence_start_event_initialize(
                &ev, NULL, NULL, 1, empty ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
        if (!yaml_emitter_emit(em, &ev))
            return -ENOMEM;
        for (c = n->child; c; c = c->next) {
            if (obj) {
                yaml_scalar_event_initialize(
                    &ev, NULL, NULL, (yaml_char_t *)c->string, (int)strlen(c->string), 1, 1,
                    needs_quotes(c->string) ? YAML_SINGLE_QUOTED_SCALAR_STYLE
                                            : YAML_PLAIN_SCALAR_STYLE);
                if (!yaml_emitter_emit(em, &ev))
                    return -ENOMEM;
            }
            if (emit_node(em, c) < 0)
                return -ENOMEM;
        }
        if (obj)
            yaml_mapping_end_event_initialize(&ev);
        else
            yaml_sequence_end_event_initialize(&ev);
        return yaml_emitter_emit(em, &ev) ? 0 : -ENOMEM;
    }
    if (cJSON_IsString(n)) {
        val = n->valuestring;
        if (strchr(val, '\n'))
            style = YAML_LITERAL_SCALAR_STYLE;
        else if (needs_quotes(val))
            style = YAML_SINGLE_QUOTED_SCALAR_STYLE;
    } else if (cJSON_IsBool(n)) {
        val = cJSON_IsTrue(n) ? "true" : "false";
    } else if (cJSON_IsNumber(n)) {
        double d = n->valuedouble;
        if (isinf(d)) /* YAML's spelling; "%g" would write "inf", which reads back as text */
            snprintf(num, sizeof(num), "%s", d > 0 ? ".inf" : "-.inf");
        else if (isnan(d))
            snprintf(num, sizeof(num), ".nan");
        else if (d == floor(d) && fabs(d) < 9007199254740992.0)
            snprintf(num, sizeof(num), "%lld", (long long)d);
        else
            snprintf(num, sizeof(num), "%.17g", d);
        val = num;
    } else {
        val = "null";
    }
    yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)val, (int)strlen(val), 1, 1,
                                 style);
    return yaml_emitter_emit(em, &ev) ? 0 : -ENOMEM;
}

static int emit_docs(const cJSON *const *docs, int n, struct buf *out)
{
    yaml_emitter_t em;
    yaml_event_t ev;
    int r = -ENOMEM;

    if (!yaml_emitter_initialize(&em))
        return -ENOMEM;
    yaml_emitter_set_output(&em, write_handler, out);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, -1);
    yaml_emitter_set_indent(&em, 2);
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    if (!yaml_emitter_emit(&em, &ev))
        goto out;
    for (int i = 0; i < n; i++) {
        yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, i == 0);
        if (!yaml_emitter_emit(&em, &ev))
            goto out;
        if (emit_node(&em, docs[i]) < 0)
            goto out;
        yaml_document_end_event_initialize(&ev, 1);
        if (!yaml_emitter_emit(&em, &ev))
            goto out;
    }
    yaml_stream_end_event_initialize(&ev);
    if (!yaml_emitter_emit(&em, &ev))
        goto out;
    r = 0;
out:
    yaml_emitter_delete(&em);
    return r;
}

int yamlconv_emit(const cJSON *doc, struct buf *out)
{
    return emit_docs(&doc, 1, out);
}

int yamlconv_emit_all(const cJSON *docs, struct buf *out)
{
    int n = cJSON_GetArraySize(docs), i = 0, r;
    const cJSON **arr;
    const cJSON *c;

    if (n == 0)
        return 0;
    arr = calloc((size_t)n, sizeof(*arr));
    if (!arr)
        return -ENOMEM;
    cJSON_ArrayForEach(c, docs)
        arr[i++] = c;
    r = emit_docs(arr, n, out);
    free(arr);
    return r;
}

int util_read_file(const char *path, size_t max, char **ret_text, size_t *ret_len)
{
    struct buf b;
    char chunk[65536];
    int fd, r = 0;
    ssize_t n;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    buf_init(&b, max);
    for (;;) {
        n = read(fd, chunk, sizeof(chunk));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            break;
        }
        if (n == 0)
            break;
        r = buf_append(&b, chunk, (size_t)n);
        if (r < 0)
            break;
    }
    close(fd);
    if (r < 0) {
        buf_done(&b);
        return r;
    }
    if (ret_len)
        *ret_len = b.len;
    *ret_text = buf_steal(&b);
    return *ret_text ? 0 : -ENOMEM;
}
