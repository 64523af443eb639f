"""Records tests/corpus-kcl/*/expected.yaml (or expected-error.txt) with
upstream `crossplane render` against the stand-in function-kcl
(function_kcl_standin.py) and the upstream functions built by
tests/differential/build-upstream.sh.

Run from the repository root with the recorder's venv (see ../README.md):

    ~/.cache/plait/kcl-recorder-0.12.3/bin/python tests/corpus-kcl/record/record.py [CASE ...]

Each case is rendered in a scratch copy whose functions.yaml keeps only the
Functions the Composition uses, each annotated
render.crossplane.io/runtime: Development with the address of the local
server that runs it. The committed functions.yaml is never changed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path



REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "tests/corpus-kcl"
HERE = Path(__file__).resolve().parent


def upstream_bin() -> Path:
    out = subprocess.run(
        [str(REPO / "tests/differential/build-upstream.sh")],
        check=True, capture_output=True, text=True,
    ).stdout.strip().splitlines()
    return Path(out[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int) -> None:
    for _ in range(200):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def main(cases: list[str]) -> None:
    from ruamel.yaml import YAML

    bin_dir = upstream_bin()
    servers = {}
    processes = []
    env_configs = os.environ.get("FUNCTION_ENVIRONMENT_CONFIGS")
    commands = {
        "function-kcl": [sys.executable, str(HERE / "function_kcl_standin.py"), "--address"],
        "function-auto-ready": [str(bin_dir / "function-auto-ready"), "--insecure", "--address"],
        "function-patch-and-transform": [str(bin_dir / "function-patch-and-transform"), "--insecure", "--address"],
    }
    if env_configs:
        commands["function-environment-configs"] = [env_configs, "--insecure", "--address"]
    for name, command in commands.items():
        port = free_port()
        log = open(Path(tempfile.gettempdir()) / f"record-{name}.log", "w")
        processes.append(subprocess.Popen(
            command + [f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        ))
        servers[name] = port
    try:
        for port in servers.values():
            wait_for(port)
        dirs = sorted(d for d in CORPUS.iterdir() if (d / "composition.yaml").exists())
        if cases:
            dirs = [d for d in dirs if d.name in cases]
        for case in dirs:
            record(case, bin_dir, servers, YAML)
    finally:
        for p in processes:
            p.terminate()
            p.wait()


def function_for(package: str) -> str:
    for name in ("function-kcl", "function-auto-ready", "function-patch-and-transform",
                 "function-environment-configs"):
        if f"/{name}:" in package or f"/{name}@" in package or package.endswith(f"/{name}"):
            return name
    raise RuntimeError(f"no local server for package {package}")


def record(case: Path, bin_dir: Path, servers: dict, YAML) -> None:
    y = YAML(typ="safe")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / case.name
        shutil.copytree(case, scratch)
        composition = y.load((case / "composition.yaml").read_text())
        used = {s["functionRef"]["name"] for s in composition["spec"]["pipeline"]}
        functions = [d for d in y.load_all((case / "functions.yaml").read_text())
                     if d and d.get("kind") == "Function" and d["metadata"]["name"] in used]
        for f in functions:
            port = servers[function_for(f["spec"]["package"])]
            annotations = f["metadata"].setdefault("annotations", {}) or {}
            annotations["render.crossplane.io/runtime"] = "Development"
            annotations["render.crossplane.io/runtime-development-target"] = f"127.0.0.1:{port}"
            f["metadata"]["annotations"] = annotations
        out = YAML()
        with open(scratch / "functions.yaml", "w") as fh:
            out.dump_all(functions, fh)
        args = (case / "args").read_text().split()
        result = subprocess.run(
            [str(bin_dir / "crossplane"), "render", "xr.yaml", "composition.yaml", "functions.yaml", *args,
             "--crossplane-binary", str(bin_dir / "crossplane-core")],
            cwd=scratch, capture_output=True, text=True,
            env={**os.environ, "HOME": str(scratch), "CROSSPLANE_XPKG_CACHE": str(scratch / "xpkg-cache")},
        )
        for stale in ("expected.yaml", "expected-error.txt"):
            (case / stale).unlink(missing_ok=True)
        if result.returncode == 0:
            (case / "expected.yaml").write_text(result.stdout)
            print(f"{case.name}: rendered")
        else:
            (case / "expected-error.txt").write_text(result.stderr)
            print(f"{case.name}: refused: {result.stderr.strip()[:300]}")


if __name__ == "__main__":
    main(sys.argv[1:])
