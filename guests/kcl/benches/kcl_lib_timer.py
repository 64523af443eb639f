"""Times the real KCL (PyPI kcl-lib) on one program in one process, as the
KCL benches compare it with plait's: `exec_program` with `option("params")`
given as `-D params=<JSON>` would give it, after one warm-up run.

    python kcl_lib_timer.py main.k params.json RUNS

prints the median seconds per run; exits with KCL's message on an error.
"""

import statistics
import sys
import time

import kcl_lib.api as api


def main():
    path, params_path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(params_path) as f:
        params = f.read()
    args = api.ExecProgramArgs(
        k_filename_list=[path], args=[api.Argument(name="params", value=params)]
    )
    kcl = api.API()
    result = kcl.exec_program(args)
    if result.err_message:
        sys.exit(result.err_message)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        kcl.exec_program(args)
        samples.append(time.perf_counter() - start)
    print(statistics.median(samples))


if __name__ == "__main__":
    main()
