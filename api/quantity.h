#ifndef NESTCP_API_QUANTITY_H
#define NESTCP_API_QUANTITY_H

/*
 * Kubernetes resource quantities ("500m", "1.5Gi", "2e3", "128974848"), parsed far enough to
 * check their syntax and compare them. The grammar is the apiserver's:
 *
 *     quantity ::= [+-] number suffix
 *     number   ::= digits | digits "." [digits] | "." digits
 *     suffix   ::= "" | n | u | m | k | M | G | T | P | E | Ki | Mi | Gi | Ti | Pi | Ei
 *                | (e | E) [+-] digits
 */

#include <cjson/cJSON.h>
#include <stdbool.h>

#define API_QUANTITY_MAX_LEN 64

/* The JSON Schema pattern the CRDs use for quantities (the same grammar). */
extern const char api_quantity_pattern[];

/* Parses s into its value in base units (bytes, cores). Returns 0 or -EINVAL (bad syntax, longer
 * than API_QUANTITY_MAX_LEN, or not finite). */
int api_quantity_parse(const char *s, double *ret_value);

/* Accepts a JSON number or string (resources are int-or-string). Returns 0 or -EINVAL. */
int api_quantity_from_json(const cJSON *v, double *ret_value);

#endif
