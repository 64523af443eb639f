// Composes a ConfigMap with a fixed greeting and passes earlier steps through.
#include <stdlib.h>
#include <string.h>

#include "gen/function.h"

#define GREETING "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{\"greeting\":\"Hello from C\"}}"

static int has_observed(function_request_t *req, const char *name) {
    for (size_t i = 0; i < req->observed.resources.len; i++) {
        function_string_t *n = &req->observed.resources.ptr[i].name;
        if (n->len == strlen(name) && memcmp(n->ptr, name, n->len) == 0) return 1;
    }
    return 0;
}

bool exports_function_run_function(function_request_t *req, function_response_t *ret, function_error_t *err) {
    (void)err;
    // The instance is thrown away after the call: hand the request's memory
    // to the response instead of copying it.
    plait_function_types_list_composed_resource_t *old = &req->desired.resources;
    plait_function_types_composed_resource_t *all = calloc(old->len + 1, sizeof *all);
    if (all == NULL) {
        err->tag = PLAIT_FUNCTION_TYPES_ERROR_INTERNAL;
        function_string_dup(&err->val.internal, "out of memory");
        return false;
    }
    size_t n = 0;
    for (size_t i = 0; i < old->len; i++) {
        function_string_t *name = &old->ptr[i].name;
        if (!(name->len == 8 && memcmp(name->ptr, "greeting", 8) == 0)) all[n++] = old->ptr[i];
    }
    function_string_dup(&all[n].name, "greeting");
    function_string_dup(&all[n].resource.resource, GREETING);
    all[n].resource.ready = has_observed(req, "greeting") ? PLAIT_FUNCTION_TYPES_READY_TRUE
                                                           : PLAIT_FUNCTION_TYPES_READY_FALSE;
    n++;

    memset(ret, 0, sizeof *ret);
    ret->meta.tag = req->meta.tag;
    ret->desired.composite = req->desired.composite;
    ret->desired.resources.ptr = all;
    ret->desired.resources.len = n;
    ret->context = req->context;
    return true;
}
