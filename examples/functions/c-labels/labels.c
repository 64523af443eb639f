// A pipeline step that adds the labels and annotations of its input to every
// desired composed resource, leaving everything else as earlier steps built it.
//
// Input: {"labels": {"k": "v", ...}, "annotations": {"k": "v", ...}}
//
// The JSON stays text: the helpers in guests/sdk-c append the input's
// members, already JSON-encoded, to metadata.labels (or
// metadata.annotations). Later duplicate keys win when plait parses the
// object, so the step's values override earlier ones.

#include "plait_function.h"

#define INVALID PLAIT_FUNCTION_TYPES_ERROR_INVALID_INPUT

bool exports_function_run_function(function_request_t *req, function_response_t *ret, function_error_t *err) {
    if (!req->input.is_some) return pf_fail(err, INVALID, "the step needs an input with labels or annotations");
    pf_json input = pf_text(&req->input.val);
    if (pf_kind(input) != '{') return pf_fail(err, INVALID, "input must be a JSON object");

    const char *fields[2] = {"labels", "annotations"};
    const char *paths[2] = {"metadata.labels", "metadata.annotations"};
    const char *members[2] = {"", ""};
    for (int f = 0; f < 2; f++) {
        pf_json object, key, value;
        if (!pf_get(input, fields[f], &object)) continue;
        if (pf_kind(object) != '{') return pf_fail(err, INVALID, "input labels and annotations must be objects");
        for (size_t cursor = 0; pf_next(object, &cursor, &key, &value);) {
            if (pf_kind(value) != '"') {
                return pf_fail(err, INVALID, "input label and annotation values must be strings");
            }
        }
        members[f] = pf_members(object);
        if (members[f] == NULL) return pf_fail(err, INVALID, "input is malformed");
    }

    pf_response_init(ret, req);
    plait_function_types_list_composed_resource_t *resources = &ret->desired.resources;
    for (size_t r = 0; r < resources->len; r++) {
        function_string_t *json = &resources->ptr[r].resource.resource;
        for (int f = 0; f < 2; f++) {
            if (members[f][0] == 0) continue;
            pf_json labelled = pf_add_members(pf_text(json), paths[f], members[f]);
            if (labelled.ptr == NULL) {
                return pf_fail(err, PLAIT_FUNCTION_TYPES_ERROR_INTERNAL, "desired resource %.*s is not a JSON object",
                               (int)resources->ptr[r].name.len, (const char *)resources->ptr[r].name.ptr);
            }
            pf_set_text(json, labelled);
        }
    }
    pf_result(ret, PLAIT_FUNCTION_TYPES_SEVERITY_NORMAL, NULL, "labelled %zu composed resources", resources->len);
    return true;
}
