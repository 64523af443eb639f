// A pipeline step that adds the labels and annotations of its input to every
// desired composed resource, leaving everything else as earlier steps built it.
//
// Input: {"labels": {"k": "v", ...}, "annotations": {"k": "v", ...}}
//
// It edits the JSON text directly: it finds metadata.labels (or
// metadata.annotations) and appends the input's members, already JSON-encoded,
// before the closing brace. Later duplicate keys win when plait parses the
// object, so the step's values override earlier ones.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/function.h"

typedef struct { const char *s; size_t n; } text;

static size_t skip_ws(text t, size_t i) {
    while (i < t.n && (t.s[i] == ' ' || t.s[i] == '\t' || t.s[i] == '\n' || t.s[i] == '\r')) i++;
    return i;
}

// Returns the index after the string starting at i, or 0 when malformed.
static size_t skip_string(text t, size_t i) {
    if (i >= t.n || t.s[i] != '"') return 0;
    for (i++; i < t.n; i++) {
        if (t.s[i] == '\\') i++;
        else if (t.s[i] == '"') return i + 1;
    }
    return 0;
}

// Returns the index after the value starting at i, or 0 when malformed.
static size_t skip_value(text t, size_t i) {
    i = skip_ws(t, i);
    if (i >= t.n) return 0;
    if (t.s[i] == '"') return skip_string(t, i);
    if (t.s[i] == '{' || t.s[i] == '[') {
        int depth = 0;
        while (i < t.n) {
            char c = t.s[i];
            if (c == '"') {
                i = skip_string(t, i);
                if (i == 0) return 0;
                continue;
            }
            if (c == '{' || c == '[') depth++;
            if (c == '}' || c == ']') depth--;
            i++;
            if (depth == 0) return i;
        }
        return 0;
    }
    while (i < t.n && t.s[i] != ',' && t.s[i] != '}' && t.s[i] != ']' && t.s[i] != ' ') i++;
    return i;
}

// Looks for `key` among the members of the object starting at `obj`. Sets
// *value to the start of its value (or 0 when absent) and *close to the
// object's closing brace. Returns 0 when the object is malformed.
static int find_member(text t, size_t obj, const char *key, size_t *value, size_t *close) {
    size_t i = skip_ws(t, obj), klen = strlen(key);
    *value = 0;
    if (i >= t.n || t.s[i] != '{') return 0;
    i = skip_ws(t, i + 1);
    while (i < t.n && t.s[i] != '}') {
        size_t key_end = skip_string(t, i);
        if (key_end == 0) return 0;
        size_t colon = skip_ws(t, key_end);
        if (colon >= t.n || t.s[colon] != ':') return 0;
        size_t v = skip_ws(t, colon + 1);
        if (key_end - i - 2 == klen && memcmp(t.s + i + 1, key, klen) == 0) *value = v;
        i = skip_ws(t, skip_value(t, v));
        if (i == 0 || i >= t.n) return 0;
        if (t.s[i] == ',') i = skip_ws(t, i + 1);
    }
    if (i >= t.n) return 0;
    *close = i;
    return 1;
}

// Whether the object starting at `obj` has no members.
static int is_empty_object(text t, size_t obj) {
    size_t i = skip_ws(t, skip_ws(t, obj) + 1);
    return i < t.n && t.s[i] == '}';
}

// A new string: t with `insert` placed at `at`.
static text splice(text t, size_t at, const char *a, const char *b, const char *c) {
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *out = malloc(t.n + la + lb + lc + 1);
    if (out == NULL) return (text){NULL, 0};
    memcpy(out, t.s, at);
    memcpy(out + at, a, la);
    memcpy(out + at + la, b, lb);
    memcpy(out + at + la + lb, c, lc);
    memcpy(out + at + la + lb + lc, t.s + at, t.n - at);
    out[t.n + la + lb + lc] = 0;
    return (text){out, t.n + la + lb + lc};
}

// Adds `members` (JSON object members, e.g. "a":"b","c":"d") to
// metadata.<field> of the object `t`. Returns {NULL, 0} when t is malformed.
static text add_members(text t, const char *field, const char *members) {
    size_t metadata, close;
    if (!find_member(t, 0, "metadata", &metadata, &close)) return (text){NULL, 0};
    if (metadata == 0) {
        char head[64];
        snprintf(head, sizeof head, "%s\"metadata\":{\"%s\":{", is_empty_object(t, 0) ? "" : ",", field);
        return splice(t, close, head, members, "}}");
    }
    size_t inner, meta_close;
    if (!find_member(t, metadata, field, &inner, &meta_close)) return (text){NULL, 0};
    if (inner == 0) {
        char head[64];
        snprintf(head, sizeof head, "%s\"%s\":{", is_empty_object(t, metadata) ? "" : ",", field);
        return splice(t, meta_close, head, members, "}");
    }
    size_t unused, inner_close;
    if (!find_member(t, inner, "", &unused, &inner_close)) return (text){NULL, 0};
    return splice(t, inner_close, is_empty_object(t, inner) ? "" : ",", members, "");
}

// The members of input.<field> as JSON text, checking every value is a
// string. Returns NULL with *error set when the input is not acceptable,
// and "" when the field is absent.
static char *input_members(text input, const char *field, const char **error) {
    size_t obj, close;
    if (!find_member(input, 0, field, &obj, &close)) { *error = "input must be a JSON object"; return NULL; }
    if (obj == 0) return "";
    size_t i = skip_ws(input, obj);
    if (input.s[i] != '{') { *error = "input labels and annotations must be objects"; return NULL; }
    size_t unused, end;
    if (!find_member(input, obj, "", &unused, &end)) { *error = "input is malformed"; return NULL; }
    // Check each value is a string.
    for (i = skip_ws(input, i + 1); i < end;) {
        size_t v = skip_ws(input, skip_ws(input, skip_string(input, i)) + 1);
        if (input.s[v] != '"') { *error = "input label and annotation values must be strings"; return NULL; }
        i = skip_ws(input, skip_string(input, v));
        if (input.s[i] == ',') i = skip_ws(input, i + 1);
    }
    size_t start = skip_ws(input, obj) + 1;
    char *out = malloc(end - start + 1);
    if (out == NULL) { *error = "out of memory"; return NULL; }
    memcpy(out, input.s + start, end - start);
    out[end - start] = 0;
    return out;
}

static int fail(function_error_t *err, uint8_t tag, const char *message) {
    err->tag = tag;
    function_string_dup(&err->val.internal, message);
    return 0;
}

bool exports_function_run_function(function_request_t *req, function_response_t *ret, function_error_t *err) {
    if (!req->input.is_some) return fail(err, PLAIT_FUNCTION_TYPES_ERROR_INVALID_INPUT, "the step needs an input with labels or annotations");
    text input = {(const char *)req->input.val.ptr, req->input.val.len};
    const char *error = NULL;
    const char *fields[2] = {"labels", "annotations"};
    char *members[2];
    for (int f = 0; f < 2; f++) {
        members[f] = input_members(input, fields[f], &error);
        if (members[f] == NULL) return fail(err, PLAIT_FUNCTION_TYPES_ERROR_INVALID_INPUT, error);
    }

    // Each call runs in a fresh instance that is thrown away afterwards, so
    // the request's memory is handed to the response rather than copied.
    plait_function_types_list_composed_resource_t resources = req->desired.resources;
    for (size_t r = 0; r < resources.len; r++) {
        function_string_t *json = &resources.ptr[r].resource.resource;
        text t = {(const char *)json->ptr, json->len};
        for (int f = 0; f < 2; f++) {
            if (members[f][0] == 0) continue;
            t = add_members(t, fields[f], members[f]);
            if (t.s == NULL) {
                char message[300];
                snprintf(message, sizeof message, "desired resource %.*s is not a JSON object",
                         (int)resources.ptr[r].name.len, (const char *)resources.ptr[r].name.ptr);
                return fail(err, PLAIT_FUNCTION_TYPES_ERROR_INTERNAL, message);
            }
        }
        json->ptr = (uint8_t *)t.s;
        json->len = t.n;
    }

    memset(ret, 0, sizeof *ret);
    ret->meta.tag = req->meta.tag;
    ret->desired = req->desired;
    ret->context = req->context;
    plait_function_types_function_result_t *result = calloc(1, sizeof *result);
    if (result == NULL) return fail(err, PLAIT_FUNCTION_TYPES_ERROR_INTERNAL, "out of memory");
    char message[100];
    snprintf(message, sizeof message, "labelled %zu composed resources", resources.len);
    result->severity = PLAIT_FUNCTION_TYPES_SEVERITY_NORMAL;
    function_string_dup(&result->message, message);
    ret->results.ptr = result;
    ret->results.len = 1;
    return 1;
}
