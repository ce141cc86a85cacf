#ifndef NESTCP_RENDER_TMPL_H
#define NESTCP_RENDER_TMPL_H

/*
 * The template language of nestcp packages: a small Go-template-like text language over YAML
 * whose substitutions cannot inject YAML structure.
 *
 * Control flow (`{{ if }}`, `{{ range }}`) works on the template text, but a `{{ expr }}` never
 * pastes the value's text into the YAML: it leaves an opaque placeholder, the text is parsed as
 * YAML, and then each placeholder is replaced in the parsed tree. A scalar that is exactly one
 * `{{ expr }}` takes the value with its JSON type (number, bool, list, object); a scalar with
 * other text around the action becomes a string. A user's "a\n- b: c" therefore stays one
 * string. docs/templates.md describes the syntax and the functions.
 *
 * Templates are strict: an undefined field or variable, an unknown function, a wrong argument
 * count or bad syntax is an error that reads "<file>:<line>: <what>".
 */

#include <cjson/cJSON.h>
#include <stddef.h>

#include "lib/util/err.h"

/* Bound on the text a template may produce before it is parsed as YAML. */
#define TMPL_MAX_OUTPUT (1024 * 1024)
/* Bound on the number of `{{ expr }}` substitutions one execution may make. */
#define TMPL_MAX_SUBSTITUTIONS 100000
/* The most values (objects, arrays, scalars) all substitutions together may copy in. */
#define TMPL_MAX_VALUES 500000

struct tmpl;

/* Parses the template text (len bytes). name is the file name used in error messages (the
 * string is copied). Returns 0, -EINVAL (bad syntax or unknown function; e says file:line),
 * -ENOMEM. */
int tmpl_parse(const char *name, const char *text, size_t len, struct tmpl **ret_tmpl,
               struct err *e);

void tmpl_free(struct tmpl *t);

/* The bytes a parsed template holds (its text and syntax tree), without malloc's own. */
size_t tmpl_bytes(const struct tmpl *t);

/* Runs the template with `.` and `$` bound to data, parses the output as YAML and substitutes
 * the values. Returns 0 and a new cJSON array of the non-empty documents (caller frees), or
 * -EINVAL (evaluation or YAML error, with file:line in e), -ENOBUFS (output larger than
 * TMPL_MAX_OUTPUT), -ENOMEM. The same template and data always give the same documents. */
int tmpl_execute(const struct tmpl *t, const cJSON *data, cJSON **ret_docs, struct err *e);

#endif
