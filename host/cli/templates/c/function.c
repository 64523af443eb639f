// Composes a ConfigMap greeting the XR's spec.greeting (or "Hello") and
// passes earlier steps through. plait_function.h holds the helpers.
#include "plait_function.h"

bool exports_function_run_function(function_request_t *req, function_response_t *ret, function_error_t *err) {
    (void)err;
    const char *greeting = pf_get_string(pf_composite(req), "spec.greeting", "Hello");
    pf_response_init(ret, req);
    pf_set_resource(ret, "greeting",
                    pf_printf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{\"greeting\":%s}}",
                              pf_json_string(greeting)));
    pf_set_ready(ret, "greeting",
                 pf_observed(req, "greeting") != NULL ? PLAIT_FUNCTION_TYPES_READY_TRUE
                                                      : PLAIT_FUNCTION_TYPES_READY_FALSE);
    pf_result(ret, PLAIT_FUNCTION_TYPES_SEVERITY_NORMAL, NULL, "composed greeting %s", greeting);
    return true;
}
