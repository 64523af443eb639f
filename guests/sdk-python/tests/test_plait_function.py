"""Tests of the plait_function helpers, run with plain CPython against the
bindings `componentize-py bindings` generates for wit/function.wit (on
PYTHONPATH), so a change to the contract that the helpers miss fails here.

    componentize-py -d wit -w function bindings BINDINGS
    PYTHONPATH=BINDINGS:guests/sdk-python python3 -m unittest discover -s guests/sdk-python/tests

`cargo test -p plait --test helpers` does both.
"""

import json
import unittest

import componentize_py_types
from wit_world.imports import types as t

import plait_function as fn


def wit_resource(obj, ready=t.Ready.UNSPECIFIED, details=()):
    return t.Resource(json.dumps(obj), [t.ConnectionDetail(k, v) for k, v in details], ready)


def wit_request(composite=None, observed=(), desired_composite=None, desired=(), input=None,
                context=None, required=(), schemas=(), credentials=()):
    """A request; `observed` and `desired` are (name, wit resource) pairs."""
    return t.Request(
        t.RequestMeta("tag-1", []),
        t.State(wit_resource(composite) if composite is not None else None,
                [t.ComposedResource(n, r) for n, r in observed]),
        t.State(desired_composite, [t.ComposedResource(n, r) for n, r in desired]),
        input,
        json.dumps(context if context is not None else {}),
        [t.RequiredResources(n, [json.dumps(i) for i in items]) for n, items in required],
        [t.RequiredSchema(n, s) for n, s in schemas],
        [t.Credentials(n, [t.ConnectionDetail(k, v) for k, v in data]) for n, data in credentials],
    )


def run(compose, request):
    """Runs `compose` the way the component does; returns the wit response."""
    return fn.export(compose)().run_function(request)


def desired_objects(response):
    return {c.name: json.loads(c.resource.resource) for c in response.desired.resources}


def desired_ready(response):
    return {c.name: c.resource.ready for c in response.desired.resources}


XR = {
    "apiVersion": "example.org/v1",
    "kind": "App",
    "metadata": {"name": "web", "labels": {"app.kubernetes.io/name": "web"}},
    "spec": {"replicas": 3, "ports": [{"port": 80}, {"port": 443}], "empty": None},
}


class FieldPaths(unittest.TestCase):
    def test_get_reads_fields_by_path_and_falls_back_when_missing(self):
        cases = [
            ("metadata.name", None, "web"),
            ("spec.replicas", None, 3),
            ("spec.ports[1].port", None, 443),
            ("metadata.labels[app.kubernetes.io/name]", None, "web"),
            ("spec.missing", "dflt", "dflt"),
            ("spec.missing.deeper", None, None),
            ("spec.ports[2].port", 0, 0),
            ("spec.ports.port", "x", "x"),
            ("spec.replicas[0]", "x", "x"),
            ("spec[ports]", None, [{"port": 80}, {"port": 443}]),
            ("spec.empty", "null is missing", "null is missing"),
        ]
        for path, default, want in cases:
            with self.subTest(path=path):
                self.assertEqual(fn.get(XR, path, default), want)

    def test_invalid_paths_are_rejected_naming_the_path(self):
        for path in ["", ".a", "a.", "a..b", "a[0", "a]", "a[0]b", "a[]"]:
            with self.subTest(path=path):
                with self.assertRaises(ValueError) as raised:
                    fn.get(XR, path)
                self.assertIn("field path", str(raised.exception))

    def test_set_creates_what_is_missing_on_the_way(self):
        cases = [
            ({}, "a.b.c", 1, {"a": {"b": {"c": 1}}}),
            ({"a": {"x": 1}}, "a.y", 2, {"a": {"x": 1, "y": 2}}),
            ({}, "a[1].b", 1, {"a": [None, {"b": 1}]}),
            ({"a": [1, 2]}, "a[0]", 9, {"a": [9, 2]}),
            ({}, "labels[app.kubernetes.io/name]", "web", {"labels": {"app.kubernetes.io/name": "web"}}),
            ({"a": None}, "a.b", 1, {"a": {"b": 1}}),
        ]
        for obj, path, value, want in cases:
            with self.subTest(path=path):
                self.assertEqual(fn.set(obj, path, value), want)

    def test_set_through_the_wrong_kind_of_value_fails_naming_the_path(self):
        cases = [({"a": 1}, "a.b"), ({"a": {}}, "a[0]"), ({"a": []}, "a.b")]
        for obj, path in cases:
            with self.subTest(path=path):
                with self.assertRaises(ValueError) as raised:
                    fn.set(obj, path, 1)
                self.assertIn(repr(path), str(raised.exception))


class Requests(unittest.TestCase):
    def test_request_fields_are_decoded(self):
        request = fn.Request(wit_request(
            composite=XR,
            observed=[("db", wit_resource({"kind": "DB", "status": {"phase": "Up"}}, t.Ready.TRUE))],
            input='{"size": 2}',
            context={"k": "v"},
            required=[("secrets", [{"kind": "Secret"}])],
            schemas=[("app", '{"type": "object"}'), ("unknown", None)],
            credentials=[("creds", [("token", b"s3cr3t")])],
        ))
        cases = [
            ("get", request.get("spec.ports[0].port"), 80),
            ("get default", request.get("spec.nothing", 7), 7),
            ("observed resource", request.observed_resource("db"), {"kind": "DB", "status": {"phase": "Up"}}),
            ("observed readiness", request.observed["db"].ready, True),
            ("missing observed resource", request.observed_resource("cache"), None),
            ("observed field", request.observed_field("db", "status.phase"), "Up"),
            ("observed field of missing resource", request.observed_field("cache", "status.phase", "-"), "-"),
            ("input", request.input, {"size": 2}),
            ("context", request.context, {"k": "v"}),
            ("required", request.required("secrets"), [{"kind": "Secret"}]),
            ("required not resolved yet", request.required("other"), []),
            ("schemas", request.required_schemas, {"app": {"type": "object"}, "unknown": None}),
            ("credentials", request.credentials, {"creds": {"token": b"s3cr3t"}}),
        ]
        for name, got, want in cases:
            with self.subTest(name):
                self.assertEqual(got, want)

    def test_a_request_without_observed_composite_reads_as_empty(self):
        request = fn.Request(wit_request())
        self.assertEqual(request.composite, {})
        self.assertIsNone(request.input)
        self.assertEqual(request.get("metadata.name", "none"), "none")


class Responses(unittest.TestCase):
    def test_compose_keeps_earlier_steps_and_their_readiness(self):
        earlier = [
            ("kept", wit_resource({"kind": "A"}, t.Ready.TRUE, [("k", b"v")])),
            ("replaced", wit_resource({"kind": "B"}, t.Ready.FALSE)),
        ]

        def compose(req):
            resp = req.response()
            resp.set_resource("replaced", {"kind": "B2"})
            resp.set_resource("added", {"kind": "C", "metadata": {"name": req.get("metadata.name")}})
            return resp

        response = run(compose, wit_request(composite=XR, desired=earlier, context={"x": 1}))
        self.assertEqual(response.meta, t.ResponseMeta("tag-1", None))
        self.assertEqual(desired_objects(response), {
            "added": {"kind": "C", "metadata": {"name": "web"}},
            "kept": {"kind": "A"},
            "replaced": {"kind": "B2"},
        })
        self.assertEqual(desired_ready(response), {
            "added": t.Ready.UNSPECIFIED, "kept": t.Ready.TRUE, "replaced": t.Ready.FALSE,
        })
        kept = next(c for c in response.desired.resources if c.name == "kept")
        self.assertEqual(kept.resource.connection_details, [t.ConnectionDetail("k", b"v")])
        self.assertEqual(json.loads(response.context), {"x": 1})
        self.assertEqual([c.name for c in response.desired.resources], ["added", "kept", "replaced"])

    def test_readiness_maps_to_the_contract(self):
        cases = [(True, t.Ready.TRUE), (False, t.Ready.FALSE), (None, t.Ready.UNSPECIFIED)]
        for ready, want in cases:
            with self.subTest(ready=ready):
                def compose(req, ready=ready):
                    resp = req.response()
                    resp.set_resource("r", {"kind": "R"})
                    resp.set_ready("r", ready)
                    resp.set_composite_ready(ready)
                    return resp

                response = run(compose, wit_request())
                self.assertEqual(desired_ready(response), {"r": want})
                self.assertEqual(response.desired.composite.ready, want)

    def test_composite_fields_and_connection_details(self):
        def compose(req):
            resp = req.response()
            resp.set_composite_field("status.endpoint", "db:5432")
            resp.set_connection_detail("password", "pw")
            resp.set_connection_detail("raw", b"\x00\x01")
            return resp

        composite = run(compose, wit_request()).desired.composite
        self.assertEqual(json.loads(composite.resource), {"status": {"endpoint": "db:5432"}})
        self.assertEqual(composite.connection_details, [
            t.ConnectionDetail("password", b"pw"), t.ConnectionDetail("raw", b"\x00\x01"),
        ])

    def test_results_keep_severity_reason_and_target(self):
        def compose(req):
            resp = req.response()
            resp.normal("n")
            resp.warning("w", reason="Why", target="composite-and-claim")
            resp.fatal("f", target="composite")
            return resp

        self.assertEqual(run(compose, wit_request()).results, [
            t.FunctionResult(t.Severity.NORMAL, "n", None, None),
            t.FunctionResult(t.Severity.WARNING, "w", "Why", t.Target.COMPOSITE_AND_CLAIM),
            t.FunctionResult(t.Severity.FATAL, "f", None, t.Target.COMPOSITE),
        ])

    def test_conditions_map_status_and_target(self):
        def compose(req):
            resp = req.response()
            resp.add_condition("DatabaseReady", True, "Available")
            resp.add_condition("Backup", False, "Failed", message="disk full", target="composite-and-claim")
            resp.add_condition("Probe", None, "Pending")
            return resp

        self.assertEqual(run(compose, wit_request()).conditions, [
            t.Condition("DatabaseReady", t.ConditionStatus.TRUE, "Available", None, None),
            t.Condition("Backup", t.ConditionStatus.FALSE, "Failed", "disk full", t.Target.COMPOSITE_AND_CLAIM),
            t.Condition("Probe", t.ConditionStatus.UNKNOWN, "Pending", None, None),
        ])

    def test_requirements_by_name_labels_and_schema(self):
        def compose(req):
            resp = req.response()
            resp.require_resource("b-by-labels", "v1", "Secret", match_labels={"z": "1", "a": "2"},
                                  namespace="ns")
            resp.require_resource("a-by-name", "v1", "ConfigMap", match_name="cfg")
            resp.require_schema("s", "example.org/v1", "App")
            return resp

        requirements = run(compose, wit_request()).requirements
        self.assertEqual(requirements.resources, [
            t.ResourceRequirement("a-by-name", t.ResourceSelector(
                "v1", "ConfigMap", t.ResourceMatch_Name("cfg"), None)),
            t.ResourceRequirement("b-by-labels", t.ResourceSelector(
                "v1", "Secret", t.ResourceMatch_Labels(t.MatchLabels([("a", "2"), ("z", "1")])), "ns")),
        ])
        self.assertEqual(requirements.schemas, [
            t.SchemaRequirement("s", t.SchemaSelector("example.org/v1", "App")),
        ])

    def test_ttl_and_output_are_passed_on(self):
        def compose(req):
            resp = req.response()
            resp.ttl_ms = 30000
            resp.output = {"done": True}
            return resp

        response = run(compose, wit_request())
        self.assertEqual(response.meta.ttl_ms, 30000)
        self.assertEqual(json.loads(response.output), {"done": True})
        self.assertIsNone(run(lambda req: req.response(), wit_request()).output)


class Failures(unittest.TestCase):
    def test_errors_become_step_errors_of_the_right_kind(self):
        def invalid(req):
            raise fn.InvalidInput("spec.size: must be positive")

        def bug(req):
            return {}["missing"]

        def unknown_readiness(req):
            req.response().set_ready("nothing", True)

        def both_matches(req):
            req.response().require_resource("r", "v1", "Secret", match_name="a", match_labels={"a": "b"})

        cases = [
            ("invalid input", invalid, wit_request(), t.Error_InvalidInput("spec.size: must be positive")),
            ("a bug", bug, wit_request(), t.Error_Internal("KeyError: 'missing'")),
            ("readiness of an unknown resource", unknown_readiness, wit_request(),
             t.Error_Internal("KeyError: \"cannot set readiness of 'nothing': it is not a desired resource\"")),
            ("both matches", both_matches, wit_request(),
             t.Error_Internal("ValueError: require_resource needs exactly one of match_name and match_labels")),
            ("malformed input", lambda req: req.response(), wit_request(input="{"),
             t.Error_InvalidInput("request: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)")),
        ]
        for name, compose, request, want in cases:
            with self.subTest(name):
                with self.assertRaises(componentize_py_types.Err) as raised:
                    run(compose, request)
                self.assertEqual(raised.exception.value, want)

    def test_log_passes_level_and_message_to_the_host(self):
        lines = []
        original = fn._wit_log.log
        fn._wit_log.log = lambda level, message: lines.append((level, message))
        try:
            fn.log("hello")
            fn.log("careful", level="warn")
            with self.assertRaises(KeyError):
                fn.log("x", level="loud")
        finally:
            fn._wit_log.log = original
        self.assertEqual(lines, [
            (fn._wit_log.Level.INFO, "hello"), (fn._wit_log.Level.WARN, "careful"),
        ])


if __name__ == "__main__":
    unittest.main()
