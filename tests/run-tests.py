#!/usr/bin/env python3
"""Builds every test of the workspace and runs the test binaries in two lanes.

`cargo test --workspace` runs one binary after another. Several of plait's
binaries spend most of their run waiting: for a control plane to start, for
a controller's poll interval, for a state to hold for a while. They run in a
lane of their own, beside the binaries that compute, so their waits overlap
the others' work instead of adding to it. Each binary runs as `cargo test`
would run it (from its package's directory, with cargo's environment), its
output is printed whole when it ends, and the run ends with each binary's
wall and CPU time. The exit status is 1 if any binary failed.

Usage: tests/run-tests.py [cargo test options, e.g. -p plait-kube]
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# Binaries that mostly wait, each as `label` names it: their CPU time is a
# small part of their wall time (docs/testing.md, "How long the tests
# take"). They run one after another in a lane of their own, beside the
# lane of the binaries that compute, so at most two binaries run at once:
# one of each lane.
WAITING = {
    "plait-kube test all",
    "plait-controlplane test cleanup",
    "plait-controlplane test cluster",
    "plait-controlplane test crds",
    "plait-validate test all",
    "plait test takeover_upstream",
    "plait test trace",
    "plait test shards",
    "plait test usage",
    "plait test crash",
    "plait test controller",
    "plait test helm_chart",
    "plait test webhook_certificate",
    "plait test webhook",
    "plait test kustomize",
    "plait test dev",
}

CARGO = os.environ.get("CARGO", shutil.which("cargo") or "cargo")


def build(args):
    """Builds the tests and returns each test binary as a dict."""
    metadata = json.loads(
        subprocess.run(
            [CARGO, "metadata", "--no-deps", "--format-version", "1"],
            check=True,
            stdout=subprocess.PIPE,
        ).stdout
    )
    package_of = {p["manifest_path"]: p["name"] for p in metadata["packages"]}
    cargo_test = subprocess.Popen(
        [CARGO, "test", "--no-run", "--message-format=json-render-diagnostics", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    binaries = []
    for line in cargo_test.stdout:
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message["profile"]["test"]:
            continue
        manifest = message["manifest_path"]
        binaries.append(
            {
                "name": message["target"]["name"],
                "kind": message["target"]["kind"][0],
                "package": package_of[manifest],
                "dir": os.path.dirname(manifest),
                "executable": message["executable"],
            }
        )
    if cargo_test.wait() != 0:
        sys.exit(f"run-tests: building the tests failed (cargo exit status {cargo_test.returncode})")
    return binaries


def label(binary):
    if binary["kind"] == "lib":
        return f"{binary['package']} (unit tests)"
    return f"{binary['package']} {binary['kind']} {binary['name']}"


class Run:
    """Runs binaries one at a time from a lane's queue, recording each."""

    def __init__(self, results, print_lock):
        self.results = results
        self.print_lock = print_lock

    def lane(self, jobs):
        while True:
            try:
                job = jobs.get_nowait()
            except queue.Empty:
                return
            self.results.append(job())

    def binary(self, binary):
        env = dict(os.environ)
        env.update(
            {
                "CARGO": CARGO,
                "CARGO_MANIFEST_DIR": binary["dir"],
                "CARGO_PKG_NAME": binary["package"],
                "CARGO_CRATE_NAME": binary["name"].replace("-", "_"),
            }
        )
        return self.command(label(binary), [binary["executable"]], binary["dir"], env)

    def command(self, name, argv, cwd, env=None):
        with self.print_lock:
            print(f"     Running {name}", flush=True)
        with tempfile.TemporaryFile() as output:
            start = time.monotonic()
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=output, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.monotonic() - start
            # Recorded so the Popen does not try to reap the process again.
            process.returncode = os.waitstatus_to_exitcode(status)
            output.seek(0)
            text = output.read().decode("utf-8", "replace")
        passed = process.returncode == 0
        with self.print_lock:
            print(f"\n==== {name}: {'ok' if passed else 'FAILED'} in {wall:.1f} s", flush=True)
            sys.stdout.write(text)
            sys.stdout.flush()
        return {"name": name, "passed": passed, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime}


def main():
    args = sys.argv[1:]
    if "-h" in args or "--help" in args:
        print(__doc__)
        return
    if not any(a in ("--workspace", "-p", "--package") or a.startswith("--package=") for a in args):
        args = ["--workspace", *args]
    started = time.monotonic()
    binaries = build(args)
    built = time.monotonic()

    if "--workspace" in args:
        stale = WAITING - {label(b) for b in binaries}
        if stale:
            sys.exit(f"run-tests: no test binary is labelled {', '.join(sorted(stale))}: update WAITING")

    results, print_lock = [], threading.Lock()
    run = Run(results, print_lock)
    computing, waiting = queue.Queue(), queue.Queue()
    root = os.getcwd()
    # Doc tests are compiled when they run, by rustdoc under cargo's build
    # lock; first, so no test that runs cargo waits for that lock.
    computing.put(lambda: run.command("doc tests", [CARGO, "test", "--doc", *args], root))
    for binary in binaries:
        lane = waiting if label(binary) in WAITING else computing
        lane.put(lambda binary=binary: run.binary(binary))

    lanes = [threading.Thread(target=run.lane, args=(jobs,)) for jobs in (computing, waiting)]
    for lane in lanes:
        lane.start()
    for lane in lanes:
        lane.join()

    failed = [r for r in results if not r["passed"]]
    print("\n==== test binaries, longest first (wall, CPU of the binary and what it waited for)")
    for r in sorted(results, key=lambda r: -r["wall"]):
        print(f"  {r['wall']:7.1f} s {r['cpu']:7.1f} s  {'ok    ' if r['passed'] else 'FAILED'}  {r['name']}")
    print(f"built in {built - started:.1f} s, ran in {time.monotonic() - built:.1f} s")
    if failed:
        print(f"FAILED: {', '.join(r['name'] for r in failed)}")
        sys.exit(1)
    print(f"all {len(results)} test binaries passed")


if __name__ == "__main__":
    main()
