#ifndef NESTCP_API_KINDS_INTERNAL_H
#define NESTCP_API_KINDS_INTERNAL_H

/*
 * The schema tables of api/kinds.h, shared by its three files:
 *
 *   kinds.c            the shared pieces (references, endpoints, conditions), NestedCluster,
 *                      Cluster API's Cluster, the printer columns and the kinds themselves
 *   kinds_component.c  NestedEtcd, NestedAPIServer and NestedControllerManager
 *   kinds_ncp.c        NestedControlPlane
 *
 * Internal to those files; nothing else includes it.
 */

#include "api/kinds.h"
#include "api/schema.h"

/* The tables are laid out by hand, one field per entry; keep the formatter off them. */
/* clang-format off */

/* Shorthands for the tables below. */
#define STR(n, d) {.name = n, .type = API_SCHEMA_STRING, .description = d}
#define BOOL(n, d) {.name = n, .type = API_SCHEMA_BOOLEAN, .description = d}
#define INT32(n, d) \
    {.name = n, .type = API_SCHEMA_INTEGER, .flags = API_SCHEMA_INT32, .description = d}
#define INT64(n, d) \
    {.name = n, .type = API_SCHEMA_INTEGER, .flags = API_SCHEMA_INT64, .description = d}
#define OBJ(n, p, d) {.name = n, .type = API_SCHEMA_OBJECT, .props = p, .description = d}
#define ARR(n, i, d) {.name = n, .type = API_SCHEMA_ARRAY, .items = i, .description = d}
#define MAP(n, i, d) {.name = n, .type = API_SCHEMA_MAP, .items = i, .description = d}
#define END {.name = NULL}

#define CONDITIONS                                                                                 \
    ARR("conditions", &api_kinds_condition_item,                                                   \
        "Conditions of the object, Ready first, then by type: Ready summarises the others. "   \
        "Each carries type, status, reason, message, lastTransitionTime and "                   \
        "observedGeneration, and severity when False.")
#define OBSERVED_GENERATION                                                                        \
    INT64("observedGeneration", "The metadata.generation the controller last acted on.")

/* ---- kinds.c ---- */

extern const struct api_schema api_kinds_string_item;
extern const struct api_schema api_kinds_bool_item;
extern const struct api_schema_rule api_kinds_version_rules[];
extern const struct api_schema api_kinds_object_reference[];
extern const struct api_schema api_kinds_endpoint[];
extern const struct api_schema api_kinds_condition_item;

/* ---- kinds_component.c ---- */

extern const struct api_schema api_kinds_etcd_address_item;
extern const struct api_schema api_kinds_etcd_spec, api_kinds_etcd_status;
extern const struct api_schema api_kinds_apiserver_spec, api_kinds_apiserver_status;
extern const struct api_schema api_kinds_kcm_spec, api_kinds_kcm_status;

/* ---- kinds_ncp.c ---- */

extern const struct api_schema api_kinds_cidr_blocks[];
extern const struct api_schema api_kinds_ncp_spec, api_kinds_ncp_status;

/* clang-format on */

#endif
