#ifndef NESTCP_API_CRD_H
#define NESTCP_API_CRD_H

/*
 * CustomResourceDefinitions (apiextensions.k8s.io/v1) generated from the kind tables in
 * api/kinds.c: full OpenAPI v3 schemas with descriptions (kubectl explain), every served
 * version with the same schema, the status subresource, printer columns, short names,
 * categories and the Cluster API contract labels. tools/crdgen.c writes them to config/crd/.
 */

#include <cjson/cJSON.h>
#include <stddef.h>

#include "api/kinds.h"

/* The CRD of kind k. Returns 0 or -ENOMEM; *ret is a new object the caller frees. */
int api_crd_build(enum api_kind k, cJSON **ret);

/* The OpenAPI v3 schema of one schema node (NULL when out of memory). */
cJSON *api_crd_schema(const struct api_schema *s);

/* The file name controller-gen would give the CRD: "<group>_<plural>.yaml". */
void api_crd_file_name(enum api_kind k, char *out, size_t outsz);

#endif
