#!/usr/bin/env python3
"""Runs KCL's own language suite (kcl-lang/kcl tests/grammar) through a `kcl
run` command and prints the pass rates per top-level folder.

Each case is a directory with main.k and a stdout.golden or a stderr.golden,
and optionally settings.yaml whose `kcl_options` are added to the command
line. A case is compared as KCL's runner (tests/grammar/test_grammar.py)
compares it:

- stdout.golden: exit status 0, stdout ends with a newline, and stdout and
  the golden load as the same ordered YAML stream (empty documents dropped);
- stderr.golden: a non-zero exit status, and the golden is a substring of
  stderr once ANSI escapes and blank lines are removed from both and
  `${CWD}` in the golden is the case's directory.

A case is single-file when main.k is the only KCL file in its directory
(none below it either), with no kcl.mod and no settings.yaml: 1,052 cases
with stdout.golden and 335 with stderr.golden at kcl-lang/kcl 670ab63b
(2026-08). For those the table counts stdout cases passed, stderr cases
refused (any non-zero exit) and stderr cases refused with KCL's message;
every other case (packages, CLI options) is counted as passed or not.

    tests/kcl/run-grammar.py --kcl "target/debug/plait kcl run"
    tests/kcl/run-grammar.py --kcl /work/target-kcl/debug/examples/kcl_run schema
    tests/kcl/run-grammar.py --kcl ... --list-failures schema --verbose
    tests/kcl/run-grammar.py --kcl ... --save before.json   # later: --baseline before.json

The YAML comparison needs ruamel.yaml, as KCL's runner: when this Python has
none the script runs itself again with the KCL oracle's venv
(~/.cache/plait/kcl-lib-0.12.3, made by `make kcl-oracle`).
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

ORACLE_VENV = pathlib.Path.home() / ".cache/plait/kcl-lib-0.12.3"
DEFAULT_SUITE = pathlib.Path.home() / ".cache/plait/kcl-grammar/tests/grammar"
REPO = pathlib.Path(__file__).resolve().parents[2]

try:
    from ruamel.yaml import YAML
except ImportError:
    venv_python = ORACLE_VENV / "bin/python"
    if venv_python.exists() and pathlib.Path(sys.executable) != venv_python:
        os.execv(str(venv_python), [str(venv_python), __file__, *sys.argv[1:]])
    sys.exit(
        "run-grammar.py needs ruamel.yaml: `make kcl-oracle` installs it into "
        f"{ORACLE_VENV}, or `pip install ruamel.yaml`"
    )

GOLDEN_FILES = {"main.k", "stdout.golden", "stderr.golden", "settings.yaml"}
ANSI = re.compile(r"(?:\x1B[@-_]|[\x80-\x9F])[0-?]*[ -/]*[@-~]")


def find_cases(suite, folders):
    cases = []
    for root, dirs, files in os.walk(suite):
        dirs.sort()
        if "main.k" not in files:
            continue
        relative = pathlib.Path(root).relative_to(suite)
        if folders and relative.parts[0] not in folders:
            continue
        if "stdout.golden" not in files and "stderr.golden" not in files:
            continue
        cases.append(pathlib.Path(root))
    return cases


def is_single_file(case):
    if (case / "settings.yaml").exists():
        return False
    for root, _, files in os.walk(case):
        for name in files:
            path = pathlib.Path(root, name)
            if name == "kcl.mod" or (name.endswith(".k") and path != case / "main.k"):
                return False
    return True


def yaml_loader():
    yaml = YAML(pure=True)
    yaml.representer.add_representer(
        type(None),
        lambda dumper, data: dumper.represent_scalar("tag:yaml.org,2002:null", "null"),
    )
    return yaml


def yaml_stream(text):
    return [document for document in yaml_loader().load_all(text) if document]


def strip_for_stderr(text):
    text = ANSI.sub("", text)
    return "\n".join(line for line in text.splitlines() if line.strip())


def kcl_options(case):
    settings = case / "settings.yaml"
    if not settings.exists():
        return []
    loaded = yaml_loader().load(settings.read_text())
    if not loaded or not loaded.get("kcl_options"):
        return []
    return str(loaded["kcl_options"]).split()


def run_case(command, case, timeout):
    """Returns (passed, refused, reason): refused is for stderr cases only."""
    argv = command + ["main.k"] + kcl_options(case)
    try:
        process = subprocess.run(
            argv, cwd=case, capture_output=True, timeout=timeout, env=dict(os.environ)
        )
    except subprocess.TimeoutExpired:
        return False, False, f"timed out after {timeout} s"
    stdout = process.stdout.decode(errors="replace")
    stderr = process.stderr.decode(errors="replace")
    stdout_golden = case / "stdout.golden"
    if stdout_golden.exists():
        if process.returncode != 0:
            return False, False, f"exit {process.returncode}: {first_lines(stderr)}"
        if not stdout.endswith("\n"):
            return False, False, "stdout does not end with a newline"
        try:
            got = yaml_stream(stdout)
        except Exception as error:  # noqa: BLE001 - any YAML error fails the case
            return False, False, f"stdout is not YAML: {error}"
        want = yaml_stream(stdout_golden.read_text())
        if got != want:
            return False, False, f"stdout differs:\n{diff(want, got)}"
        return True, False, ""
    golden = strip_for_stderr((case / "stderr.golden").read_text())
    golden = golden.replace("${CWD}", str(case.resolve()))
    refused = process.returncode > 0
    if not refused:
        return False, False, f"exit {process.returncode}, expected an error:\n{golden}"
    if golden not in strip_for_stderr(stderr):
        return False, True, f"stderr lacks:\n{golden}\n--- got:\n{strip_for_stderr(stderr)}"
    return True, True, ""


def first_lines(text, count=6):
    return "\n".join(text.strip().splitlines()[:count])


def diff(want, got):
    import difflib
    import io

    def dump(documents):
        out = io.StringIO()
        yaml = yaml_loader()
        yaml.explicit_start = True
        yaml.dump_all(documents, out)
        return out.getvalue().splitlines()

    lines = difflib.unified_diff(dump(want), dump(got), "golden", "got", lineterm="", n=2)
    return "\n".join(list(lines)[:40])


def percent(part, whole):
    return f"{100.0 * part / whole:5.1f} %" if whole else "    -  "


def cell(part, whole):
    return f"{part:4}/{whole:<4} {percent(part, whole)}" if whole else f"{'-':>9} {'':7}"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--kcl",
        default=str(REPO / "target/debug/plait") + " kcl run",
        help="the `kcl run` command, split as a shell would (default: %(default)s)",
    )
    parser.add_argument("--suite", default=str(DEFAULT_SUITE), help="tests/grammar of a kcl checkout")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--timeout", type=float, default=20, help="seconds per case (default 20)")
    parser.add_argument(
        "--list-failures",
        metavar="FOLDER",
        help="print the failing cases of FOLDER (a top-level folder, or `all`)",
    )
    parser.add_argument("--verbose", action="store_true", help="with --list-failures, say why each failed")
    parser.add_argument("--save", metavar="FILE", help="write each case's result to FILE (JSON)")
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="a file written by --save: list the cases that passed then and fail now",
    )
    parser.add_argument("folders", nargs="*", help="run only these top-level folders")
    args = parser.parse_args()

    suite = pathlib.Path(args.suite).resolve()
    if not suite.is_dir():
        sys.exit(
            f"no suite at {suite}: fetch kcl-lang/kcl and point --suite at its tests/grammar "
            "(docs/kcl.md says how)"
        )
    command = shlex.split(args.kcl)
    if not command:
        sys.exit("--kcl is empty")
    # The command runs in each case's directory: a relative program path is
    # taken from where this script was started.
    if "/" in command[0] and not os.path.isabs(command[0]):
        command[0] = os.path.abspath(command[0])

    cases = find_cases(suite, set(args.folders))
    if not cases:
        sys.exit(f"no cases under {suite} for {args.folders or 'any folder'}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda case: run_case(command, case, args.timeout), cases))

    rows = {}
    failures = []
    for case, (passed, refused, reason) in zip(cases, results):
        relative = case.relative_to(suite)
        folder = relative.parts[0]
        row = rows.setdefault(folder, [0] * 8)
        single = is_single_file(case)
        if single and (case / "stdout.golden").exists():
            row[0] += passed
            row[1] += 1
        elif single:
            row[2] += refused
            row[3] += passed
            row[4] += 1
        else:
            row[5] += passed
            row[6] += 1
        if not passed:
            failures.append((folder, relative, reason))

    print(f"command: {shlex.join(command)}")
    print(f"suite:   {suite}")
    header = f"{'folder':22} {'stdout (single file)':>22} {'stderr refused':>22} {'stderr, KCL message':>22} {'other cases':>22}"
    print(header)
    print("-" * len(header))
    total = [0] * 8
    for folder in sorted(rows):
        row = rows[folder]
        total = [a + b for a, b in zip(total, row)]
        print(format_row(folder, row))
    print("-" * len(header))
    print(format_row("total", total))

    results_by_case = {str(case.relative_to(suite)): result[0] for case, result in zip(cases, results)}
    if args.save:
        with open(args.save, "w") as out:
            json.dump(results_by_case, out, indent=0, sort_keys=True)
    if args.baseline:
        with open(args.baseline) as baseline_file:
            baseline = json.load(baseline_file)
        regressions = sorted(c for c, passed in results_by_case.items() if baseline.get(c) and not passed)
        fixed = sorted(c for c, passed in results_by_case.items() if passed and baseline.get(c) is False)
        print(f"\nsince {args.baseline}: {len(fixed)} cases fixed, {len(regressions)} broken")
        for case in regressions:
            print(f"  broken: {case}")

    if args.list_failures:
        print()
        for folder, relative, reason in failures:
            if args.list_failures in ("all", folder):
                print(relative)
                if args.verbose:
                    print("    " + reason.replace("\n", "\n    "))


def format_row(name, row):
    return (
        f"{name:22} {cell(row[0], row[1]):>22} {cell(row[2], row[4]):>22} "
        f"{cell(row[3], row[4]):>22} {cell(row[5], row[6]):>22}"
    )


if __name__ == "__main__":
    main()
