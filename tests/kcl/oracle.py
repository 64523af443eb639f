"""The real KCL (PyPI kcl-lib, pinned by the Makefile) as the oracle of
plait's KCL tests: runs many programs in one process, since starting Python
and loading KCL costs far more than a program.

Reads a JSON list of runs on stdin, each
  {"file": "/abs/main.k", "args": [["name", "value"]], "sort_keys": false,
   "disable_none": false, "show_hidden": false}
and writes a JSON list of results, in the same order, each
  {"yaml": "...", "log": "...", "error": null}
or, when KCL fails,
  {"yaml": "", "log": "...", "error": {"kind": "TypeError", "code": "E2G22",
   "message": "...", "line": 3, "column": 8, "text": "..."}}
where `text` is KCL's whole message without colours, `message` the label
of its first position (or the line after the kind when it has none), and
`line`/`column` that position (null when none).

Run with the oracle venv's Python: ~/.cache/plait/kcl-lib-0.12.3/bin/python.
"""

import json
import os
import re
import sys
import tomllib

import kcl_lib.api as api

ANSI = re.compile(r"(?:\x1B[@-_]|[\x80-\x9F])[0-?]*[ -/]*[@-~]")
KIND = re.compile(r"^error\[(\w+)\]: (\w+)")
POSITION = re.compile(r"^\s*-->\s*(.*):(\d+):(\d+)\s*$")
SOURCE_LINE = re.compile(r"^\s*\d+\s*\|")
MARK_LINE = re.compile(r"^\s*\|\s?[\s^~]*(.*)$")


def parse_error(text):
    text = ANSI.sub("", text)
    lines = [line for line in text.splitlines() if line.strip()]
    error = {"kind": "", "code": None, "message": "", "line": None, "column": None, "text": "\n".join(lines)}
    if not lines:
        return error
    head = KIND.match(lines[0].strip())
    if head:
        error["code"], error["kind"] = head.group(1), head.group(2)
    else:
        error["kind"] = lines[0].strip()
    for index, line in enumerate(lines[1:], start=1):
        position = POSITION.match(line)
        if position and error["line"] is None:
            error["line"], error["column"] = int(position.group(2)), int(position.group(3))
        if SOURCE_LINE.match(line) and index + 1 < len(lines):
            mark = MARK_LINE.match(lines[index + 1])
            if mark:
                error["message"] = mark.group(1).strip()
                return error
    if len(lines) > 1 and error["line"] is None:
        error["message"] = lines[1].strip()
    return error


def path_dependencies(directory):
    """The `path` dependencies of the kcl.mod at or above `directory`, as
    `kcl run` hands them to KCL (kcl-lib itself reads no kcl.mod)."""
    while True:
        manifest = os.path.join(directory, "kcl.mod")
        if os.path.exists(manifest):
            with open(manifest, "rb") as f:
                dependencies = tomllib.load(f).get("dependencies", {})
            return [
                api.ExternalPkg(pkg_name=name, pkg_path=os.path.normpath(os.path.join(directory, spec["path"])))
                for name, spec in dependencies.items()
                if isinstance(spec, dict) and "path" in spec
            ]
        parent = os.path.dirname(directory)
        if parent == directory:
            return []
        directory = parent


def run(kcl, request):
    path = request["file"]
    args = api.ExecProgramArgs(
        external_pkgs=path_dependencies(os.path.dirname(path)),
        k_filename_list=[path],
        work_dir=os.path.dirname(path),
        args=[api.Argument(name=name, value=value) for name, value in request.get("args", [])],
        sort_keys=request.get("sort_keys", False),
        disable_none=request.get("disable_none", False),
        show_hidden=request.get("show_hidden", False),
    )
    # KCL's file module reads relative to the process's directory, as
    # `kcl run` in the program's directory does.
    os.chdir(os.path.dirname(path))
    try:
        result = kcl.exec_program(args)
    except Exception as error:  # kcl-lib raises compile-time errors
        return {"yaml": "", "log": "", "error": parse_error(str(error))}
    if result.err_message:
        return {"yaml": "", "log": result.log_message, "error": parse_error(result.err_message)}
    yaml = result.yaml_result
    # `kcl run` ends its output with a newline; the API does not.
    if yaml and not yaml.endswith("\n"):
        yaml += "\n"
    return {"yaml": yaml, "log": result.log_message, "error": None}


def main():
    requests = json.load(sys.stdin)
    kcl = api.API()
    json.dump([run(kcl, request) for request in requests], sys.stdout)


if __name__ == "__main__":
    main()
