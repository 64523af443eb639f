// Tests of the C helpers, compiled natively against the generated header:
//
//   wit-bindgen c wit --world function --out-dir GEN
//   cc -IGEN -Iguests/sdk-c guests/sdk-c/test/test_plait_function.c guests/sdk-c/plait_function.c
//
// `cargo test -p plait --test helpers` does both and runs the result, which
// prints every failed case and exits non-zero if there was one.

#include <stdio.h>
#include <string.h>

#include "plait_function.h"

static int failures = 0;

static void expect_str(const char *what, const char *got, const char *want) {
    if ((got == NULL) != (want == NULL) || (got != NULL && strcmp(got, want) != 0)) {
        printf("FAIL %s: got %s, want %s\n", what, got ? got : "(null)", want ? want : "(null)");
        failures++;
    }
}

static const char *span(pf_json j) {
    if (j.ptr == NULL) return NULL;
    return pf_printf("%.*s", (int)j.len, j.ptr);
}

static pf_json lit(const char *s) { return (pf_json){s, strlen(s)}; }

static const char *XR =
    "{\"metadata\": {\"name\": \"web\", \"labels\": {\"app.kubernetes.io/name\": \"web\"}},\n"
    " \"spec\": {\"replicas\": 3, \"on\": true, \"ports\": [{\"port\": 80}, {\"port\": 443}], \"empty\": null,\n"
    "  \"text\": \"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\", \"tricky\": \"}]\"}}";

static void test_get_reads_values_by_path(void) {
    struct { const char *path; const char *want; } cases[] = {
        {"metadata.name", "\"web\""},
        {"spec.ports[1].port", "443"},
        {"spec.ports[0]", "{\"port\": 80}"},
        {"metadata.labels[app.kubernetes.io/name]", "\"web\""},
        {"spec[replicas]", "3"},
        {"spec.tricky", "\"}]\""},
        {"spec.missing", NULL},
        {"spec.ports[2]", NULL},
        {"spec.ports.port", NULL},
        {"spec.replicas[0]", NULL},
        {"spec.empty", NULL},
        {"", NULL},
        {".spec", NULL},
        {"spec.", NULL},
        {"spec..replicas", NULL},
        {"spec[replicas", NULL},
        {"spec[]", NULL},
        {"spec[ports]x", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pf_json v = {NULL, 0};
        bool found = pf_get(lit(XR), cases[i].path, &v);
        expect_str(pf_printf("pf_get %s", cases[i].path), found ? span(v) : NULL, cases[i].want);
    }
}

static void test_typed_reads_fall_back_when_missing_or_of_another_type(void) {
    pf_json xr = lit(XR);
    expect_str("string", pf_get_string(xr, "metadata.name", "x"), "web");
    expect_str("escaped string", pf_get_string(xr, "spec.text", "x"), "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80");
    expect_str("string of a number", pf_get_string(xr, "spec.replicas", "x"), "x");
    expect_str("missing string", pf_get_string(xr, "spec.nothing", NULL), NULL);
    struct { const char *path; long long want; } ints[] = {
        {"spec.replicas", 3}, {"spec.ports[1].port", 443}, {"metadata.name", -1}, {"spec.nothing", -1},
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        long long got = pf_get_int(xr, ints[i].path, -1);
        expect_str(pf_printf("pf_get_int %s", ints[i].path), pf_printf("%lld", got), pf_printf("%lld", ints[i].want));
    }
    expect_str("bool", pf_get_bool(xr, "spec.on", false) ? "true" : "false", "true");
    expect_str("bool of a number", pf_get_bool(xr, "spec.replicas", false) ? "true" : "false", "false");
}

static void test_next_walks_members_and_items(void) {
    struct { const char *json; const char *want; } cases[] = {
        {"{\"a\": 1, \"b\" : [2, {\"c\": 3}] }", "\"a\"=1;\"b\"=[2, {\"c\": 3}];"},
        {"[1, \"x\", {}]", "=1;=\"x\";={};"},
        {"{}", ""},
        {" [ ] ", ""},
        {"\"not a container\"", ""},
        {"{\"a\" 1}", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = "";
        pf_json key, value;
        for (size_t cursor = 0; pf_next(lit(cases[i].json), &cursor, &key, &value);) {
            got = pf_printf("%s%s=%s;", got, span(key), span(value));
        }
        expect_str(pf_printf("pf_next %s", cases[i].json), got, cases[i].want);
    }
}

static void test_members_are_the_text_between_the_braces(void) {
    expect_str("members", pf_members(lit(" { \"a\": \"1\" , \"b\": \"2\" } ")), "\"a\": \"1\" , \"b\": \"2\"");
    expect_str("no members", pf_members(lit("{ }")), "");
    expect_str("not an object", pf_members(lit("[1]")), NULL);
    expect_str("unterminated", pf_members(lit("{\"a\": 1")), NULL);
}

static void test_add_members_creates_what_is_missing(void) {
    struct { const char *json, *path, *members, *want; } cases[] = {
        {"{}", "metadata.labels", "\"a\":\"1\"", "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}"},
        {"{\"kind\":\"A\"}", "metadata.labels", "\"a\":\"1\"",
         "{\"kind\":\"A\",\"metadata\":{\"labels\":{\"a\":\"1\"}}}"},
        {"{\"metadata\":{\"name\":\"x\"}}", "metadata.labels", "\"a\":\"1\"",
         "{\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"1\"}}}"},
        {"{\"metadata\":{\"labels\":{\"b\":\"2\"}}}", "metadata.labels", "\"a\":\"1\"",
         "{\"metadata\":{\"labels\":{\"b\":\"2\",\"a\":\"1\"}}}"},
        {"{\"metadata\":{\"labels\":{ }}}", "metadata[labels]", "\"a\":\"1\"",
         "{\"metadata\":{\"labels\":{ \"a\":\"1\"}}}"},
        {"{\"x\":\"}\",\"metadata\":{}}", "metadata", "\"a\":\"1\"", "{\"x\":\"}\",\"metadata\":{\"a\":\"1\"}}"},
        {"{\"metadata\":{\"labels\":[]}}", "metadata.labels", "\"a\":\"1\"", NULL},
        {"{\"metadata\":\"x\"}", "metadata.labels", "\"a\":\"1\"", NULL},
        {"[]", "metadata.labels", "\"a\":\"1\"", NULL},
        {"{\"metadata\":{}", "metadata.labels", "\"a\":\"1\"", NULL},
        {"{}", "items[0]", "\"a\":\"1\"", NULL},
        {"{}", "", "\"a\":\"1\"", NULL},
        {"{}", "a..b", "\"a\":\"1\"", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pf_json got = pf_add_members(lit(cases[i].json), cases[i].path, cases[i].members);
        expect_str(pf_printf("pf_add_members %s %s", cases[i].json, cases[i].path), span(got), cases[i].want);
    }
}

static void test_json_string_escapes(void) {
    expect_str("plain", pf_json_string("web"), "\"web\"");
    expect_str("escapes", pf_json_string("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\u000a\\u0001\"");
}

static function_string_t str(const char *s) { return (function_string_t){(uint8_t *)s, strlen(s)}; }

static void test_responses_pass_through_and_grow(void) {
    plait_function_types_composed_resource_t desired[1] = {
        {str("kept"), {str("{\"kind\":\"A\"}"), {NULL, 0}, PLAIT_FUNCTION_TYPES_READY_TRUE}},
    };
    plait_function_types_composed_resource_t observed[1] = {
        {str("db"), {str("{\"kind\":\"DB\"}"), {NULL, 0}, PLAIT_FUNCTION_TYPES_READY_TRUE}},
    };
    function_request_t req;
    memset(&req, 0, sizeof req);
    req.meta.tag = str("tag-1");
    req.context = str("{\"k\":1}");
    req.desired.resources = (plait_function_types_list_composed_resource_t){desired, 1};
    req.observed.resources = (plait_function_types_list_composed_resource_t){observed, 1};

    expect_str("composite of a request without one", span(pf_composite(&req)), "{}");
    expect_str("observed", pf_observed(&req, "db") ? span(pf_text(&pf_observed(&req, "db")->resource)) : NULL,
               "{\"kind\":\"DB\"}");
    expect_str("missing observed", pf_observed(&req, "cache") ? "found" : NULL, NULL);

    function_response_t resp;
    pf_response_init(&resp, &req);
    pf_set_resource(&resp, "added", "{\"kind\":\"B\"}");
    pf_set_resource(&resp, "kept", "{\"kind\":\"A2\"}");
    bool set = pf_set_ready(&resp, "added", PLAIT_FUNCTION_TYPES_READY_FALSE);
    bool unknown = pf_set_ready(&resp, "nothing", PLAIT_FUNCTION_TYPES_READY_TRUE);
    pf_result(&resp, PLAIT_FUNCTION_TYPES_SEVERITY_WARNING, "Why", "%d things", 2);
    pf_condition(&resp, "DatabaseReady", PLAIT_FUNCTION_TYPES_CONDITION_STATUS_TRUE, "Available", NULL);
    pf_require_resource(&resp, "cfg", "v1", "ConfigMap", "settings", "ns");

    const char *got = pf_printf("tag=%s context=%s", span(pf_text(&resp.meta.tag)), span(pf_text(&resp.context)));
    for (size_t i = 0; i < resp.desired.resources.len; i++) {
        plait_function_types_composed_resource_t *c = &resp.desired.resources.ptr[i];
        got = pf_printf("%s %s=%s/%d", got, span(pf_text(&c->name)), span(pf_text(&c->resource.resource)),
                        c->resource.ready);
    }
    expect_str("desired", got, "tag=tag-1 context={\"k\":1} kept={\"kind\":\"A2\"}/1 added={\"kind\":\"B\"}/2");
    expect_str("set ready", set && !unknown ? "ok" : "wrong", "ok");

    plait_function_types_function_result_t *r = resp.results.ptr;
    expect_str("result", pf_printf("%zu %d %s %s", resp.results.len, r->severity, span(pf_text(&r->message)),
                                   r->reason.is_some ? span(pf_text(&r->reason.val)) : "-"),
               "1 1 2 things Why");
    plait_function_types_condition_t *c = resp.conditions.ptr;
    expect_str("condition", pf_printf("%zu %s %d %s %d", resp.conditions.len, span(pf_text(&c->type)), c->status,
                                      span(pf_text(&c->reason)), c->message.is_some),
               "1 DatabaseReady 0 Available 0");
    plait_function_types_resource_requirement_t *q = resp.requirements.resources.ptr;
    expect_str("requirement", pf_printf("%zu %s %s %s %d %s %s", resp.requirements.resources.len,
                                        span(pf_text(&q->name)), span(pf_text(&q->selector.api_version)),
                                        span(pf_text(&q->selector.kind)), q->selector.match.tag,
                                        span(pf_text(&q->selector.match.val.name)),
                                        span(pf_text(&q->selector.namespace_.val))),
               "1 cfg v1 ConfigMap 0 settings ns");

    function_error_t err;
    bool returned = pf_fail(&err, PLAIT_FUNCTION_TYPES_ERROR_INVALID_INPUT, "spec.%s: bad", "size");
    expect_str("fail", pf_printf("%d %d %s", returned, err.tag, span(pf_text(&err.val.invalid_input))),
               "0 0 spec.size: bad");
}

// The host's log import, recorded.
static const char *logged = "";
void plait_function_log_log(plait_function_log_level_t level, function_string_t *message) {
    logged = pf_printf("%s%d:%s;", logged, level, span(pf_text(message)));
}

static void test_log_formats_and_passes_the_level(void) {
    pf_log(PLAIT_FUNCTION_LOG_LEVEL_WARN, "%s %d", "careful", 1);
    expect_str("log", logged, "3:careful 1;");
}

int main(void) {
    test_get_reads_values_by_path();
    test_typed_reads_fall_back_when_missing_or_of_another_type();
    test_next_walks_members_and_items();
    test_members_are_the_text_between_the_braces();
    test_add_members_creates_what_is_missing();
    test_json_string_escapes();
    test_responses_pass_through_and_grow();
    test_log_formats_and_passes_the_level();
    printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
