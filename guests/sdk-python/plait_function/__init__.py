"""Helpers for writing plait composition functions in Python.

Functions work with plain dicts; this module converts to and from the
component bindings that componentize-py generates for wit/function.wit.

    import plait_function as fn

    def compose(req: fn.Request) -> fn.Response:
        resp = req.response()                  # passes earlier steps through
        name = req.get("metadata.name")
        resp.set_resource("ns", {"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": name}})
        resp.set_ready("ns", req.observed_resource("ns") is not None)
        return resp

    WitWorld = fn.export(compose)

Build with `componentize-py -d wit -w function componentize app -p . -p
PATH/TO/sdk-python -o function.wasm`.
"""

import json
import re

import componentize_py_types
from wit_world.imports import log as _wit_log
from wit_world.imports import types as _t

__all__ = [
    "Request",
    "Response",
    "Resource",
    "InvalidInput",
    "get",
    "set",
    "export",
    "log",
]


class InvalidInput(Exception):
    """Raise to fail the step because the XR or the input is not acceptable."""


# ---------------------------------------------------------------- field paths

_SEGMENT = re.compile(r"\[([^\]]+)\]|([^.\[\]]+)")


def _parse(path):
    """Splits `spec.items[0].name` or `labels[app.kubernetes.io/name]`."""
    if not path:
        raise ValueError("invalid field path: it is empty")
    segments, pos = [], 0
    while pos < len(path):
        if segments:
            # A segment ends at a dot or an opening bracket.
            if path[pos] == ".":
                pos += 1
            elif path[pos] != "[":
                raise ValueError(f"invalid field path {path!r} at offset {pos}")
        m = _SEGMENT.match(path, pos)
        if not m:
            raise ValueError(f"invalid field path {path!r} at offset {pos}")
        bracket, field = m.groups()
        if bracket is not None:
            segments.append(int(bracket) if bracket.isdigit() else bracket)
        else:
            segments.append(field)
        pos = m.end()
    return segments


def get(obj, path, default=None):
    """The value at `path` in `obj`, or `default` when it is not there."""
    current = obj
    for seg in _parse(path):
        if isinstance(seg, int) and isinstance(current, list) and seg < len(current):
            current = current[seg]
        elif isinstance(seg, str) and isinstance(current, dict) and seg in current:
            current = current[seg]
        else:
            return default
    return default if current is None else current


def set(obj, path, value):  # noqa: A001 - mirrors the other SDKs
    """Sets `path` in `obj` to `value`, creating dicts and lists on the way."""
    segments = _parse(path)
    current = obj
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        empty = None if last else ([] if isinstance(segments[i + 1], int) else {})
        if isinstance(seg, int):
            if not isinstance(current, list):
                raise ValueError(f"cannot set {path!r}: segment {i} is not a list")
            while len(current) <= seg:
                current.append(None)
            if last:
                current[seg] = value
            elif current[seg] is None:
                current[seg] = empty
        else:
            if not isinstance(current, dict):
                raise ValueError(f"cannot set {path!r}: segment {i} is not an object")
            if last:
                current[seg] = value
            elif current.get(seg) is None:
                current[seg] = empty
        if not last:
            current = current[seg]
    return obj


# ---------------------------------------------------------------- resources

_READY_IN = {_t.Ready.UNSPECIFIED: None, _t.Ready.TRUE: True, _t.Ready.FALSE: False}
_READY_OUT = {None: _t.Ready.UNSPECIFIED, True: _t.Ready.TRUE, False: _t.Ready.FALSE}


class Resource:
    """A Kubernetes object (`object`, a dict) with its readiness
    (None, True or False) and connection details (str -> bytes)."""

    def __init__(self, obj, ready=None, connection_details=None):
        self.object = obj
        self.ready = ready
        self.connection_details = dict(connection_details or {})

    @classmethod
    def _from_wit(cls, r):
        return cls(
            json.loads(r.resource),
            _READY_IN[r.ready],
            {d.key: bytes(d.value) for d in r.connection_details},
        )

    def _to_wit(self):
        return _t.Resource(
            json.dumps(self.object),
            [_t.ConnectionDetail(k, bytes(v)) for k, v in sorted(self.connection_details.items())],
            _READY_OUT[self.ready],
        )


def _state_from_wit(s):
    composite = Resource._from_wit(s.composite) if s.composite is not None else None
    return composite, {c.name: Resource._from_wit(c.resource) for c in s.resources}


def _state_to_wit(composite, resources):
    return _t.State(
        composite._to_wit() if composite is not None else None,
        [_t.ComposedResource(n, r._to_wit()) for n, r in sorted(resources.items())],
    )


# ---------------------------------------------------------------- request

class Request:
    """What the step is called with, as dicts."""

    def __init__(self, wit_request):
        self.tag = wit_request.meta.tag
        composite, self.observed = _state_from_wit(wit_request.observed)
        self.composite = composite.object if composite is not None else {}
        self.desired_composite, self.desired = _state_from_wit(wit_request.desired)
        self.input = json.loads(wit_request.input) if wit_request.input is not None else None
        self.context = json.loads(wit_request.context)
        self.required_resources = {
            r.name: [json.loads(i) for i in r.items] for r in wit_request.required_resources
        }
        self.required_schemas = {
            s.name: json.loads(s.openapi_v3) if s.openapi_v3 is not None else None
            for s in wit_request.required_schemas
        }
        self.credentials = {
            c.name: {d.key: bytes(d.value) for d in c.data} for c in wit_request.credentials
        }

    def get(self, path, default=None):
        """A field of the observed XR, e.g. `spec.parameters.region`."""
        return get(self.composite, path, default)

    def observed_resource(self, name):
        """An observed composed resource (a dict), or None."""
        r = self.observed.get(name)
        return r.object if r is not None else None

    def observed_field(self, name, path, default=None):
        """A field of an observed composed resource."""
        return get(self.observed_resource(name) or {}, path, default)

    def required(self, name):
        """Resources supplied for a requirement; [] until the host resolved it."""
        return self.required_resources.get(name, [])

    def response(self):
        """A response that passes the desired state and context through."""
        return Response(self)


# ---------------------------------------------------------------- response

class Response:
    """What the step returns. Starts from the request's desired state."""

    def __init__(self, request):
        self.tag = request.tag
        self.composite = request.desired_composite
        self.desired = {
            n: Resource(r.object, r.ready, r.connection_details) for n, r in request.desired.items()
        }
        self.context = request.context
        self.results = []
        self.conditions = []
        self.resource_requirements = {}
        self.schema_requirements = {}
        self.ttl_ms = None
        self.output = None

    def set_resource(self, name, obj):
        """Adds or replaces a desired composed resource, keeping the readiness
        and connection details earlier steps gave it. Returns the object."""
        if name in self.desired:
            self.desired[name].object = obj
        else:
            self.desired[name] = Resource(obj)
        return obj

    def resource(self, name):
        """A desired composed resource's object (a dict), or None."""
        r = self.desired.get(name)
        return r.object if r is not None else None

    def set_ready(self, name, ready):
        """Marks a desired composed resource ready (True), not ready (False)
        or leaves it to plait (None)."""
        if name not in self.desired:
            raise KeyError(f"cannot set readiness of {name!r}: it is not a desired resource")
        self.desired[name].ready = ready

    def _composite(self):
        if self.composite is None:
            self.composite = Resource({})
        return self.composite

    def set_composite_field(self, path, value):
        """Sets a field of the desired XR, usually under `status`."""
        set(self._composite().object, path, value)

    def set_composite_ready(self, ready):
        self._composite().ready = ready

    def set_connection_detail(self, key, value):
        """Adds a key to the XR's connection secret (str or bytes)."""
        self._composite().connection_details[key] = value.encode() if isinstance(value, str) else value

    def _result(self, severity, message, reason, target):
        self.results.append((severity, message, reason, target))

    def normal(self, message, reason=None, target=None):
        self._result(_t.Severity.NORMAL, message, reason, target)

    def warning(self, message, reason=None, target=None):
        self._result(_t.Severity.WARNING, message, reason, target)

    def fatal(self, message, reason=None, target=None):
        """The pipeline stops: nothing is applied or deleted."""
        self._result(_t.Severity.FATAL, message, reason, target)

    def add_condition(self, type, status, reason, message=None, target=None):  # noqa: A002
        """Sets a condition on the XR; status is True, False or None (Unknown)."""
        self.conditions.append((type, status, reason, message, target))

    def require_resource(self, name, api_version, kind, match_name=None, match_labels=None,
                         namespace=None):
        """Asks to be called again with resources, by name or by labels."""
        if (match_name is None) == (match_labels is None):
            raise ValueError("require_resource needs exactly one of match_name and match_labels")
        match = (
            _t.ResourceMatch_Name(match_name)
            if match_name is not None
            else _t.ResourceMatch_Labels(_t.MatchLabels(sorted(match_labels.items())))
        )
        self.resource_requirements[name] = _t.ResourceSelector(api_version, kind, match, namespace)

    def require_schema(self, name, api_version, kind):
        self.schema_requirements[name] = _t.SchemaSelector(api_version, kind)

    def _to_wit(self):
        targets = {None: None, "composite": _t.Target.COMPOSITE,
                   "composite-and-claim": _t.Target.COMPOSITE_AND_CLAIM}
        statuses = {True: _t.ConditionStatus.TRUE, False: _t.ConditionStatus.FALSE,
                    None: _t.ConditionStatus.UNKNOWN}
        return _t.Response(
            _t.ResponseMeta(self.tag, self.ttl_ms),
            _state_to_wit(self.composite, self.desired),
            [_t.FunctionResult(s, m, r, targets[t]) for s, m, r, t in self.results],
            json.dumps(self.context),
            _t.Requirements(
                [_t.ResourceRequirement(n, s) for n, s in sorted(self.resource_requirements.items())],
                [_t.SchemaRequirement(n, s) for n, s in sorted(self.schema_requirements.items())],
            ),
            [_t.Condition(ty, statuses[st], r, m, targets[tg]) for ty, st, r, m, tg in self.conditions],
            json.dumps(self.output) if self.output is not None else None,
        )


# ---------------------------------------------------------------- glue

_LEVELS = {
    "trace": _wit_log.Level.TRACE,
    "debug": _wit_log.Level.DEBUG,
    "info": _wit_log.Level.INFO,
    "warn": _wit_log.Level.WARN,
    "error": _wit_log.Level.ERROR,
}


def log(message, level="info"):
    """Writes a line to plait's log, attributed to the step."""
    _wit_log.log(_LEVELS[level], message)


def export(handler):
    """Makes `handler(Request) -> Response` the component's run-function.
    Assign the result to `WitWorld` in the app module."""

    class WitWorld:
        def run_function(self, wit_request):
            try:
                request = Request(wit_request)
            except ValueError as e:
                raise componentize_py_types.Err(_t.Error_InvalidInput(f"request: {e}"))
            try:
                return handler(request)._to_wit()
            except InvalidInput as e:
                raise componentize_py_types.Err(_t.Error_InvalidInput(str(e)))
            except Exception as e:  # noqa: BLE001 - any bug becomes a step error, not a trap
                raise componentize_py_types.Err(
                    _t.Error_Internal(f"{type(e).__name__}: {e}")
                )

    return WitWorld
