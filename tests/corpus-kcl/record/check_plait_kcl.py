"""Runs every KCL program the corpus gave kcl-lib, with the same top-level
arguments, through `plait kcl run`, and compares plait's YAML with kcl-lib's.

The programs come from a recording with KCL_STANDIN_DUMP set (one directory
per program: prog.k, arguments.json, output.yaml):

    KCL_STANDIN_DUMP=/tmp/kcl-dump ~/.cache/plait/kcl-recorder-0.12.3/bin/python \\
        tests/corpus-kcl/record/record.py
    python3 tests/corpus-kcl/record/check_plait_kcl.py /tmp/kcl-dump target/debug/plait

The arguments go in a settings file (`-Y`, `kcl_options`), as values: `-D`
splits on `=` as `kcl run` does, which the API function-kcl calls does not.
`plait kcl run` prints what `print()` wrote before the YAML; a program whose
only difference is that is counted as matching.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml


def values(text: str):
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return None


def main(dump: str, plait: str) -> int:
    identical = same_values = 0
    different = []
    for key in sorted(os.listdir(dump)):
        case = os.path.join(dump, key)
        arguments = json.load(open(os.path.join(case, "arguments.json")))
        options = []
        for name, text in arguments.items():
            try:
                value = json.loads(text)
            except ValueError:
                value = text
            options.append({"key": name, "value": value})
        with open(os.path.join(case, "settings.yaml"), "w") as f:
            json.dump({"kcl_options": options}, f)
        run = subprocess.run([plait, "kcl", "run", "prog.k", "-Y", "settings.yaml"],
                             cwd=case, capture_output=True, text=True)
        want = open(os.path.join(case, "output.yaml")).read()
        if run.returncode != 0:
            different.append(f"{key}: plait failed: {run.stderr.strip()[:400]}")
            continue
        if run.stdout.strip() == want.strip():
            identical += 1
            continue
        # print() output comes first in plait kcl run's stdout.
        if run.stdout.strip().endswith(want.strip()) or values(run.stdout) == values(want):
            same_values += 1
            continue
        with open(os.path.join(case, "plait.yaml"), "w") as f:
            f.write(run.stdout)
        different.append(f"{key}: different output (plait's in {case}/plait.yaml)")
    for line in different:
        print(line)
    print(f"{identical} programs print the same YAML text, {same_values} the same values "
          f"(after print() output), {len(different)} differ")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
