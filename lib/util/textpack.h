#ifndef NESTCP_UTIL_TEXTPACK_H
#define NESTCP_UTIL_TEXTPACK_H

/*
 * A lossless packing of text that carries binary data as base64 or PEM, for a compressor.
 *
 * A Secret's values are base64; a certificate's is base64 of PEM, itself base64 of DER; a
 * kubeconfig's is base64 of YAML whose *-data fields are base64 of PEM. Each layer of base64
 * costs a third more bytes, and hides from a compressor what repeats inside: an etcd serving
 * certificate names its members' addresses dozens of times, all of it noise once encoded.
 * Packing undoes the layers: every run of base64 (at least TEXTPACK_MIN_RUN characters) is
 * kept decoded, and every PEM block as its label and DER, each decoded part packed again in
 * turn, a few layers deep. A part is packed only when encoding it again gives back exactly the
 * characters it came from, so unpacking always gives back the text byte for byte.
 *
 * The packed form is a sequence of parts, each a tag byte, its length (LEB128) and its bytes:
 * 'T' text as it was, 'B' base64 whose decoded bytes are the packed form of the part's bytes,
 * 'P' a PEM block: its label, a NUL, its DER.
 */

#include <stdbool.h>
#include <stddef.h>

#include "lib/util/buf.h"

/* Shorter runs of base64 characters stay text: words, names, hashes. */
#define TEXTPACK_MIN_RUN 64

/* Appends the packed form of text[0..len) to out and returns 1, or returns 0 when nothing in it
 * can be packed (out unchanged: keep the text as it is). -ENOMEM. */
int textpack_pack(const void *text, size_t len, struct buf *out);

/* Appends the text whose packed form is packed[0..len) to out. Returns 0, -EINVAL (not a packed
 * form; out may hold part of it), -ENOMEM. */
int textpack_unpack(const void *packed, size_t len, struct buf *out);

#endif
