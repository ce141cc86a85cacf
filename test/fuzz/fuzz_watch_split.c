/* libFuzzer target: a watch stream decodes the same however it is split. The input's first
 * 8 bytes seed the split points, the rest is the stream. It is decoded once in one piece and
 * once in random pieces (1 to 300 bytes, as TLS records and HTTP/2 DATA frames cut it), and
 * the two must agree on every event (type and object, printed), on the lines skipped as not
 * events, on the result code, and on what is left waiting for a newline. The line bound is
 * small (2 KiB) so over-long lines are reached too.
 * hack/fuzz.sh builds it with libFuzzer; test/fuzz/CMakeLists.txt replays the corpus.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kube/watch.h"
#include "lib/util/buf.h"
#include "test/fuzz/fuzz_util.h"

#define LINE_MAX_BYTES 2048

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int record(void *userdata, const char *type, cJSON *object, cJSON *event)
{
    struct buf *log = userdata;
    char *text = cJSON_PrintUnformatted(object);

    buf_printf(log, "%s %s\n", type, text ? text : "(no memory)");
    free(text);
    return 0;
}

struct run {
    struct buf log;
    unsigned long skipped, lines;
    size_t pending;
    int code;
};

static void decode(const uint8_t *data, size_t size, uint64_t seed, struct run *out)
{
    struct kube_watch_decoder d;
    size_t off = 0;

    buf_init(&out->log, 0);
    kube_watch_decoder_init(&d, LINE_MAX_BYTES);
    out->code = 0;
    while (off < size && out->code == 0) {
        size_t len = size - off;

        if (seed) {
            /* xorshift64: reproducible split points, nothing secret. */
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            if (len > 1 + seed % 300)
                len = 1 + seed % 300;
        }
        out->code = kube_watch_decoder_feed(&d, (const char *)data + off, len, record, &out->log);
        off += len;
    }
    out->skipped = d.skipped;
    out->lines = d.lines;
    out->pending = d.line.len;
    kube_watch_decoder_done(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct run whole, split;
    uint64_t seed = 0;

    if (size < 8)
        return 0;
    memcpy(&seed, data, 8);
    seed |= 1; /* never 0: 0 means "one piece" */
    data += 8;
    size -= 8;
    decode(data, size, 0, &whole);
    decode(data, size, seed, &split);
    fuzz_check(whole.code == split.code, "fuzz_watch_split", "result codes differ", NULL);
    /* An over-long line stops both at the same line, after the same events. */
    fuzz_check(whole.log.len == split.log.len &&
                   memcmp(whole.log.data ? whole.log.data : "",
                          split.log.data ? split.log.data : "", whole.log.len) == 0,
               "fuzz_watch_split", "events differ", split.log.data);
    fuzz_check(whole.skipped == split.skipped && whole.lines == split.lines, "fuzz_watch_split",
               "skipped lines differ", NULL);
    if (whole.code == 0)
        fuzz_check(whole.pending == split.pending, "fuzz_watch_split",
                   "the incomplete last line differs", NULL);
    fuzz_check(whole.pending <= LINE_MAX_BYTES && split.pending <= LINE_MAX_BYTES,
               "fuzz_watch_split", "the line bound did not hold", NULL);
    buf_done(&whole.log);
    buf_done(&split.log);
    return 0;
}
