#ifndef NESTCP_UTIL_LOG_H
#define NESTCP_UTIL_LOG_H

/*
 * Leveled, structured logs for the top level of the program (main, the reconcile loop,
 * request-completion handlers). Library modules return codes and do not log.
 *
 * A line is a message plus logfmt key=value pairs written with a printf format:
 *
 *     log_info("reconciled", "kind=%s object=%s/%s took_ms=%ld", kind, ns, name, ms);
 *
 * Text format prints `time level message k=v ...`; JSON format prints one object per line with
 * "ts", "level", "msg" and each key. A value runs up to the next ` key=`, so values may contain
 * spaces. Never pass key material, tokens or Secret data.
 */

#include <stdbool.h>
#include <stdio.h>

enum log_level {
    LOG_LEVEL_ERROR = 0,
    LOG_LEVEL_WARN = 1,
    LOG_LEVEL_INFO = 2,
    LOG_LEVEL_DEBUG = 3,
    LOG_LEVEL_TRACE = 4,
};

enum log_format {
    LOG_FORMAT_TEXT = 0,
    LOG_FORMAT_JSON = 1,
};

/* Sets the threshold and format; out NULL means stderr. */
void log_setup(enum log_level level, enum log_format format, FILE *out);

/* Parses "error|warn|info|debug|trace" (or 0..4). Returns 0 or -EINVAL. */
int log_parse_level(const char *s, enum log_level *ret_level);
/* Parses "text|json". Returns 0 or -EINVAL. */
int log_parse_format(const char *s, enum log_format *ret_format);

bool log_enabled(enum log_level level);

void log_emit(enum log_level level, const char *msg, const char *kvfmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Formats one line without writing it (for tests). Returns a malloc'd string or NULL. */
char *log_format_line(enum log_format format, double ts, enum log_level level, const char *msg,
                      const char *kv);

#define log_error(msg, ...) log_emit(LOG_LEVEL_ERROR, msg, __VA_ARGS__)
#define log_warn(msg, ...) log_emit(LOG_LEVEL_WARN, msg, __VA_ARGS__)
#define log_info(msg, ...) log_emit(LOG_LEVEL_INFO, msg, __VA_ARGS__)
#define log_debug(msg, ...)                                                                        \
    do {                                                                                           \
        if (log_enabled(LOG_LEVEL_DEBUG))                                                          \
            log_emit(LOG_LEVEL_DEBUG, msg, __VA_ARGS__);                                           \
    } while (0)
#define log_trace(msg, ...)                                                                        \
    do {                                                                                           \
        if (log_enabled(LOG_LEVEL_TRACE))                                                          \
            log_emit(LOG_LEVEL_TRACE, msg, __VA_ARGS__);                                           \
    } while (0)

#endif
