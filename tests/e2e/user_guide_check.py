#!/usr/bin/env python3
"""Every command in docs/user-guide.md is one the test suite runs.

Each ```sh block of the guide must start with a marker line:
  # checked: run        the block is run as written (bash -e -o pipefail), from a scratch
                        directory where configs/ is the repository's, with weft on PATH, inside a
                        private network namespace (its own loopback, so port 8000 is free), under
                        a time limit; it must exit 0.
  # checked: by TEST    the block needs what the suite cannot give it as written (several
                        machines, Slurm, Kubernetes); TEST must be one of the suite's tests (it
                        runs the same commands in its own setting), and every flag the block
                        passes to weft must be one weft takes.
A block without a marker, or with another, is an error.

  user_guide_check.py GUIDE WEFT REPO_ROOT BUILD_DIR
"""
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

from weft_flags import unknown_flags

BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)
MARKER = re.compile(r"# checked: (run|by ([A-Za-z0-9_.-]+))\s*$")


def suite_tests(build_dir):
    listed = subprocess.run(["ctest", "--test-dir", build_dir, "-N"], capture_output=True, text=True)
    return set(re.findall(r"Test +#\d+: (\S+)", listed.stdout))


def run_block(text, weft, repo, index):
    with tempfile.TemporaryDirectory() as scratch:
        os.symlink(os.path.join(repo, "configs"), os.path.join(scratch, "configs"))
        script = os.path.join(scratch, "block.sh")
        pathlib.Path(script).write_text(text)
        env = dict(os.environ, PATH=os.path.dirname(weft) + os.pathsep + os.environ["PATH"],
                   OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        cmd = ["unshare", "--net", "sh", "-c",
               f"ip link set lo up && exec timeout -k 5 300 bash -e -o pipefail {shlex.quote(script)}"]
        done = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return [f"block {index} (run) exited {done.returncode}:\n{text}\n--- stdout ---\n"
                    f"{done.stdout[-2000:]}\n--- stderr ---\n{done.stderr[-2000:]}"]
        print(f"ok   block {index}: ran {len(text.splitlines())} lines")
        return []


def main():
    guide, weft, repo, build_dir = sys.argv[1:5]
    weft = os.path.abspath(weft)
    blocks = BLOCK.findall(pathlib.Path(guide).read_text())
    if not blocks:
        sys.exit(f"no sh blocks in {guide}")
    tests = suite_tests(build_dir)
    errors = []
    for index, block in enumerate(blocks, 1):
        first, _, body = block.partition("\n")
        marker = MARKER.fullmatch(first.strip())
        if not marker:
            errors.append(f"block {index} has no '# checked: run' or '# checked: by TEST' first line: {first!r}")
            continue
        if marker.group(1) == "run":
            errors += run_block(block, weft, repo, index)
            continue
        test = marker.group(2)
        if test not in tests:
            errors.append(f"block {index}: '{test}' is not a test of this build (ctest -N)")
        found = [f"block {index}: {e}" for line in body.splitlines() if line.strip()
                 for e in unknown_flags(weft, shlex.split(line))]
        errors += found
        if not found and test in tests:
            print(f"ok   block {index}: run by {test}; weft flags known")
    for e in errors:
        print("FAIL " + e)
    if errors:
        sys.exit(1)
    print(f"PASS: {len(blocks)} command blocks of {guide} checked")


if __name__ == "__main__":
    main()
