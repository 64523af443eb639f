// Helpers for writing plait composition functions in C, over the bindings
// `wit-bindgen c wit --world function --out-dir gen` generates.
//
// JSON stays text: pf_get reads a field by path, pf_add_members adds
// members to an object, pf_printf and pf_json_string build new text.
// Responses start from the request (pf_response_init passes the desired
// state and context through) and grow with pf_set_resource, pf_set_ready,
// pf_result, pf_condition and pf_require_resource.
//
// Memory: every call runs in a fresh instance that is thrown away
// afterwards, so nothing here is ever freed, and the request's memory is
// handed to the response rather than copied. Running out of memory aborts
// the instance, which fails the step.
//
// Build: compile plait_function.c with the function and the generated
// function.c, with the directory holding function.h on the include path
// (-Igen).
#ifndef PLAIT_FUNCTION_H
#define PLAIT_FUNCTION_H

#include <stdbool.h>
#include <stddef.h>

#include "function.h"

// A span of JSON text; not NUL-terminated.
typedef struct {
    const char *ptr;
    size_t len;
} pf_json;

// The JSON text of a generated string (a resource, the input, the context).
pf_json pf_text(const function_string_t *s);

// Replaces a generated string with new text (e.g. from pf_add_members).
void pf_set_text(function_string_t *s, pf_json text);

// The kind of the JSON value `v` starts with: '{', '[', '"', 't', 'f', 'n',
// '0' (a number), or 0 when it is not a JSON value.
char pf_kind(pf_json v);

// ------------------------------------------------------------ field paths

// Finds the value at `path` (e.g. `spec.items[0].name` or
// `metadata.labels[app.kubernetes.io/name]`). Returns false when a segment
// is missing, the value is null, the path is malformed, or the JSON is;
// otherwise sets *value to the value's text.
bool pf_get(pf_json json, const char *path, pf_json *value);

// The string at `path`, unescaped into new memory; `fallback` (which may be
// NULL) when it is missing or not a string.
const char *pf_get_string(pf_json json, const char *path, const char *fallback);

// The integer at `path`; `fallback` when it is missing or not an integer.
long long pf_get_int(pf_json json, const char *path, long long fallback);

// The boolean at `path`; `fallback` when it is missing or not a boolean.
bool pf_get_bool(pf_json json, const char *path, bool fallback);

// Walks the members of an object (key set) or the items of an array (key
// empty). Start with `size_t cursor = 0`; returns false at the end or when
// the JSON is malformed. Keys are JSON strings, quotes included.
bool pf_next(pf_json container, size_t *cursor, pf_json *key, pf_json *value);

// The members of an object as text, without the braces and surrounding
// whitespace: what pf_add_members takes. NULL when `object` is not one.
const char *pf_members(pf_json object);

// ------------------------------------------------------------ building JSON

// printf into new memory.
const char *pf_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));

// `s` as a JSON string, quoted and escaped, in new memory.
const char *pf_json_string(const char *s);

// A copy of `json` in which the object at `path` (fields only, dotted or
// bracketed: `metadata.labels`) has `members` (e.g. `"a":"1","b":"2"`)
// appended, creating the objects on the way. Members that are already there
// stay and the new ones follow them; plait keeps the last of duplicate keys,
// so the new values win. Returns {NULL, 0} when `json`, or a value on the
// path, is not an object, or the path is malformed.
pf_json pf_add_members(pf_json json, const char *path, const char *members);

// ------------------------------------------------------------ requests

// The observed composite resource's JSON; `{}` when there is none.
pf_json pf_composite(const function_request_t *req);

// An observed composed resource by name, or NULL.
const plait_function_types_resource_t *pf_observed(const function_request_t *req, const char *name);

// ------------------------------------------------------------ responses

// Starts `resp` from the request: its tag, desired state and context.
void pf_response_init(function_response_t *resp, function_request_t *req);

// A desired composed resource of the response by name, or NULL.
plait_function_types_resource_t *pf_desired(function_response_t *resp, const char *name);

// Adds or replaces a desired composed resource, keeping the readiness and
// connection details earlier steps gave it. `json` is copied.
plait_function_types_resource_t *pf_set_resource(function_response_t *resp, const char *name, const char *json);

// Marks a desired composed resource ready, not ready or leaves it to plait
// (PLAIT_FUNCTION_TYPES_READY_*). False when there is no such resource.
bool pf_set_ready(function_response_t *resp, const char *name, plait_function_types_ready_t ready);

// Adds a result (PLAIT_FUNCTION_TYPES_SEVERITY_*); `reason` may be NULL.
void pf_result(function_response_t *resp, plait_function_types_severity_t severity, const char *reason,
               const char *format, ...) __attribute__((format(printf, 4, 5)));

// Sets a condition on the XR (PLAIT_FUNCTION_TYPES_CONDITION_STATUS_*);
// `message` may be NULL.
void pf_condition(function_response_t *resp, const char *type, plait_function_types_condition_status_t status,
                  const char *reason, const char *message);

// Asks to be called again with the resource `api_version`/`kind` named
// `match_name` (in `namespace`, which may be NULL), under `name`.
void pf_require_resource(function_response_t *resp, const char *name, const char *api_version, const char *kind,
                         const char *match_name, const char *namespace_);

// Fails the step (PLAIT_FUNCTION_TYPES_ERROR_INVALID_INPUT or _INTERNAL).
// Returns false, so `return pf_fail(err, ...)` ends the run.
bool pf_fail(function_error_t *err, uint8_t tag, const char *format, ...) __attribute__((format(printf, 3, 4)));

// Writes a line to plait's log (PLAIT_FUNCTION_LOG_LEVEL_*).
void pf_log(plait_function_log_level_t level, const char *format, ...) __attribute__((format(printf, 2, 3)));

#endif
