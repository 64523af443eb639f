"""A stand-in for function-kcl v0.12.2, served over gRPC, for recording the
KCL corpus's expected output with upstream `crossplane render`.

Upstream function-kcl cannot be built here (the Go module proxy refuses it and
kcl-go), so this server runs the real KCL (kcl-lib 0.12.3, the KCL release
function-kcl v0.12.2 links through kcl-go v0.12.3) and reproduces, written
anew in Python, what function-kcl v0.12.2 does around it:

- fn.go: input decoding and validation, the default target, option("params")
  (user params, oxr, dxr, dcds, ocds, ctx, extraResources, requiredResources;
  keys sorted; values serialised as Go's encoding/json serialises them), the
  response (conditions, events, context, requirements, desired state);
- render.go: the inline source run as `prog.k` with the top-level arguments
  resource_list, items, params, PATH and env, the KCL YAML output read as
  kyaml's ByteReader reads it and unwrapped as krm-kcl's UnwrapResources does,
  written back as kyaml's ByteWriter writes it;
- pkg/resource: the documents split as krm-kcl's SplitDocuments splits them
  (which loses the final line break of a `|` block that ends any document but
  the last), and every target and meta kind of ProcessResources.

Inline sources and local directories (krm-kcl's route, the one a project
build's FUNCTION_KCL_DEFAULT_SOURCE takes) are served; oci://, git and URL
sources and `spec.dependencies` are refused, since no recording uses them.

Run: python function_kcl_standin.py --address 127.0.0.1:9443
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import copy
import datetime
import json
import math
import os
import re
import sys
from decimal import Decimal

import grpc
import kcl_lib.api as kcl_api
from google.protobuf import duration_pb2, struct_pb2
from google.protobuf import json_format
from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from crossplane.function.proto.v1beta1 import run_function_pb2 as fnv1beta1
from crossplane.function.proto.v1beta1 import run_function_pb2_grpc as grpcv1beta1

ANNOTATION_READY = "krm.kcl.dev/ready"
ANNOTATION_NAME = "krm.kcl.dev/composition-resource-name"
META_API_VERSION = "meta.krm.kcl.dev/v1alpha1"
TARGETS = ("Default", "PatchDesired", "PatchResources", "Resources", "XR")
READY_VALUES = {
    "True": fnv1.READY_TRUE,
    "False": fnv1.READY_FALSE,
    "Unspecified": fnv1.READY_UNSPECIFIED,
}
RESPONSE_TYPE = "*v1.RunFunctionResponse"
REQUEST_TYPE = "*v1.RunFunctionRequest"


class FunctionError(Exception):
    """A fatal result: upstream's message, as upstream wraps it."""


# ---------------------------------------------------------------------------
# Go's encoding/json, as function-kcl serialises option("params").


def go_float(value: float) -> str:
    """A float64 as encoding/json writes it."""
    if math.isnan(value) or math.isinf(value):
        raise FunctionError(f"json: unsupported value: {value}")
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    magnitude = abs(value)
    if magnitude < 1e-6 or magnitude >= 1e21:
        # strconv 'e' (shortest), then encoding/json turns e-07 into e-7.
        return re.sub(r"e([-+])0(\d)$", r"e\1\2", repr(value))
    return format(Decimal(repr(value)), "f")


def go_json(value, sort_keys: bool = True) -> str:
    """encoding/json's output for a value built from maps, slices and scalars."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_string(value)
    if isinstance(value, GoStruct):
        return "{" + ",".join(f"{go_string(k)}:{go_json(v)}" for k, v in value.fields) + "}"
    if isinstance(value, dict):
        keys = sorted(value) if sort_keys else list(value)
        return "{" + ",".join(f"{go_string(k)}:{go_json(value[k])}" for k in keys) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    if isinstance(value, bytes):
        return go_string(base64.b64encode(value).decode())
    if isinstance(value, RawJSON):
        return value.text
    raise TypeError(f"cannot serialise {type(value)}")


def go_string(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    return out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def go_quote(text: str) -> str:
    """Go's %q for the strings messages quote."""
    return json.dumps(text)


class GoStruct:
    """A Go struct: fields in declaration order, not sorted."""

    def __init__(self, *fields):
        self.fields = fields


class RawJSON:
    def __init__(self, text: str):
        self.text = text


# ---------------------------------------------------------------------------
# Protobuf Struct <-> plain values.


def struct_to_value(struct) -> dict:
    """structpb AsMap: every number a float64, as the Go SDK reads it."""
    return json.loads(json_format.MessageToJson(struct), parse_int=float)


def value_to_struct(value: dict) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


# ---------------------------------------------------------------------------
# The input (KCLInput), as request.GetInput and Validate read it.

KNOWN_SPEC = {"source", "config", "credentials", "dependencies", "params", "resources", "target"}
KNOWN_CONFIG = {
    "arguments", "settings", "overrides", "pathSelectors", "vendor", "sortKeys",
    "showHidden", "disableNone", "debug", "strictRangeCheck",
}


def read_input(req) -> dict:
    raw = json.loads(json_format.MessageToJson(req.input)) if req.HasField("input") else {}
    unknown = set(raw) - {"apiVersion", "kind", "metadata", "spec"}
    spec = raw.get("spec") or {}
    unknown |= {f"spec.{k}" for k in set(spec) - KNOWN_SPEC}
    unknown |= {f"spec.config.{k}" for k in set(spec.get("config") or {}) - KNOWN_CONFIG}
    if unknown:
        raise FunctionError(
            f"cannot get Function input from {REQUEST_TYPE}: unknown members {sorted(unknown)} "
            "(stand-in: upstream's message not reproduced)"
        )
    return raw


def validate(spec: dict) -> None:
    if not spec.get("source"):
        raise FunctionError(
            "invalid function input: spec.source: Required value: kcl source cannot be empty"
        )
    target = spec.get("target")
    if target == "PatchResources":
        resources = spec.get("resources") or []
        if not resources:
            raise FunctionError(
                "invalid function input: spec.Resources: Required value: "
                "PatchResources target requires at least one resource"
            )
        for i, r in enumerate(resources):
            if not r.get("name"):
                raise FunctionError(
                    f"invalid function input: spec.Resources[{i}].name: Required value: name cannot be empty"
                )
            if r.get("base") is None:
                raise FunctionError(
                    f"invalid function input: spec.Resources[{i}].base: Required value: base cannot be empty"
                )
    elif target not in TARGETS:
        spec["target"] = "Default"


def is_inline_source(source: str) -> bool:
    """krm-kcl's SourceToTempEntry fallthrough: not OCI, URL, git, VCS or a local path."""
    s = source.strip()
    if s.startswith(("oci://", "http://", "https://", "git://", "git@", "github.com/", "gitlab.com/")):
        return False
    if "\n" not in s and os.path.exists(s):
        return False
    return True


# ---------------------------------------------------------------------------
# option("params") and the other top-level arguments (render.go).


def composite_json(obj: dict) -> RawJSON:
    return RawJSON(go_json(obj))


def build_params(req, spec: dict, oxr: dict, dxr: dict, desired: dict, ready: dict) -> tuple[str, dict]:
    params: dict[str, RawJSON] = {}
    for key, value in (spec.get("params") or {}).items():
        # RawExtension keeps the JSON it was given; a JSON null leaves it empty,
        # which paramsJSON writes as {}.
        params[key] = RawJSON("{}" if value is None else go_json(value))
    params["oxr"] = composite_json(oxr)
    params["dxr"] = composite_json(dxr)
    params["dcds"] = RawJSON(go_json({
        name: GoStruct(("Resource", res), ("Ready", ready[name])) for name, res in desired.items()
    }))
    observed = {}
    for name, r in req.observed.resources.items():
        observed[name] = GoStruct(
            ("Resource", struct_to_value(r.resource)),
            ("ConnectionDetails", {k: bytes(v) for k, v in r.connection_details.items()}),
        )
    params["ocds"] = RawJSON(go_json(observed))
    params["ctx"] = RawJSON(go_json(struct_to_value(req.context) if req.HasField("context") else {}))
    params["extraResources"] = RawJSON(go_json({
        name: [GoStruct(("Resource", struct_to_value(i.resource))) for i in rs.items]
        for name, rs in req.extra_resources.items()
    }))
    params["requiredResources"] = RawJSON(go_json({
        name: [GoStruct(("Resource", struct_to_value(i.resource))) for i in rs.items]
        for name, rs in req.required_resources.items()
    }))
    text = "{" + ",".join(f"{go_string(k)}:{params[k].text}" for k in sorted(params)) + "}"
    return text, params


def function_config_json(raw_input: dict, spec: dict, params: dict) -> str:
    """json.Marshal(KCLInput) after fn.go filled it in: TypeMeta, ObjectMeta
    (creationTimestamp null), spec in field order with its omitempty rules."""
    meta = dict(raw_input.get("metadata") or {})
    meta.setdefault("creationTimestamp", None)
    config = spec.get("config") or {}
    config_fields = [
        (k, config[k]) for k in
        ("arguments", "settings", "overrides", "pathSelectors", "vendor", "sortKeys",
         "showHidden", "disableNone", "debug", "strictRangeCheck") if config.get(k)
    ]
    creds = spec.get("credentials") or {}
    cred_fields = ([("url", creds["url"])] if creds.get("url") else []) + [
        ("username", creds.get("username", "")), ("password", creds.get("password", ""))]
    fields = [("source", spec.get("source", "")), ("config", GoStruct(*config_fields)),
              ("credentials", GoStruct(*cred_fields))]
    if spec.get("dependencies"):
        fields.append(("dependencies", spec["dependencies"]))
    fields.append(("params", RawJSON(
        "{" + ",".join(f"{go_string(k)}:{params[k].text}" for k in sorted(params)) + "}")))
    if spec.get("resources"):
        fields.append(("resources", spec["resources"]))
    fields.append(("target", spec["target"]))
    return go_json(GoStruct(
        ("kind", "KCLRun"), ("apiVersion", "krm.kcl.dev/v1alpha1"),
        ("metadata", meta), ("spec", GoStruct(*fields)),
    ))


def user_arguments(config: dict) -> list:
    """spec.config.arguments as kcl-go's WithOptions splits them: at the
    first `=`, with a name before it; anything else left out."""
    out = []
    for text in config.get("arguments") or []:
        name, sep, value = text.partition("=")
        if sep and name:
            out.append(kcl_api.Argument(name=name, value=value))
    return out


def go_sprint(value) -> str:
    """A decoded YAML scalar as Go's fmt.Sprint prints it."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        # %v is %g with the shortest digits: an exponent from 1e+06 up.
        if value == int(value) and abs(value) < 1e6:
            return str(int(value))
        if value == int(value):
            return f"{value:e}"
        return repr(value)
    return str(value)


def go_settings_json(value, sort_keys: bool) -> str:
    """JSON as kcl-go writes a kcl_options value: a dict in the file's key
    order (sorted under sort_keys), a list as encoding/json (keys sorted),
    whole floats without a fraction."""
    if isinstance(value, dict):
        keys = sorted(value) if sort_keys else list(value)
        return "{" + ",".join(f"{json.dumps(k)}:{go_settings_json(value[k], sort_keys)}" for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_settings_json(v, sort_keys) for v in value) + "]"
    if isinstance(value, float) and value == int(value) and abs(value) < 1e21:
        return str(int(value))
    return json.dumps(value)


def load_settings(path: str) -> dict:
    """kcl-go's settings.LoadFile and To_ExecProgramArgs: the file's flags,
    path selectors and kcl_options as arguments."""
    with open(path) as f:
        data = YAML(typ="safe").load(f.read()) or {}
    configs = data.get("kcl_cli_configs") or {}
    sort_keys = bool(configs.get("sort_keys"))
    arguments = []
    for option in data.get("kcl_options") or []:
        value = option.get("value")
        if isinstance(value, dict):
            text = go_settings_json(value, sort_keys)
        elif isinstance(value, list):
            text = go_settings_json(value, True)
        else:
            text = go_sprint(value)
        arguments.append(kcl_api.Argument(name=option["key"], value=text))
    return {"configs": configs, "arguments": arguments}


def run_kcl(spec: dict, params_text: str, function_config: str) -> str:
    config = spec.get("config") or {}
    path_source = not is_inline_source(spec["source"])
    resource_list = (
        '{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[],"functionConfig":'
        + function_config + "}"
    )
    env = go_json(dict(os.environ))
    arguments = [
        kcl_api.Argument(name="resource_list", value=resource_list),
        kcl_api.Argument(name="items", value="[]"),
        kcl_api.Argument(name="params", value=params_text),
        kcl_api.Argument(name="PATH", value=os.environ.get("PATH", "")),
        kcl_api.Argument(name="env", value=env),
    ]
    # render.go: an inline source goes to KCL's API with the five options
    # alone (arguments dropped), or with `vendor` through kcl-lang/cli,
    # which adds the arguments after them; krm-kcl's route for a path
    # source puts the arguments first.
    # Settings files (kcl-go's WithSettings, merged as kcl.Option.Merge
    # merges: flags ORed, lists appended): their kcl_options come after
    # upstream's options on the API route, before everything through the
    # command line.
    settings = [load_settings(p) for p in config.get("settings") or []]
    settings_arguments = [a for f in settings for a in f["arguments"]]
    flag = lambda key: any(f["configs"].get(key) for f in settings)  # noqa: E731
    selectors = [p for f in settings for p in f["configs"].get("path_selector") or []]
    if path_source:
        arguments = settings_arguments + user_arguments(config) + arguments
    elif config.get("vendor"):
        arguments = settings_arguments + arguments + user_arguments(config)
    else:
        arguments = arguments + settings_arguments
    if path_source:
        program = dict(k_filename_list=[spec["source"]], work_dir=spec["source"])
    else:
        program = dict(k_filename_list=["prog.k"], k_code_list=[spec["source"]])
    args = kcl_api.ExecProgramArgs(
        **program,
        args=arguments,
        overrides=config.get("overrides") or [],
        path_selector=selectors + (config.get("pathSelectors") or []),
        disable_none=bool(config.get("disableNone")) or flag("disable_none"),
        debug=1 if config.get("debug") else 0,
        sort_keys=bool(config.get("sortKeys")) or flag("sort_keys"),
        show_hidden=bool(config.get("showHidden")) or flag("show_hidden"),
        strict_range_check=bool(config.get("strictRangeCheck")) or flag("strict_range_check"),
    )
    try:
        result = kcl_api.API().exec_program(args)
    except Exception as e:  # kcl-go returns the runtime's error text as the error
        raise FunctionError(f"failed to run kcl function pipelines: {e}") from e
    if result.err_message:
        raise FunctionError(f"failed to run kcl function pipelines: {result.err_message}")
    if result.log_message:
        sys.stderr.write(result.log_message)
    dump = os.environ.get("KCL_STANDIN_DUMP")
    if dump:
        # Each program, its arguments and KCL's output, for checking another
        # KCL implementation against kcl-lib on the corpus's real inputs.
        import hashlib
        key = hashlib.sha256((spec["source"] + params_text).encode()).hexdigest()[:16]
        os.makedirs(os.path.join(dump, key), exist_ok=True)
        with open(os.path.join(dump, key, "prog.k"), "w") as f:
            f.write(spec["source"])
        with open(os.path.join(dump, key, "arguments.json"), "w") as f:
            json.dump({a.name: a.value for a in arguments}, f)
        with open(os.path.join(dump, key, "output.yaml"), "w") as f:
            f.write(result.yaml_result)
    return result.yaml_result


# ---------------------------------------------------------------------------
# KCL's YAML output -> the documents function-kcl works on.


def _rt_yaml() -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    return y


def byte_reader(text: str) -> list:
    """kyaml's ByteReader: split on a `---` line (putting back the line break
    the split took from every piece but the last), skip null documents, and
    when the text is one document only, unwrap a List/ResourceList's items."""
    nodes = []
    pieces = text.split("\n---\n")
    for i, piece in enumerate(pieces):
        if i != len(pieces) - 1:
            piece += "\n"
        docs = list(_rt_yaml().load_all(piece))
        if not docs:
            continue
        node = docs[0]
        if node is None:
            continue
        if len(pieces) == 1 and isinstance(node, dict) and node.get("kind") in ("ResourceList", "List") and (
            "items" in node or "functionConfig" in node
        ):
            nodes.extend(node.get("items") or [])
            continue
        nodes.append(node)
    return nodes


def unwrap_resources(nodes: list) -> list:
    """krm-kcl's UnwrapResources: one document's `items` (or the document
    itself); several documents are wrapped first, dropping KCLRun ones."""
    if not nodes:
        return []
    if len(nodes) == 1:
        node = nodes[0]
        if isinstance(node, dict) and "items" in node:
            items = node["items"]
            if not isinstance(items, list):
                raise FunctionError(
                    "failed to run kcl function pipelines: wrong node kind: expected SequenceNode"
                )
            return list(items)
        return [node]
    return [
        n for n in nodes
        if not (isinstance(n, dict) and n.get("apiVersion") == "krm.kcl.dev/v1alpha1" and n.get("kind") == "KCLRun")
    ]


def _last_leaf(node):
    """The node yaml.v3 writes last in a document, with its parent and key."""
    parent, key = None, None
    while True:
        if isinstance(node, dict) and node:
            parent, key = node, list(node.keys())[-1]
            node = node[key]
        elif isinstance(node, list) and node:
            parent, key = node, len(node) - 1
            node = node[key]
        else:
            return parent, key, node


def split_and_decode(items: list) -> list[dict]:
    """ByteWriter writes the items separated by `---`; SplitDocuments cuts on
    `\\n---...\\n`, taking the line break that ended each document but the last.
    A document whose last value is a `|` block so loses that block's final
    line break. yaml.v2 then decodes each document; null ones are skipped."""
    out = []
    for i, item in enumerate(items):
        if item is None:
            continue
        if isinstance(item, dict):
            clear_empty_metadata(item)
        if i != len(items) - 1:
            parent, key, leaf = _last_leaf(item)
            if isinstance(leaf, LiteralScalarString) and leaf.endswith("\n") and parent is not None:
                parent[key] = LiteralScalarString(str(leaf)[:-1])
                meta = item.get("metadata") if isinstance(item, dict) and isinstance(item.get("metadata"), dict) else {}
                sys.stderr.write(f"stand-in: the last value of item {i} ({item.get('kind') if isinstance(item, dict) else ''}"
                                 f" {meta.get('name', '')}), a | block, loses its final line break\n")
        out.append(plain(item))
    return [d for d in out if d is not None]


def _has_content(node) -> bool:
    """A yaml.v3 node with Content: a non-empty mapping or sequence."""
    return isinstance(node, (dict, list)) and len(node) > 0


def clear_empty_metadata(item: dict) -> None:
    """kyaml's ByteWriter (ClearEmptyAnnotations): `metadata.annotations` and
    then `metadata` removed when they hold nothing (an empty or null value, or
    a scalar)."""
    meta = item.get("metadata")
    if isinstance(meta, dict):
        if "annotations" in meta and not _has_content(meta["annotations"]):
            del meta["annotations"]
    elif meta is not None:
        raise FunctionError("stand-in: a metadata that is not a mapping (kyaml refuses it)")
    if "metadata" in item and not _has_content(item["metadata"]):
        del item["metadata"]


def plain(node):
    """ruamel's round-trip values as plain JSON-like values (yaml.v2's view)."""
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, (datetime.date, datetime.datetime)):
        raise FunctionError("stand-in: a plain timestamp in KCL's output")
    return str(node)


def output_documents(yaml_text: str) -> list[dict]:
    documents = split_and_decode(unwrap_resources(byte_reader(yaml_text)))
    for d in documents:
        if not isinstance(d, dict):
            raise FunctionError("stand-in: a non-mapping document in KCL's output (upstream panics)")
    return documents


# ---------------------------------------------------------------------------
# crossplane-runtime fieldpath, as SetData uses it.


def parse_fieldpath(path: str) -> list:
    segments = []
    i = 0
    current = ""
    while i < len(path):
        c = path[i]
        if c == ".":
            if current:
                segments.append(current)
            current = ""
        elif c == "[":
            if current:
                segments.append(current)
            current = ""
            end = path.index("]", i)
            inner = path[i + 1:end]
            segments.append(int(inner) if inner.isdigit() else inner)
            i = end
        else:
            current += c
        i += 1
    if current:
        segments.append(current)
    return segments


def set_value(obj: dict, path: str, value) -> None:
    segments = parse_fieldpath(path)
    value = json.loads(json.dumps(value))
    node = obj
    for n, seg in enumerate(segments):
        last = n == len(segments) - 1
        nxt = None if last else segments[n + 1]
        if isinstance(seg, int):
            if not isinstance(node, list):
                raise FunctionError(f"setting {path} failed: not an array")
            while len(node) <= seg:
                node.append(None)
            if last:
                node[seg] = value
            else:
                if node[seg] is None:
                    node[seg] = [] if isinstance(nxt, int) else {}
                node = node[seg]
        else:
            if not isinstance(node, dict):
                raise FunctionError(f"setting {path} failed: not an object")
            if last:
                node[seg] = value
            else:
                if node.get(seg) is None:
                    node[seg] = [] if isinstance(nxt, int) else {}
                node = node[seg]


def set_data(data, path: str, obj: dict, skip_identity: bool) -> None:
    if isinstance(data, dict):
        wrapped = path.endswith(".metadata.annotations") or path.endswith(".metadata.labels")
        for key, value in data.items():
            set_data(value, f"{path}[{key}]" if wrapped else f"{path}.{key}", obj, skip_identity)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            set_data(value, f"{path}[{i}]", obj, skip_identity)
    else:
        path = path[1:] if path.startswith(".") else path
        if skip_identity and path in ("apiVersion", "kind", "metadata.name"):
            return
        set_value(obj, path, data)


# ---------------------------------------------------------------------------
# ProcessResources.


def annotations(obj: dict):
    meta = obj.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
        return meta["annotations"]
    return None


def remove_annotation(obj: dict, key: str) -> None:
    """meta.RemoveAnnotations: an object with annotations keeps the (maybe
    empty) map."""
    a = annotations(obj)
    if a is None:
        return
    a.pop(key, None)


def resource_name(obj: dict) -> str:
    a = annotations(obj) or {}
    if ANNOTATION_NAME in a:
        name = a[ANNOTATION_NAME]
    else:
        name = (obj.get("metadata") or {}).get("name", "") if isinstance(obj.get("metadata"), dict) else ""
    remove_annotation(obj, ANNOTATION_NAME)
    return name if isinstance(name, str) else str(name)


def take_ready(obj: dict, ready: dict, name: str) -> None:
    a = annotations(obj)
    if a is not None and ANNOTATION_READY in a:
        v = a[ANNOTATION_READY]
        if v not in READY_VALUES:
            raise FunctionError(
                "cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: "
                f'invalid function input: invalid "{ANNOTATION_READY}" annotation value {go_quote(str(v))}: '
                "must be True, False, or Unspecified"
            )
        ready[name] = v
        remove_annotation(obj, ANNOTATION_READY)


def kind_and_name(obj: dict) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return f"{obj.get('kind', '')}/{meta.get('name', '')}"


class DuplicateChecker:
    def __init__(self):
        self.seen: dict[str, str] = {}

    def check(self, obj: dict, name: str) -> None:
        kn = kind_and_name(obj)
        if name in self.seen:
            raise FunctionError(
                "cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: "
                f"multiple composed resources with name {go_quote(name)} returned: {self.seen[name]} and {kn}. "
                'Set different metadata.name or metadata.annotations."krm.kcl.dev/composition-resource-name" '
                "to distinguish them."
            )
        self.seen[name] = kn


def mergo_merge(dst: dict, src: dict) -> None:
    """mergo.Merge(&dst, src, mergo.WithOverride) on map[string]any."""
    for key, s in src.items():
        d = dst.get(key)
        if s is None:
            dst[key] = None
            continue
        if isinstance(s, dict):
            if isinstance(d, dict):
                mergo_merge(d, s)
                continue
            if key in dst and not _empty(d):
                continue
            dst[key] = s
            continue
        dst[key] = s


def _empty(v) -> bool:
    return v is None or v is False or v == 0 and not isinstance(v, bool) or v == "" or v == [] or v == {}


def process_resources(target, dxr, oxr, desired, ready, data, spec_resources, state):
    def wrap(message):
        return FunctionError(
            f"cannot process xr and state with the pipeline output in {RESPONSE_TYPE}: {message}")

    def ready_of_all():
        for name, obj in desired.items():
            take_ready(obj, ready, name)

    def match(items):
        matches = []
        for d in items:
            name = resource_name(d)
            if name in desired:
                matches.append((name, d))
        if len(matches) != len(items):
            raise wrap(f"failed to match all resources, found {len(matches)} / {len(items)} patches")
        for name, d in matches:
            set_data(d, "", desired[name], skip_identity=True)

    if target == "XR":
        for d in data:
            set_data(d, "", dxr, skip_identity=False)
    elif target == "PatchDesired":
        match(data)
        ready_of_all()
    elif target == "PatchResources":
        for r in spec_resources:
            desired[r["name"]] = copy.deepcopy(r.get("base") or {})
            ready[r["name"]] = "Unspecified"
        match(data)
        ready_of_all()
    elif target == "Resources":
        checker = DuplicateChecker()
        for d in data:
            name = resource_name(d)
            checker.check(d, name)
            if name in desired:
                merged = dict(desired[name])
                merged.update(d)
                d = merged
            desired[name] = d
            ready[name] = "Unspecified"
        ready_of_all()
    else:  # Default
        checker = DuplicateChecker()
        for d in data:
            if d.get("apiVersion", "") == oxr.get("apiVersion", "") and d.get("kind", "") == oxr.get("kind", ""):
                status_dst = dxr.get("status") if isinstance(dxr.get("status"), dict) else {}
                status_src = d.get("status") if isinstance(d.get("status"), dict) else {}
                status_dst = json.loads(json.dumps(status_dst))
                mergo_merge(status_dst, json.loads(json.dumps(status_src)))
                dxr["status"] = status_dst
                continue
            if d.get("apiVersion") == META_API_VERSION:
                kind = d.get("kind")
                if kind == "CompositeConnectionDetails":
                    for k, v in (d.get("data") or {}).items():
                        if isinstance(v, str):
                            try:
                                state["connection_details"][k] = base64.b64decode(v, validate=True)
                            except Exception:
                                state["connection_details"][k] = b""
                elif kind in ("ExtraResources", "RequiredResources"):
                    if "requirements" not in d:
                        raise wrap(f"cannot get {'extra' if kind == 'ExtraResources' else 'required'} "
                                   "resources requirements: requirements: no such field")
                    key = "extra" if kind == "ExtraResources" else "required"
                    for k, v in (d.get("requirements") or {}).items():
                        if k in state[key]:
                            raise wrap(f"duplicate {key} resource key {go_quote(k)}")
                        state[key][k] = selector(v, kind)
                elif kind == "Conditions":
                    if "conditions" not in d:
                        raise wrap("cannot get condition resources: conditions: no such field")
                    state["conditions"] = list(d.get("conditions") or [])
                elif kind == "Events":
                    if "events" not in d:
                        raise wrap("cannot get event resources: events: no such field")
                    state["events"] = list(d.get("events") or [])
                elif kind == "Context":
                    if "data" not in d:
                        raise wrap("cannot get context resource: data: no such field")
                    state["context"].update(json.loads(json.dumps(d.get("data") or {})))
                else:
                    raise wrap(
                        f"invalid kind {go_quote(str(kind))} for apiVersion {go_quote(META_API_VERSION)} - "
                        "must be CompositeConnectionDetails or ExtraResources")
                continue
            a = annotations(d)
            item_ready = "Unspecified"
            if a is not None and ANNOTATION_READY in a:
                v = a[ANNOTATION_READY]
                if v not in READY_VALUES:
                    raise wrap(
                        f'invalid function input: invalid "{ANNOTATION_READY}" annotation value '
                        f"{go_quote(str(v))}: must be True, False, or Unspecified")
                item_ready = v
                remove_annotation(d, ANNOTATION_READY)
            name = resource_name(d)
            checker.check(d, name)
            desired[name] = d
            ready[name] = item_ready


def selector(v: dict, kind: str):
    sel = fnv1.ResourceSelector(api_version=v.get("apiVersion", ""), kind=v.get("kind", ""))
    if kind == "ExtraResources":
        name, namespace = v.get("matchName", ""), v.get("matchNamespace", "")
    else:
        name, namespace = v.get("name", ""), v.get("namespace", "")
    if namespace:
        sel.namespace = namespace
    if not name:
        sel.match_labels.CopyFrom(fnv1.MatchLabels(labels=v.get("matchLabels") or {}))
    else:
        sel.match_name = name
    return sel


# ---------------------------------------------------------------------------
# The server.


class FunctionKcl(grpcv1.FunctionRunnerServiceServicer):
    async def RunFunction(self, req, context):  # noqa: N802
        rsp = fnv1.RunFunctionResponse(
            meta=fnv1.ResponseMeta(tag=req.meta.tag, ttl=duration_pb2.Duration(seconds=60)),
        )
        if req.HasField("desired"):
            rsp.desired.CopyFrom(req.desired)
        if req.HasField("context"):
            rsp.context.CopyFrom(req.context)
        try:
            self.run(req, rsp)
        except FunctionError as e:
            rsp.results.append(fnv1.Result(
                severity=fnv1.SEVERITY_FATAL, message=str(e), target=fnv1.TARGET_COMPOSITE))
        return rsp

    def run(self, req, rsp) -> None:
        raw_input = read_input(req)
        spec = dict(raw_input.get("spec") or {})
        if not spec.get("source"):
            spec["source"] = os.environ.get("FUNCTION_KCL_DEFAULT_SOURCE", "")
        if not spec.get("target"):
            spec["target"] = "Default"
        validate(spec)
        if not is_inline_source(spec["source"]) and not os.path.isdir(spec["source"]):
            raise FunctionError("stand-in: only inline KCL sources and local directories are served")
        if spec.get("dependencies"):
            raise FunctionError("stand-in: spec.dependencies are not served")

        oxr = struct_to_value(req.observed.composite.resource)
        dxr = struct_to_value(req.desired.composite.resource) if req.desired.composite.HasField("resource") else {}
        dxr["apiVersion"] = oxr.get("apiVersion", "")
        dxr["kind"] = oxr.get("kind", "")
        desired = {}
        ready = {}
        ready_names = {fnv1.READY_UNSPECIFIED: "Unspecified", fnv1.READY_TRUE: "True", fnv1.READY_FALSE: "False"}
        for name, r in req.desired.resources.items():
            desired[name] = struct_to_value(r.resource)
            ready[name] = ready_names[r.ready]

        params_text, params = build_params(req, spec, oxr, dxr, desired, ready)
        function_config = function_config_json(raw_input, spec, params)
        data = output_documents(run_kcl(spec, params_text, function_config))

        state = {
            "connection_details": dict(req.desired.composite.connection_details),
            "extra": {}, "required": {}, "conditions": [], "events": [], "context": {},
        }
        process_resources(spec["target"], dxr, oxr, desired, ready, data,
                          spec.get("resources") or [], state)

        if state["extra"] or state["required"]:
            for k, v in state["extra"].items():
                rsp.requirements.extra_resources[k].CopyFrom(v)
            for k, v in state["required"].items():
                rsp.requirements.resources[k].CopyFrom(v)

        seen = set()
        for c in state["conditions"]:
            cond = c.get("condition") or {}
            ctype = cond.get("type", "")
            if ctype in ("Ready", "Synced", "Healthy"):
                rsp.results.append(fnv1.Result(
                    severity=fnv1.SEVERITY_FATAL, target=fnv1.TARGET_COMPOSITE,
                    message=f"cannot set ClaimCondition type: {ctype} is a reserved Crossplane Condition"))
                return
            if ctype in seen and not c.get("force"):
                continue
            out = fnv1.Condition(
                type=ctype, reason=cond.get("reason", ""),
                target=fnv1.TARGET_COMPOSITE_AND_CLAIM if c.get("target") == "CompositeAndClaim" else fnv1.TARGET_COMPOSITE,
                status={"True": fnv1.STATUS_CONDITION_TRUE, "False": fnv1.STATUS_CONDITION_FALSE}.get(
                    cond.get("status"), fnv1.STATUS_CONDITION_UNKNOWN),
            )
            if cond.get("message") is not None:
                out.message = cond["message"]
            rsp.conditions.append(out)
            seen.add(ctype)

        for e in state["events"]:
            event = e.get("event") or {}
            etype = "Normal" if event.get("type") is None else event["type"]
            if etype not in ("Normal", "Warning"):
                rsp.results.append(fnv1.Result(
                    severity=fnv1.SEVERITY_FATAL, target=fnv1.TARGET_COMPOSITE,
                    message=f"invalid type {etype}, must be one of [Normal, Warning]"))
                return
            out = fnv1.Result(
                severity=fnv1.SEVERITY_NORMAL if etype == "Normal" else fnv1.SEVERITY_WARNING,
                message=event.get("message", ""),
                target=fnv1.TARGET_COMPOSITE_AND_CLAIM if e.get("target") == "CompositeAndClaim" else fnv1.TARGET_COMPOSITE,
            )
            if event.get("reason") is not None:
                out.reason = event["reason"]
            rsp.results.append(out)

        if state["context"]:
            merged = struct_to_value(req.context) if req.HasField("context") else {}
            mergo_merge(merged, state["context"])
            for key, value in merged.items():
                v = struct_pb2.Value()
                v.CopyFrom(json_format.ParseDict(value, struct_pb2.Value()))
                rsp.context.fields[key].CopyFrom(v)

        rsp.desired.composite.resource.CopyFrom(value_to_struct(dxr))
        rsp.desired.composite.connection_details.clear()
        for k, v in state["connection_details"].items():
            rsp.desired.composite.connection_details[k] = v
        rsp.desired.composite.ready = fnv1.READY_UNSPECIFIED
        for name, obj in desired.items():
            r = rsp.desired.resources[name]
            r.Clear()
            r.resource.CopyFrom(value_to_struct(obj))
            r.ready = READY_VALUES.get(ready.get(name, "Unspecified"), fnv1.READY_UNSPECIFIED)


class BetaRunner(grpcv1beta1.FunctionRunnerServiceServicer):
    def __init__(self, wrapped):
        self.wrapped = wrapped

    async def RunFunction(self, req, context):  # noqa: N802
        v1req = fnv1.RunFunctionRequest()
        v1req.ParseFromString(req.SerializeToString())
        v1rsp = await self.wrapped.RunFunction(v1req, context)
        rsp = fnv1beta1.RunFunctionResponse()
        rsp.ParseFromString(v1rsp.SerializeToString())
        return rsp


async def serve(address: str) -> None:
    server = grpc.aio.server()
    function = FunctionKcl()
    grpcv1.add_FunctionRunnerServiceServicer_to_server(function, server)
    grpcv1beta1.add_FunctionRunnerServiceServicer_to_server(BetaRunner(function), server)
    server.add_insecure_port(address)
    await server.start()
    await server.wait_for_termination()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", default="127.0.0.1:9443")
    asyncio.run(serve(parser.parse_args().address))
