"""The real KCL (PyPI kcl-lib, pinned by the Makefile) as the oracle of
plait's KCL tests: runs many programs in one process, since starting Python
and loading KCL costs far more than a program.

Reads a JSON list of runs on stdin, each
  {"file": "/abs/main.k", "args": [["name", "value"]], "sort_keys": false,
   "disable_none": false, "show_hidden": false, "path_selectors": [], "strict_range_check": false}
and writes a JSON list of results, in the same order, each
  {"yaml": "...", "log": "...", "errors": []}
or, when KCL fails, every error it reports, in its order:
  {"yaml": "", "log": "...", "errors": [{"kind": "TypeError", "code": "E2G22",
   "message": "...", "line": 3, "column": 8}, ...]}
where `message` is the label of the error's first position (or the lines
after the kind when it has none) and `line`/`column` that position (null
when none). `-D` values are converted as `kcl run` converts them.

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
GUTTER_END = re.compile(r"^\s*\|\s*$")
SCIENTIFIC = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")
NUMBER = re.compile(r"^[+-]?(\d[\d_]*\.?\d*|\.\d+|0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+)$")
STRING = re.compile(r"""^(\"[^\"]*\"|'[^']*')$""")


def parse_errors(text):
    """Every error of KCL's diagnostic text, in order: kind, code, message
    (the label at the first position, continued over its following lines,
    or the lines after the kind when there is no position) and position."""
    text = ANSI.sub("", text)
    lines = [line for line in text.splitlines() if line.strip()]
    blocks = []
    for line in lines:
        if KIND.match(line.strip()) or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    return [parse_block(block) for block in blocks]


def parse_block(lines):
    error = {"kind": "", "code": None, "message": "", "line": None, "column": None}
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
                message = [mark.group(1).strip()]
                # A message of several lines goes on until the gutter closes.
                for more in lines[index + 2 :]:
                    if GUTTER_END.match(more):
                        break
                    message.append(more)
                error["message"] = "\n".join(message)
                return error
    if error["line"] is None:
        error["message"] = "\n".join(
            line.strip() for line in lines[1:] if not line.startswith(("suggestion:", "note:"))
        )
    return error


def cli_argument(value):
    """A `-D` value as `kcl run` hands it to KCL (kcl-lib's API takes it
    as given): JSON stays, a number in scientific notation and anything
    that is not a KCL literal become strings, True/False/None JSON."""
    try:
        parsed = json.loads(value)
        if isinstance(parsed, (int, float)) and not isinstance(parsed, bool) and SCIENTIFIC.match(value.strip()):
            return json.dumps(value)
        return value
    except ValueError:
        pass
    constants = {"True": "true", "False": "false", "None": "null", "Undefined": "null"}
    stripped = value.strip()
    if stripped in constants:
        return constants[stripped]
    if NUMBER.match(stripped) and not SCIENTIFIC.match(stripped):
        return value
    if STRING.match(stripped):
        return value
    return json.dumps(value)


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
        args=[api.Argument(name=name, value=cli_argument(value)) for name, value in request.get("args", [])],
        sort_keys=request.get("sort_keys", False),
        disable_none=request.get("disable_none", False),
        show_hidden=request.get("show_hidden", False),
        path_selector=request.get("path_selectors", []),
        strict_range_check=request.get("strict_range_check", False),
    )
    # KCL's file module reads relative to the process's directory, as
    # `kcl run` in the program's directory does.
    os.chdir(os.path.dirname(path))
    try:
        result = kcl.exec_program(args)
    except Exception as error:  # kcl-lib raises compile-time errors
        return {"yaml": "", "log": "", "errors": parse_errors(str(error))}
    if result.err_message:
        return {"yaml": "", "log": result.log_message, "errors": parse_errors(result.err_message)}
    yaml = result.yaml_result
    # `kcl run` ends its output with a newline; the API does not.
    if yaml and not yaml.endswith("\n"):
        yaml += "\n"
    return {"yaml": yaml, "log": result.log_message, "errors": []}


def main():
    requests = json.load(sys.stdin)
    kcl = api.API()
    json.dump([run(kcl, request) for request in requests], sys.stdout)


if __name__ == "__main__":
    main()
