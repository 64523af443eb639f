#!/usr/bin/env python3
"""Records a project case's expected output with the real KCL (kcl-lib 0.12.3).

    python3 record.py CASE_DIR MODELS_DIR

(Python with PyYAML; KCL runs in the oracle venv,
~/.cache/plait/kcl-lib-0.12.3/bin/python, as tests/kcl/oracle.py does.)

CASE_DIR is a project case (see README.md); MODELS_DIR is the KCL models
`plait kcl import --layout up -o DIR CASE_DIR/apis CASE_DIR/crds` generated
in DIR/models (the same models `plait render --project` stages). The script runs
the case's function (`functions/<fn>/main.k`) as function-kcl v0.12.2 runs
a project build: the package at /src with its `kcl.mod` path dependency
`models` given as an external package, and `option("params")` filled as
function-kcl fills it on a pipeline's first step (`oxr`, `dxr` with the
oxr's apiVersion and kind, empty `ocds`, `dcds` and `ctx`). It writes
`expected.yaml`: the output's `items`, each with function-kcl's own
annotations (`krm.kcl.dev/composition-resource-name`, `krm.kcl.dev/ready`)
removed as function-kcl removes them, keyed by that resource name.

The observed composite (`oxr`) is the case's example XR as Crossplane
hands it to a function: the XRD's defaults applied, the
`crossplane.io/composite` label, and `spec.compositionRef` naming the case's
Composition. Only the fields the program reads matter to its output.
"""

import copy
import json
import os
import pathlib
import subprocess
import sys

import yaml

ORACLE_PYTHON = os.path.expanduser("~/.cache/plait/kcl-lib-0.12.3/bin/python")

# Runs one program in the oracle venv: a JSON request on stdin, KCL's JSON
# result (or its error) on stdout.
RUN_KCL = """
import json, sys
import kcl_lib.api as api
r = json.load(sys.stdin)
result = api.API().exec_program(api.ExecProgramArgs(
    work_dir=r["work_dir"],
    k_filename_list=[r["file"]],
    external_pkgs=[api.ExternalPkg(pkg_name=n, pkg_path=p) for n, p in r["external_pkgs"]],
    args=[api.Argument(name="params", value=r["params"])],
))
json.dump({"json": result.json_result, "error": result.err_message}, sys.stdout)
"""

KCL_ANNOTATIONS = ("krm.kcl.dev/composition-resource-name", "krm.kcl.dev/ready")


def apply_defaults(value, schema):
    """Fills missing properties with their defaults, as the API server does."""
    if not isinstance(value, dict):
        return
    for name, prop in (schema.get("properties") or {}).items():
        if name not in value and "default" in prop:
            value[name] = copy.deepcopy(prop["default"])
        if name in value:
            apply_defaults(value[name], prop)


def main(case, models):
    case = pathlib.Path(case)
    models = pathlib.Path(models).resolve()
    xr = yaml.safe_load((case / "examples" / "app-xr.yaml").read_text())
    xrd = yaml.safe_load((case / "apis" / "definition.yaml").read_text())
    composition = yaml.safe_load((case / "apis" / "composition.yaml").read_text())
    version = xr["apiVersion"].split("/")[1]
    schema = next(v for v in xrd["spec"]["versions"] if v["name"] == version)
    apply_defaults(xr, schema["schema"]["openAPIV3Schema"])
    xr["metadata"].setdefault("labels", {})["crossplane.io/composite"] = xr["metadata"]["name"]
    xr["spec"]["compositionRef"] = {"name": composition["metadata"]["name"]}

    params = {
        "oxr": xr,
        "dxr": {"apiVersion": xr["apiVersion"], "kind": xr["kind"]},
        "ocds": {},
        "dcds": {},
        "ctx": {},
    }
    (function,) = sorted((case / "functions").iterdir())
    request = {
        "work_dir": str(function),
        "file": str(function / "main.k"),
        "external_pkgs": [["models", str(models)]],
        "params": json.dumps(params, sort_keys=True),
    }
    run = subprocess.run(
        [ORACLE_PYTHON, "-c", RUN_KCL],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(run.stdout)
    if result["error"]:
        sys.exit(result["error"])
    items = json.loads(result["json"])["items"]
    expected = {}
    for item in items:
        annotations = item.get("metadata", {}).get("annotations") or {}
        name = annotations.get(KCL_ANNOTATIONS[0]) or item["metadata"]["name"]
        for key in KCL_ANNOTATIONS:
            annotations.pop(key, None)
        expected[name] = item
    (case / "expected.yaml").write_text(
        yaml.safe_dump(expected, sort_keys=True, default_flow_style=False)
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
