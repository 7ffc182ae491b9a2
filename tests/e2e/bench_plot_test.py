#!/usr/bin/env python3
"""weft bench --plot on a golden model: the JSON holds one row per batch size and the PNG that
matplotlib drew has the size of the figure.

Usage:  bench_plot_test.py WEFT MODEL_DIR
"""
import json
import os
import struct
import subprocess
import sys
import tempfile


def main():
    weft, model = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        png = os.path.join(tmp, "bench.png")
        done = subprocess.run([weft, "bench", "--model", model, "--batches", "1,2,4", "--prompt-len", "8",
                               "--decode-steps", "4", "--threads", "1", "--plot", png],
                              capture_output=True, text=True, timeout=240)
        if done.returncode != 0:
            sys.exit("weft bench --plot failed (%d): %s" % (done.returncode, done.stderr))
        with open(os.path.join(tmp, "bench.json")) as f:
            table = json.load(f)
        assert [r["batch"] for r in table["rows"]] == [1, 2, 4], table["rows"]
        for r in table["rows"]:
            assert r["decode_tokens_per_s"] > 0 and r["decode_step_ms"] > 0, r
            assert 0 < r["bandwidth_fraction"], r
        with open(png, "rb") as f:
            data = f.read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
        width, height = struct.unpack(">II", data[16:24])
        # 3 panels of 5 x 4.2 inches at 110 dpi.
        assert (width, height) == (1650, 462), (width, height)
    print("ok")


if __name__ == "__main__":
    main()
