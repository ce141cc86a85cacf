#ifndef NESTCP_API_STATUS_H
#define NESTCP_API_STATUS_H

/*
 * Status structs -> cJSON, for /status writes. The output is deterministic: keys in schema
 * order, lists in the order the struct holds them (conditions: see api/conditions.h), and the
 * same struct always gives the same JSON, so "nothing changed" is api_status_equal() of the
 * status just parsed from the cache and the one computed by a reconcile.
 *
 * Booleans and counters are always written; strings and lists only when set. Each returns a
 * new object (caller frees) or NULL when out of memory.
 */

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "api/types.h"

cJSON *api_control_plane_status_to_json(const struct api_control_plane_status *st);
cJSON *api_component_status_to_json(enum api_kind kind, const struct api_component_status *st);
cJSON *api_nested_cluster_status_to_json(const struct api_nested_cluster_status *st);

/* True when a and b hold the same JSON (object key order ignored). */
bool api_status_equal(const cJSON *a, const cJSON *b);

#endif
