// Helpers for writing plait composition functions in C; see plait_function.h.

#include "plait_function.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------ memory

static void *pf_alloc(size_t n) {
    void *p = malloc(n == 0 ? 1 : n);
    if (p == NULL) abort();
    return p;
}

// A new array of `len + 1` elements of `size` bytes holding the old ones:
// lists that came from the request may not point at heap memory when empty.
static void *grow(const void *old, size_t len, size_t size) {
    char *p = pf_alloc((len + 1) * size);
    if (len > 0) memcpy(p, old, len * size);
    memset(p + len * size, 0, size);
    return p;
}

static void set_string(function_string_t *s, const char *text) {
    size_t n = strlen(text);
    char *copy = pf_alloc(n);
    memcpy(copy, text, n);
    s->ptr = (uint8_t *)copy;
    s->len = n;
}

static void set_option(function_option_string_t *o, const char *text) {
    o->is_some = text != NULL;
    if (text != NULL) set_string(&o->val, text);
}

static const char *vformat(const char *format, va_list args) {
    va_list again;
    va_copy(again, args);
    int n = vsnprintf(NULL, 0, format, args);
    if (n < 0) n = 0;
    char *out = pf_alloc((size_t)n + 1);
    vsnprintf(out, (size_t)n + 1, format, again);
    va_end(again);
    return out;
}

const char *pf_printf(const char *format, ...) {
    va_list args;
    va_start(args, format);
    const char *out = vformat(format, args);
    va_end(args);
    return out;
}

pf_json pf_text(const function_string_t *s) { return (pf_json){(const char *)s->ptr, s->len}; }

void pf_set_text(function_string_t *s, pf_json text) {
    s->ptr = (uint8_t *)text.ptr;
    s->len = text.len;
}

// ------------------------------------------------------------ scanning

static size_t skip_ws(pf_json t, size_t i) {
    while (i < t.len && (t.ptr[i] == ' ' || t.ptr[i] == '\t' || t.ptr[i] == '\n' || t.ptr[i] == '\r')) i++;
    return i;
}

// The index after the string starting at i, or 0 when malformed.
static size_t skip_string(pf_json t, size_t i) {
    if (i >= t.len || t.ptr[i] != '"') return 0;
    for (i++; i < t.len; i++) {
        if (t.ptr[i] == '\\') i++;
        else if (t.ptr[i] == '"') return i + 1;
    }
    return 0;
}

// The index after the value starting at i (after whitespace), or 0 when
// malformed.
static size_t skip_value(pf_json t, size_t i) {
    i = skip_ws(t, i);
    if (i >= t.len) return 0;
    char c = t.ptr[i];
    if (c == '"') return skip_string(t, i);
    if (c == '{' || c == '[') {
        int depth = 0;
        while (i < t.len) {
            c = t.ptr[i];
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
    size_t start = i;
    while (i < t.len && strchr(",}] \t\n\r", t.ptr[i]) == NULL) i++;
    return i > start ? i : 0;
}

char pf_kind(pf_json v) {
    size_t i = skip_ws(v, 0);
    if (i >= v.len) return 0;
    char c = v.ptr[i];
    if (c == '{' || c == '[' || c == '"' || c == 't' || c == 'f' || c == 'n') return c;
    if (c == '-' || (c >= '0' && c <= '9')) return '0';
    return 0;
}

bool pf_next(pf_json container, size_t *cursor, pf_json *key, pf_json *value) {
    size_t i = skip_ws(container, *cursor);
    if (i >= container.len) return false;
    char open = container.ptr[i];
    if (*cursor == 0) {
        if (open != '{' && open != '[') return false;
        i = skip_ws(container, i + 1);
    } else if (open == ',') {
        i = skip_ws(container, i + 1);
    } else {
        return false;
    }
    if (i >= container.len || container.ptr[i] == '}' || container.ptr[i] == ']') return false;
    size_t first = skip_ws(container, 0);
    *key = (pf_json){container.ptr + i, 0};
    if (container.ptr[first] == '{') {
        size_t key_end = skip_string(container, i);
        if (key_end == 0) return false;
        *key = (pf_json){container.ptr + i, key_end - i};
        i = skip_ws(container, key_end);
        if (i >= container.len || container.ptr[i] != ':') return false;
        i++;
    }
    size_t start = skip_ws(container, i);
    size_t end = skip_value(container, start);
    if (end == 0) return false;
    *value = (pf_json){container.ptr + start, end - start};
    *cursor = end;
    return true;
}

// Whether the JSON string `key` (quotes included) holds exactly `name`.
// Keys with escapes never match: field names in paths are plain.
static bool key_is(pf_json key, const char *name, size_t n) {
    return key.len == n + 2 && memcmp(key.ptr + 1, name, n) == 0 && memchr(name, '\\', n) == NULL;
}

// The next segment of `path` at *pos: a field (name, n) or an index
// (*index >= 0). Returns false at the end or when the path is malformed
// (*malformed set).
static bool next_segment(const char *path, size_t *pos, const char **name, size_t *n, long *index, bool *malformed) {
    size_t i = *pos;
    *malformed = false;
    if (path[i] == 0) return false;
    if (i > 0) {
        if (path[i] == '.') i++;
        else if (path[i] != '[') return *malformed = true, false;
    }
    *index = -1;
    if (path[i] == '[') {
        const char *close = strchr(path + i + 1, ']');
        if (close == NULL || close == path + i + 1) return *malformed = true, false;
        *name = path + i + 1;
        *n = (size_t)(close - *name);
        bool digits = true;
        for (size_t k = 0; k < *n; k++) digits = digits && (*name)[k] >= '0' && (*name)[k] <= '9';
        if (digits) *index = strtol(*name, NULL, 10);
        *pos = (size_t)(close - path) + 1;
        return true;
    }
    size_t end = i;
    while (path[end] != 0 && path[end] != '.' && path[end] != '[' && path[end] != ']') end++;
    if (end == i || path[end] == ']') return *malformed = true, false;
    *name = path + i;
    *n = end - i;
    *pos = end;
    return true;
}

bool pf_get(pf_json json, const char *path, pf_json *value) {
    pf_json current = json;
    size_t pos = 0, n;
    const char *name;
    long index;
    bool malformed;
    if (path == NULL || path[0] == 0) return false;
    while (next_segment(path, &pos, &name, &n, &index, &malformed)) {
        char kind = pf_kind(current);
        if ((index >= 0 && kind != '[') || (index < 0 && kind != '{')) return false;
        size_t cursor = 0;
        pf_json key, item;
        bool found = false;
        for (long k = 0; !found && pf_next(current, &cursor, &key, &item); k++) {
            found = index >= 0 ? k == index : key_is(key, name, n);
        }
        if (!found) return false;
        current = item;
    }
    if (malformed || pf_kind(current) == 'n' || pf_kind(current) == 0) return false;
    *value = current;
    return true;
}

// Appends the UTF-8 encoding of `cp` to out.
static size_t put_utf8(char *out, uint32_t cp) {
    if (cp < 0x80) return out[0] = (char)cp, 1;
    if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static bool hex4(const char *s, size_t left, uint32_t *out) {
    if (left < 4) return false;
    *out = 0;
    for (int k = 0; k < 4; k++) {
        char c = s[k];
        uint32_t d = c >= '0' && c <= '9' ? (uint32_t)(c - '0')
                     : c >= 'a' && c <= 'f' ? (uint32_t)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (uint32_t)(c - 'A' + 10)
                                            : 16;
        if (d == 16) return false;
        *out = *out << 4 | d;
    }
    return true;
}

// The JSON string `s` (quotes included) unescaped, or NULL when malformed.
static const char *unescape(pf_json s) {
    char *out = pf_alloc(s.len + 1), *o = out;
    for (size_t i = 1; i + 1 < s.len; i++) {
        if (s.ptr[i] != '\\') {
            *o++ = s.ptr[i];
            continue;
        }
        i++;
        const char *simple = strchr("\"\\/bfnrt", s.ptr[i]);
        if (simple != NULL && s.ptr[i] != 0) {
            *o++ = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            continue;
        }
        uint32_t cp, low;
        if (s.ptr[i] != 'u' || !hex4(s.ptr + i + 1, s.len - i - 1, &cp)) return NULL;
        i += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && i + 2 < s.len && s.ptr[i + 1] == '\\' && s.ptr[i + 2] == 'u' &&
            hex4(s.ptr + i + 3, s.len - i - 3, &low) && low >= 0xDC00 && low < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            i += 6;
        }
        o += put_utf8(o, cp);
    }
    *o = 0;
    return out;
}

const char *pf_get_string(pf_json json, const char *path, const char *fallback) {
    pf_json v;
    if (!pf_get(json, path, &v) || pf_kind(v) != '"') return fallback;
    const char *s = unescape(v);
    return s != NULL ? s : fallback;
}

long long pf_get_int(pf_json json, const char *path, long long fallback) {
    pf_json v;
    if (!pf_get(json, path, &v) || pf_kind(v) != '0') return fallback;
    char digits[32];
    if (v.len >= sizeof digits) return fallback;
    memcpy(digits, v.ptr, v.len);
    digits[v.len] = 0;
    char *end;
    long long n = strtoll(digits, &end, 10);
    return *end == 0 ? n : fallback;
}

bool pf_get_bool(pf_json json, const char *path, bool fallback) {
    pf_json v;
    if (!pf_get(json, path, &v)) return fallback;
    if (v.len == 4 && memcmp(v.ptr, "true", 4) == 0) return true;
    if (v.len == 5 && memcmp(v.ptr, "false", 5) == 0) return false;
    return fallback;
}

const char *pf_members(pf_json object) {
    size_t open = skip_ws(object, 0);
    if (pf_kind(object) != '{' || skip_value(object, open) == 0) return NULL;
    size_t start = skip_ws(object, open + 1), end = skip_value(object, open) - 1;
    while (end > start && strchr(" \t\n\r", object.ptr[end - 1]) != NULL) end--;
    char *out = pf_alloc(end - start + 1);
    memcpy(out, object.ptr + start, end - start);
    out[end - start] = 0;
    return out;
}

// ------------------------------------------------------------ building JSON

const char *pf_json_string(const char *s) {
    size_t n = strlen(s);
    char *out = pf_alloc(n * 6 + 3), *o = out;
    *o++ = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c < 0x20) {
            o += sprintf(o, "\\u%04x", c);
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    *o = 0;
    return out;
}

// `t` with `a`, `b` and `c` placed at `at`, in new memory.
static pf_json splice(pf_json t, size_t at, const char *a, const char *b, const char *c) {
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c), n = t.len + la + lb + lc;
    char *out = pf_alloc(n + 1);
    memcpy(out, t.ptr, at);
    memcpy(out + at, a, la);
    memcpy(out + at + la, b, lb);
    memcpy(out + at + la + lb, c, lc);
    memcpy(out + at + la + lb + lc, t.ptr + at, t.len - at);
    out[n] = 0;
    return (pf_json){out, n};
}

// The index of the closing brace of the object starting at `obj`, and
// whether it has members; 0 when it is not a well-formed object.
static size_t object_close(pf_json t, size_t obj, bool *empty) {
    size_t open = skip_ws(t, obj);
    if (open >= t.len || t.ptr[open] != '{') return 0;
    size_t end = skip_value(t, open);
    if (end == 0) return 0;
    *empty = t.ptr[skip_ws(t, open + 1)] == '}';
    return end - 1;
}

pf_json pf_add_members(pf_json json, const char *path, const char *members) {
    static const pf_json none = {NULL, 0};
    size_t obj = 0, pos = 0, n;
    const char *name;
    long index;
    bool malformed, empty;
    while (next_segment(path, &pos, &name, &n, &index, &malformed)) {
        if (index >= 0) return none;
        size_t close = object_close(json, obj, &empty);
        if (close == 0) return none;
        pf_json object = {json.ptr + obj, close + 1 - obj}, key, value;
        size_t cursor = 0;
        bool found = false;
        while (!found && pf_next(object, &cursor, &key, &value)) found = key_is(key, name, n);
        if (found) {
            obj = (size_t)(value.ptr - json.ptr);
            continue;
        }
        // Create the rest of the path around the members.
        const char *head = pf_printf("%s\"%.*s\":{", empty ? "" : ",", (int)n, name);
        const char *tail = "}";
        while (next_segment(path, &pos, &name, &n, &index, &malformed)) {
            if (index >= 0) return none;
            head = pf_printf("%s\"%.*s\":{", head, (int)n, name);
            tail = pf_printf("%s}", tail);
        }
        if (malformed) return none;
        return splice(json, close, head, members, tail);
    }
    if (malformed || pos == 0) return none;
    size_t close = object_close(json, obj, &empty);
    if (close == 0) return none;
    return splice(json, close, empty || members[0] == 0 ? "" : ",", members, "");
}

// ------------------------------------------------------------ requests

static bool name_is(const function_string_t *s, const char *name) {
    size_t n = strlen(name);
    return s->len == n && memcmp(s->ptr, name, n) == 0;
}

pf_json pf_composite(const function_request_t *req) {
    if (!req->observed.composite.is_some) return (pf_json){"{}", 2};
    return pf_text(&req->observed.composite.val.resource);
}

const plait_function_types_resource_t *pf_observed(const function_request_t *req, const char *name) {
    for (size_t i = 0; i < req->observed.resources.len; i++) {
        if (name_is(&req->observed.resources.ptr[i].name, name)) return &req->observed.resources.ptr[i].resource;
    }
    return NULL;
}

// ------------------------------------------------------------ responses

void pf_response_init(function_response_t *resp, function_request_t *req) {
    memset(resp, 0, sizeof *resp);
    resp->meta.tag = req->meta.tag;
    resp->desired = req->desired;
    resp->context = req->context;
}

plait_function_types_resource_t *pf_desired(function_response_t *resp, const char *name) {
    for (size_t i = 0; i < resp->desired.resources.len; i++) {
        if (name_is(&resp->desired.resources.ptr[i].name, name)) return &resp->desired.resources.ptr[i].resource;
    }
    return NULL;
}

plait_function_types_resource_t *pf_set_resource(function_response_t *resp, const char *name, const char *json) {
    plait_function_types_resource_t *r = pf_desired(resp, name);
    if (r == NULL) {
        plait_function_types_list_composed_resource_t *list = &resp->desired.resources;
        list->ptr = grow(list->ptr, list->len, sizeof *list->ptr);
        set_string(&list->ptr[list->len].name, name);
        r = &list->ptr[list->len++].resource;
        r->ready = PLAIT_FUNCTION_TYPES_READY_UNSPECIFIED;
    }
    set_string(&r->resource, json);
    return r;
}

bool pf_set_ready(function_response_t *resp, const char *name, plait_function_types_ready_t ready) {
    plait_function_types_resource_t *r = pf_desired(resp, name);
    if (r == NULL) return false;
    r->ready = ready;
    return true;
}

void pf_result(function_response_t *resp, plait_function_types_severity_t severity, const char *reason,
               const char *format, ...) {
    plait_function_types_list_function_result_t *list = &resp->results;
    list->ptr = grow(list->ptr, list->len, sizeof *list->ptr);
    plait_function_types_function_result_t *result = &list->ptr[list->len++];
    va_list args;
    va_start(args, format);
    set_string(&result->message, vformat(format, args));
    va_end(args);
    result->severity = severity;
    set_option(&result->reason, reason);
}

void pf_condition(function_response_t *resp, const char *type, plait_function_types_condition_status_t status,
                  const char *reason, const char *message) {
    plait_function_types_list_condition_t *list = &resp->conditions;
    list->ptr = grow(list->ptr, list->len, sizeof *list->ptr);
    plait_function_types_condition_t *c = &list->ptr[list->len++];
    set_string(&c->type, type);
    c->status = status;
    set_string(&c->reason, reason);
    set_option(&c->message, message);
}

void pf_require_resource(function_response_t *resp, const char *name, const char *api_version, const char *kind,
                         const char *match_name, const char *namespace_) {
    plait_function_types_list_resource_requirement_t *list = &resp->requirements.resources;
    list->ptr = grow(list->ptr, list->len, sizeof *list->ptr);
    plait_function_types_resource_requirement_t *r = &list->ptr[list->len++];
    set_string(&r->name, name);
    set_string(&r->selector.api_version, api_version);
    set_string(&r->selector.kind, kind);
    r->selector.match.tag = PLAIT_FUNCTION_TYPES_RESOURCE_MATCH_NAME;
    set_string(&r->selector.match.val.name, match_name);
    set_option(&r->selector.namespace_, namespace_);
}

bool pf_fail(function_error_t *err, uint8_t tag, const char *format, ...) {
    va_list args;
    va_start(args, format);
    err->tag = tag;
    // Both cases of the error variant hold one string at the same place.
    set_string(&err->val.internal, vformat(format, args));
    va_end(args);
    return false;
}

void pf_log(plait_function_log_level_t level, const char *format, ...) {
    va_list args;
    va_start(args, format);
    function_string_t message;
    set_string(&message, vformat(format, args));
    va_end(args);
    plait_function_log_log(level, &message);
}
