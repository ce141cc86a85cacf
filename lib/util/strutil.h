#ifndef NESTCP_UTIL_STRUTIL_H
#define NESTCP_UTIL_STRUTIL_H

/* Small checked string helpers used across layers. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a whole string as a base-10 integer within [min, max]. Returns 0 or -EINVAL/-ERANGE. */
int str_to_int64(const char *s, int64_t min, int64_t max, int64_t *ret);
int str_to_int(const char *s, int min, int max, int *ret);

bool str_has_prefix(const char *s, const char *prefix);
bool str_has_suffix(const char *s, const char *suffix);

/* strdup that accepts NULL (returns NULL). */
char *str_dup(const char *s);

/* *dst becomes a copy of src (NULL allowed), the old value freed; nothing happens when they are
 * equal. Returns 0 or -ENOMEM (*dst unchanged then). */
int str_set(char **dst, const char *src);

/* snprintf into out for a text that may be cut short on purpose (a message, a path in one):
 * the compiler's truncation warning does not apply. */
void str_printf(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Monotonic seconds (CLOCK_MONOTONIC) and wall-clock seconds. */
double time_mono(void);
double time_wall(void);

/* Formats t (seconds since the epoch, UTC) as RFC 3339 "2006-01-02T15:04:05Z" into out (>= 21
 * bytes). Parses the same, also accepting fractional seconds and +hh:mm offsets. */
void time_format_rfc3339(double t, char out[static 32]);
int time_parse_rfc3339(const char *s, double *ret);

#endif
