#ifndef NESTCP_KUBE_WATCH_H
#define NESTCP_KUBE_WATCH_H

/*
 * The watch stream decoder: newline-separated JSON events ({"type": ..., "object": ...}) that
 * may arrive split at any byte. A line longer than the bound is an error, never unbounded
 * growth. A complete line that is not an event (not JSON, no string "type", no object
 * "object") is skipped and counted, and decoding goes on with the next line, as client-go's
 * reflector skips events it cannot use. kube_watch_start (client.h) feeds it from the HTTP stream;
 * it is separate so tests and fuzzers can drive it directly.
 */

#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/util/buf.h"

/* Called per complete event: type is the event's "type" string, object its "object" (both
 * borrowed; the callback may detach object from event to keep it). Return 0 to go on, or a
 * negative code to stop decoding (kube_watch_decoder_feed returns it). */
typedef int (*kube_watch_decoded_fn)(void *userdata, const char *type, cJSON *object, cJSON *event);

struct kube_watch_decoder {
    struct buf line; /* the incomplete line so far */
    size_t max_line;
    unsigned long lines;   /* non-empty lines seen */
    unsigned long skipped; /* lines that were not events */
};

void kube_watch_decoder_init(struct kube_watch_decoder *d, size_t max_line);
void kube_watch_decoder_done(struct kube_watch_decoder *d);

/* Consumes len bytes. Returns 0, the callback's negative code, -EMSGSIZE (a line longer than
 * max_line), -ENOMEM. After an error the decoder must not be fed again. */
int kube_watch_decoder_feed(struct kube_watch_decoder *d, const char *data, size_t len,
                            kube_watch_decoded_fn fn, void *userdata);

#endif
