/* Fuzz target for the YAML reader and writer (lib/util/yamlconv.h): parse a stream, check that a
 * failure names a line and column, write the documents back out, read that text again and
 * require the same documents: same types, same keys in the same order, the same numbers to the
 * bit. hack/fuzz.sh builds it with libFuzzer; test/fuzz/CMakeLists.txt replays the corpus. */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "lib/util/buf.h"
#include "lib/util/yamlconv.h"
#include "test/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail_with(const char *what, const char *detail)
{
    fuzz_check(false, "fuzz_yaml", what, detail);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *docs = NULL, *again = NULL, *one = NULL;
    struct buf out = BUF_INIT;
    struct err e;
    int r;

    err_clear(&e);
    r = yamlconv_parse_all((const char *)data, size, "fuzz", &docs, &e);
    if (r == -EINVAL) {
        if (strncmp(e.msg, "fuzz: line ", 11) != 0 || !strstr(e.msg, ", column "))
            fail_with("error without line and column", e.msg);
        return 0;
    }
    if (r < 0)
        return 0; /* out of memory */
    if (!cJSON_IsArray(docs))
        fail_with("parse_all did not return an array", NULL);

    /* parse_one agrees with parse_all on the number of documents. */
    r = yamlconv_parse_one((const char *)data, size, "fuzz", &one, &e);
    if ((r == 0) != (cJSON_GetArraySize(docs) == 1))
        fail_with("parse_one disagrees with parse_all", e.msg);
    if (r == 0 && !fuzz_json_same(one, docs->child))
        fail_with("parse_one returned a different document", NULL);
    cJSON_Delete(one);

    if (yamlconv_emit_all(docs, &out) < 0)
        fail_with("emit_all failed", NULL);
    err_clear(&e);
    r = yamlconv_parse_all(out.data ? out.data : "", out.len, "emitted", &again, &e);
    if (r < 0)
        fail_with("the emitted text does not parse", out.data);
    if (!fuzz_json_same(docs, again)) {
        char *want = cJSON_PrintUnformatted(docs), *got = cJSON_PrintUnformatted(again);
        fprintf(stderr, "want %s\ngot  %s\n", want ? want : "?", got ? got : "?");
        fail_with("the emitted text reads back differently", out.data);
    }
    cJSON_Delete(again);
    cJSON_Delete(docs);
    buf_done(&out);
    return 0;
}
