"""Records what function-kcl v0.12.2 (the stand-in, on the real KCL) gives
for each `spec.config` case of guests/function-kcl/testdata/config-cases.json,
into each case's `want`: the desired composed resources by name and the fatal
result's message (null when none). The Rust table test reads the same file.

A case's `src` files are at `/src` (a scratch directory standing for `/`);
without `spec.source` they run as a path source (a project build's
FUNCTION_KCL_DEFAULT_SOURCE). Settings paths are relative to `/`.

    ~/.cache/plait/kcl-recorder-0.12.3/bin/python tests/corpus-kcl/record/record_config.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from google.protobuf import json_format

sys.path.insert(0, str(Path(__file__).resolve().parent))
from function_kcl_standin import FunctionKcl, fnv1  # noqa: E402

CASES = Path(__file__).resolve().parents[3] / "guests/function-kcl/testdata/config-cases.json"


def record(function: FunctionKcl, xr: dict, case: dict) -> dict:
    spec = dict(case["spec"])
    with tempfile.TemporaryDirectory() as scratch:
        # The scratch directory stands for `/`, upstream's working
        # directory: `src` files are at `/src`, where a relative settings
        # path finds them.
        os.environ["FUNCTION_KCL_DEFAULT_SOURCE"] = ""
        os.chdir(scratch)
        for name, text in (case.get("src") or {}).items():
            path = Path(scratch) / "src" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        if case.get("src") and not spec.get("source"):
            os.environ["FUNCTION_KCL_DEFAULT_SOURCE"] = str(Path(scratch) / "src")
        request = json_format.ParseDict(
            {
                "input": {"apiVersion": "krm.kcl.dev/v1alpha1", "kind": "KCLInput", "spec": spec},
                "observed": {"composite": {"resource": xr}},
            },
            fnv1.RunFunctionRequest(),
        )
        response = asyncio.run(function.RunFunction(request, None))
        os.chdir("/")
    fatal = next((r.message for r in response.results if r.severity == fnv1.SEVERITY_FATAL), None)
    resources = {
        name: json_format.MessageToDict(r.resource) for name, r in sorted(response.desired.resources.items())
    }
    return {"fatal": fatal, "resources": resources}


def main() -> None:
    doc = json.loads(CASES.read_text())
    function = FunctionKcl()
    for case in doc["cases"]:
        case["want"] = record(function, doc["xr"], case)
        print(case["name"], "->", case["want"]["fatal"] or sorted(case["want"]["resources"]))
    CASES.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
