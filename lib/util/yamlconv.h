#ifndef NESTCP_UTIL_YAMLCONV_H
#define NESTCP_UTIL_YAMLCONV_H

/*
 * YAML <-> cJSON, with bounds. Plain scalars resolve the way kubectl's YAML reader does
 * (null, booleans including yes/no/on/off, integers, floats); quoted or `!!str` scalars are
 * strings. Anchors and aliases are refused, as are duplicate keys and non-scalar keys.
 */

#include <cjson/cJSON.h>
#include <stddef.h>

#include "lib/util/buf.h"
#include "lib/util/err.h"

#define YAMLCONV_MAX_DEPTH 64
#define YAMLCONV_MAX_NODES 1000000

/* Parses every non-empty document of text into a new cJSON array (caller frees).
 * `origin` names the input in error messages ("config.yaml", "<stdin>").
 * Returns 0, -EINVAL (message with line and column in e), -ENOMEM. */
int yamlconv_parse_all(const char *text, size_t len, const char *origin, cJSON **ret_docs,
                       struct err *e);

/* Like yamlconv_parse_all but requires exactly one document. */
int yamlconv_parse_one(const char *text, size_t len, const char *origin, cJSON **ret_doc,
                       struct err *e);

/* Appends doc as one YAML document (block style, keys in object order) to out.
 * Returns 0 or -ENOMEM. */
int yamlconv_emit(const cJSON *doc, struct buf *out);

/* Appends each element of the array docs as a document, separated by "---" lines. */
int yamlconv_emit_all(const cJSON *docs, struct buf *out);

/* Reads a whole file (at most max bytes) into *ret_text (NUL-terminated, caller frees).
 * Returns 0, -ENOENT/-EACCES/..., -ENOBUFS when larger than max. */
int util_read_file(const char *path, size_t max, char **ret_text, size_t *ret_len);

#endif
