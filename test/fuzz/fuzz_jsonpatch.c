/* Fuzz target for JSON Pointer, JSON Patch and JSON Merge Patch (lib/util/jsonpatch.h). The
 * input's first line is the document and the rest the patch, both JSON. The patch is applied as
 * RFC 6902 operations and as an RFC 7386 merge patch; neither may change its inputs, a failed
 * JSON Patch returns nothing, a merge patch applied twice gives what it gave once, and every
 * "path" of the operations is looked up as a pointer. Inputs with duplicate member names are
 * skipped: nestcp never reads such JSON, and cJSON_Compare cannot judge it. hack/fuzz.sh builds
 * it with libFuzzer; test/fuzz/CMakeLists.txt replays the corpus. */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/jsonpatch.h"
#include "test/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
    fuzz_check(ok, "fuzz_jsonpatch", what, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    size_t doc_len = nl ? (size_t)(nl - text) : size;
    cJSON *doc, *patch = NULL, *doc0 = NULL, *patch0 = NULL, *out, *merged = NULL, *twice = NULL;
    const cJSON *op, *found;
    struct err e;
    int r;

    doc = cJSON_ParseWithLength(text, doc_len);
    if (nl)
        patch = cJSON_ParseWithLength(nl + 1, size - doc_len - 1);
    if (!doc || !patch || fuzz_json_has_duplicate_keys(doc) || fuzz_json_has_duplicate_keys(patch))
        goto out;
    doc0 = cJSON_Duplicate(doc, 1);
    patch0 = cJSON_Duplicate(patch, 1);
    if (!doc0 || !patch0)
        goto out;

    /* RFC 6902: atomic, inputs untouched. */
    out = (cJSON *)0x1;
    err_clear(&e);
    r = jsonpatch_apply(doc, patch, &out, &e);
    check(r == 0 || r == -EINVAL || r == -ENOENT || r == -EBUSY || r == -ENOMEM,
          "unexpected code from jsonpatch_apply");
    if (r == 0)
        cJSON_Delete(out);
    else
        check(out == (cJSON *)0x1 && e.msg[0] != '\0',
              "a failed patch wrote a result or no message");
    check(fuzz_json_same(doc, doc0) && fuzz_json_same(patch, patch0),
          "jsonpatch_apply changed its inputs");

    /* The pointers the operations name resolve or fail cleanly. */
    if (cJSON_IsArray(patch)) {
        cJSON_ArrayForEach(op, patch) {
            const cJSON *path = cJSON_GetObjectItemCaseSensitive(op, "path");
            if (cJSON_IsString(path)) {
                r = jsonpatch_pointer_get(doc, path->valuestring, &found);
                check(r == 0 || r == -EINVAL || r == -ENOENT, "unexpected code from pointer_get");
            }
        }
    }

    /* RFC 7386: inputs untouched, and idempotent. */
    if (jsonpatch_merge(doc, patch, &merged) == 0) {
        check(fuzz_json_same(doc, doc0) && fuzz_json_same(patch, patch0),
              "jsonpatch_merge changed its inputs");
        if (jsonpatch_merge(merged, patch, &twice) == 0)
            check(cJSON_Compare(merged, twice, 1), "a merge patch applied twice changed again");
    }

out:
    cJSON_Delete(twice);
    cJSON_Delete(merged);
    cJSON_Delete(patch0);
    cJSON_Delete(doc0);
    cJSON_Delete(patch);
    cJSON_Delete(doc);
    return 0;
}
