"""weft perplexity on the default model's held-out text equals transformers' number within 1%.

  python3 perplexity_check.py WEFT_BINARY [extra weft flags, e.g. --tp 2 under a launcher prefix]
The reference (reference.json beside this file) was computed by
scripts/default-model/reference_perplexity.py with Hugging Face transformers on the same text,
context and stride; regenerate it with scripts/default-model/make_references.sh after retraining.
Environment: WEFT_LAUNCH (optional) is a command prefix such as "mpirun -np 2 ...".
"""
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def main():
    weft, extra = sys.argv[1], sys.argv[2:]
    with open(os.path.join(HERE, "reference.json")) as f:
        reference = json.load(f)["perplexity"]
    cmd = shlex.split(os.environ.get("WEFT_LAUNCH", "")) + [
        weft, "perplexity", "--model", os.path.join(ROOT, "configs", "default-model"),
        "--text", os.path.join(HERE, "heldout.txt"), "--context", str(reference["context"]),
        "--stride", str(reference["stride"]), *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    print("weft %.4f (%d tokens, %d windows), transformers %.4f (%d tokens, %d windows)" % (
        got["perplexity"], got["tokens"], got["windows"], reference["perplexity"], reference["tokens"],
        reference["windows"]))
    if got["tokens"] != reference["tokens"] or got["windows"] != reference["windows"]:
        sys.exit("scored tokens or windows differ: the tokenizations differ")
    error = abs(got["perplexity"] - reference["perplexity"]) / reference["perplexity"]
    if error > 0.01:
        sys.exit("relative difference %.4f exceeds 1%%" % error)
    print("relative difference %.2e" % error)


if __name__ == "__main__":
    main()
