"""Checks the stand-in against function-kcl v0.12.2's own expectations: cases
of TestRunFunctionSimple in fn_test.go (at tag v0.12.2), request and expected
response transcribed into protobuf JSON. Prints each case's name and whether
the stand-in's response equals the expected one.

    ~/.cache/plait/kcl-recorder-0.12.3/bin/python tests/corpus-kcl/record/check_standin.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from google.protobuf import json_format

sys.path.insert(0, str(Path(__file__).resolve().parent))
from function_kcl_standin import FunctionKcl, fnv1  # noqa: E402

XR = {"apiVersion": "example.org/v1", "kind": "XR", "metadata": {"name": "cool-xr"}, "spec": {"count": 2}}
CD = {"apiVersion": "example.org/v1", "kind": "CD",
      "metadata": {"annotations": {"krm.kcl.dev/composition-resource-name": "cool-cd"}, "name": "cool-cd"}}
SMALL_XR = {"apiVersion": "example.org/v1", "kind": "XR"}
EMPTY_XR = {"apiVersion": "", "kind": ""}
TTL = "60s"


def kcl_input(source: str, target: str | None = None) -> dict:
    spec = {"source": source}
    if target:
        spec["target"] = target
    return {"apiVersion": "krm.kcl.dev/v1alpha1", "kind": "KCLInput", "metadata": {"name": "basic"}, "spec": spec}


CONDITIONS = (
    'items = [{\n    apiVersion: "meta.krm.kcl.dev/v1alpha1"\n    kind: "Conditions"\n    conditions = [{\n'
    '        target: "CompositeAndClaim"\n        force: False\n        condition = {\n'
    '            type: "DatabaseReady"\n            status: "False"\n            reason: "FailedToCreate"\n'
    '            message: "Encountered an error creating the database"\n        }\n    },{\n'
    '        target: "Composite"\n        force: {force}\n        condition = {\n            type: "DatabaseReady"\n'
    '            status: "False"\n            reason: "{reason}"\n'
    '            message: "Encountered an error during validation"\n        }\n    }]\n}]'
)
DUPLICATES = (
    'items = [\n{\n    apiVersion: "example.org/v1"\n    kind: "Generated"\n metadata = {\n  name = "metadata-name"\n'
    '  annotations = {"krm.kcl.dev/composition-resource-name": "duplicate-resource-name"}}\n}\n{\n'
    '    apiVersion: "example.org/v1"\n    kind: "Generated"\n metadata.name = "duplicate-resource-name"\n}\n]\n'
)
DUPLICATE_MESSAGE = (
    "cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: multiple composed "
    'resources with name "duplicate-resource-name" returned: Generated/metadata-name and '
    'Generated/duplicate-resource-name. Set different metadata.name or metadata.annotations.'
    '"krm.kcl.dev/composition-resource-name" to distinguish them.'
)
CONTEXT = ('items = [{\n    apiVersion: "meta.krm.kcl.dev/v1alpha1"\n    kind: "Context"\n'
           '    data = {contextField: "contextValue"}\n}]')
EXTRA = (
    'items = [\n{\n  apiVersion: "meta.krm.kcl.dev/v1alpha1"\n  kind: "ExtraResources"\n  requirements = {\n'
    '    "cool-extra-resource" = {\n      apiVersion: "example.org/v1"\n      kind: "CoolExtraResource"\n'
    '      matchName: "cool-extra-resource"\n    }\n  }\n},\n{\n  apiVersion: "meta.krm.kcl.dev/v1alpha1"\n'
    '  kind: "ExtraResources"\n  requirements = {\n    "another-cool-extra-resource" = {\n'
    '      apiVersion: "example.org/v1"\n      kind: "CoolExtraResource"\n      matchLabels = {\n'
    '        key: "value"\n      }\n    }\n    "yet-another-cool-extra-resource" = {\n'
    '      apiVersion: "example.org/v1"\n      kind: "CoolExtraResource"\n      matchName: "foo"\n    }\n'
    '  }\n},\n{\n  apiVersion: "meta.krm.kcl.dev/v1alpha1"\n  kind: "ExtraResources"\n  requirements = {\n'
    '    "all-cool-resources" = {\n      apiVersion: "example.org/v1"\n      kind: "CoolExtraResource"\n'
    '      matchLabels = {}\n    }\n  }\n}\n]\n'
)

CASES = {
    "ResponseIsReturned": (
        {"meta": {"tag": "hello"},
         "input": kcl_input('{\n    apiVersion: "example.org/v1"\n    kind: "Generated"\n}', "Resources"),
         "observed": {"composite": {"resource": SMALL_XR}}},
        {"meta": {"tag": "hello", "ttl": TTL},
         "desired": {"composite": {"resource": SMALL_XR},
                     "resources": {"": {"resource": {"apiVersion": "example.org/v1", "kind": "Generated"}}}}},
    ),
    "DatabaseInstance": (
        {"meta": {"tag": "database-instance"},
         "input": kcl_input(
             'items = [{ \n    apiVersion: "sql.gcp.upbound.io/v1beta1"\n    kind: "DatabaseInstance"\n'
             '    spec: {\n        forProvider: {\n            project: "test-project"\n'
             '            settings: [{databaseFlags: [{\n                name: "log_checkpoints"\n'
             '                value: "on"\n            }]}]\n        }\n    }\n}]\n'),
         "observed": {"composite": {"resource": SMALL_XR}}},
        {"meta": {"tag": "database-instance", "ttl": TTL},
         "desired": {"composite": {"resource": SMALL_XR},
                     "resources": {"": {"resource": {
                         "apiVersion": "sql.gcp.upbound.io/v1beta1", "kind": "DatabaseInstance",
                         "spec": {"forProvider": {"project": "test-project", "settings": [
                             {"databaseFlags": [{"name": "log_checkpoints", "value": "on"}]}]}}}}}}},
    ),
    "CustomCompositionResourceNameIsSet": (
        {"meta": {"tag": "hello"},
         "input": kcl_input('{\n    apiVersion: "example.org/v1"\n    kind: "Generated"\n metadata.annotations = '
                            '{"krm.kcl.dev/composition-resource-name": "custom-composition-resource-name"}\n}',
                            "Default"),
         "observed": {"composite": {"resource": SMALL_XR}}},
        {"meta": {"tag": "hello", "ttl": TTL},
         "desired": {"composite": {"resource": SMALL_XR},
                     "resources": {"custom-composition-resource-name": {"resource": {
                         "apiVersion": "example.org/v1", "kind": "Generated", "metadata": {"annotations": {}}}}}}},
    ),
    "ExtraResources": (
        {"meta": {"tag": "extra-resources"}, "input": kcl_input(EXTRA, "Default"),
         "observed": {"composite": {"resource": XR}},
         "desired": {"composite": {"resource": XR}, "resources": {"cool-cd": {"resource": CD}}}},
        {"meta": {"tag": "extra-resources", "ttl": TTL},
         "requirements": {"extraResources": {
             "cool-extra-resource": {"apiVersion": "example.org/v1", "kind": "CoolExtraResource",
                                     "matchName": "cool-extra-resource"},
             "another-cool-extra-resource": {"apiVersion": "example.org/v1", "kind": "CoolExtraResource",
                                             "matchLabels": {"labels": {"key": "value"}}},
             "yet-another-cool-extra-resource": {"apiVersion": "example.org/v1", "kind": "CoolExtraResource",
                                                 "matchName": "foo"},
             "all-cool-resources": {"apiVersion": "example.org/v1", "kind": "CoolExtraResource",
                                    "matchLabels": {}}}},
         "desired": {"composite": {"resource": XR}, "resources": {"cool-cd": {"resource": CD}}}},
    ),
    "ExtraResourcesIn": (
        {"meta": {"tag": "extra-resources-in"},
         "input": kcl_input('items = [v.Resource for v in option("params").extraResources["cool1"]]\n', "Default"),
         "extraResources": {"cool1": {"items": [{"resource": XR}, {"resource": CD}]}}},
        {"meta": {"tag": "extra-resources-in", "ttl": TTL},
         "desired": {"composite": {"resource": EMPTY_XR}, "resources": {
             "cool-xr": {"resource": XR},
             "cool-cd": {"resource": {"apiVersion": "example.org/v1", "kind": "CD",
                                      "metadata": {"annotations": {}, "name": "cool-cd"}}}}}},
    ),
    "EmptyInputWithoutDefaultSource": (
        {"meta": {"tag": "empty-input"}, "observed": {"composite": {"resource": SMALL_XR}}},
        {"meta": {"tag": "empty-input", "ttl": TTL},
         "results": [{"target": "TARGET_COMPOSITE", "severity": "SEVERITY_FATAL",
                      "message": "invalid function input: spec.source: Required value: kcl source cannot be empty"}]},
    ),
    "SetConditions": (
        {"meta": {"tag": "set-conditions"},
         "input": kcl_input(CONDITIONS.replace("{force}", "False").replace("{reason}", "FailedToValidate"), "Default")},
        {"meta": {"tag": "set-conditions", "ttl": TTL},
         "conditions": [{"type": "DatabaseReady", "status": "STATUS_CONDITION_FALSE", "reason": "FailedToCreate",
                         "message": "Encountered an error creating the database",
                         "target": "TARGET_COMPOSITE_AND_CLAIM"}],
         "desired": {"composite": {"resource": EMPTY_XR}}},
    ),
    "OberwriteCondition": (
        {"meta": {"tag": "overwrite-conditions"},
         "input": kcl_input(CONDITIONS.replace("{force}", "True").replace("{reason}", "DatabaseValidation"), "Default")},
        {"meta": {"tag": "overwrite-conditions", "ttl": TTL},
         "conditions": [
             {"type": "DatabaseReady", "status": "STATUS_CONDITION_FALSE", "reason": "FailedToCreate",
              "message": "Encountered an error creating the database", "target": "TARGET_COMPOSITE_AND_CLAIM"},
             {"type": "DatabaseReady", "status": "STATUS_CONDITION_FALSE", "reason": "DatabaseValidation",
              "message": "Encountered an error during validation", "target": "TARGET_COMPOSITE"}],
         "desired": {"composite": {"resource": EMPTY_XR}}},
    ),
    "MergeContext": (
        {"meta": {"tag": "merge-context"}, "input": kcl_input(CONTEXT, "Default"),
         "context": {"inputContext": "valueFromPreviousContext"}},
        {"meta": {"tag": "merge-context", "ttl": TTL},
         "context": {"contextField": "contextValue", "inputContext": "valueFromPreviousContext"},
         "desired": {"composite": {"resource": EMPTY_XR}}},
    ),
    "DuplicateNameError": (
        {"meta": {"tag": "duplicate-name-error"}, "input": kcl_input(DUPLICATES),
         "observed": {"composite": {"resource": SMALL_XR}}},
        {"meta": {"tag": "duplicate-name-error", "ttl": TTL},
         "results": [{"severity": "SEVERITY_FATAL", "target": "TARGET_COMPOSITE", "message": DUPLICATE_MESSAGE}]},
    ),
    "ComposedSameNameAsXR": (
        {"meta": {"tag": "hello"},
         "input": kcl_input('[{\n    apiVersion: "example.org/v1"\n    kind: "XR"\n metadata.name = "cool-xr"\n},{\n'
                            '    apiVersion: "example.org/v1"\n    kind: "Generated"\n metadata.name = "cool-xr"\n}]',
                            "Default"),
         "observed": {"composite": {"resource": SMALL_XR}}},
        {"meta": {"tag": "hello", "ttl": TTL},
         "desired": {"composite": {"resource": {**SMALL_XR, "status": {}}}, "resources": {"cool-xr": {"resource": {
             "apiVersion": "example.org/v1", "kind": "Generated", "metadata": {"name": "cool-xr"}}}}}},
    ),
    "ResourcesTargetDuplicateNameError": (
        {"meta": {"tag": "duplicate-name-error"}, "input": kcl_input(DUPLICATES, "Resources"),
         "observed": {"composite": {"resource": SMALL_XR}}},
        {"meta": {"tag": "duplicate-name-error", "ttl": TTL},
         "results": [{"severity": "SEVERITY_FATAL", "target": "TARGET_COMPOSITE", "message": DUPLICATE_MESSAGE}]},
    ),
}


def main() -> int:
    failures = 0
    function = FunctionKcl()
    for name, (request, expected) in CASES.items():
        req = json_format.ParseDict(request, fnv1.RunFunctionRequest())
        want = json_format.ParseDict(expected, fnv1.RunFunctionResponse())
        got = asyncio.run(function.RunFunction(req, None))
        if got == want:
            print(f"{name}: same")
        else:
            failures += 1
            print(f"{name}: DIFFERENT\n  want {json.dumps(json_format.MessageToDict(want))}\n"
                  f"  got  {json.dumps(json_format.MessageToDict(got))}")
    print(f"{len(CASES) - failures} of {len(CASES)} fn_test.go cases give the expected response")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
