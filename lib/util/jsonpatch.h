#ifndef NESTCP_UTIL_JSONPATCH_H
#define NESTCP_UTIL_JSONPATCH_H

/*
 * JSON Pointer (RFC 6901), JSON Patch (RFC 6902) and JSON Merge Patch (RFC 7386) over cJSON.
 *
 * Patching never modifies its inputs: each apply returns a new document, and on failure returns
 * nothing (a JSON Patch is atomic, as RFC 6902 section 5 asks). Object member names compare
 * case-sensitively.
 */

#include <cjson/cJSON.h>

#include "lib/util/err.h"

/* The most values (objects, arrays and scalars) a JSON patch may leave in a document. */
#define JSONPATCH_MAX_NODES 200000

/* Finds the value that pointer (e.g. "/spec/template/spec/containers/0") names in doc; ""
 * names doc itself. The result is borrowed from doc. Returns 0, -EINVAL for a malformed pointer
 * (does not start with '/', bad "~" escape), -ENOENT when nothing is there. */
int jsonpatch_pointer_get(const cJSON *doc, const char *pointer, const cJSON **ret_value);

/* Applies the RFC 6902 operation array ops to a copy of doc. Operations: add, remove, replace,
 * move, copy, test; members other than op/path/from/value are ignored, as the RFC says.
 * Returns 0 and the patched copy in *ret_doc (caller frees), or:
 *   -EINVAL  the patch is malformed (not an array, unknown op, missing or repeated member,
 *            "from" that is a prefix of "path" for move, removal of the whole document);
 *   -ENOENT  a path or "from" names a location that does not exist;
 *   -EBUSY   a "test" operation found a different value;
 *   -E2BIG   the result would hold more than JSONPATCH_MAX_NODES values.
 * The message in e names the operation index ("operation 2 (test /a): ..."). */
int jsonpatch_apply(const cJSON *doc, const cJSON *ops, cJSON **ret_doc, struct err *e);

/* The values in v (v itself, and every object, array and scalar below it), counting no
 * further than about limit: a result above limit means "more than limit". 0 for NULL. */
size_t jsonpatch_count_values(const cJSON *v, size_t limit);

/* Applies the RFC 7386 merge patch to a copy of doc: objects merge member by member, null
 * removes a member, anything else (arrays included) replaces. doc may be NULL (no document).
 * Returns 0 and the result in *ret_doc (caller frees), or -ENOMEM. */
int jsonpatch_merge(const cJSON *doc, const cJSON *patch, cJSON **ret_doc);

#endif
