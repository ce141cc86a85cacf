/* clusterctl move with an etcd snapshot: what the reconcilers share (controllers/move.h). */

#include "controllers/move.h"

#include <string.h>

#include "lib/kube/object.h"

bool move_stops_components(const cJSON *ncp)
{
    const cJSON *phase = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ncp, "status"), "move"),
        "phase");

    return cJSON_IsString(phase) && (strcmp(phase->valuestring, MOVE_STOPPING) == 0 ||
                                     strcmp(phase->valuestring, MOVE_SNAPSHOTTING) == 0 ||
                                     strcmp(phase->valuestring, MOVE_READY) == 0);
}

bool move_deleting_for_move(const cJSON *obj)
{
    return obj && kube_obj_annotation(obj, MOVE_DELETE_FOR_MOVE) != NULL;
}
