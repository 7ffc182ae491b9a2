"""Writes block_quant_reference.txt: reference conversions of GGUF block types by the `gguf`
Python package (gguf.quants, llama.cpp's own numpy port of ggml's reference code), which
block_quant_test.cpp checks weft's kernels against. Run with a Python that has `gguf` and numpy:

    ~/.cache/weft-peers/venv/bin/python tests/unit/kernels/data/make_block_quant_reference.py

Format, one case per pair of lines:
    dequantize <type> <n> <hex bytes of n / block blocks>
    values <n floats, %.9g>
    quantize <type> <n> <n input floats, %.9g>
    bytes <hex bytes>
Random blocks carry finite f16 scales (random bytes elsewhere); quantize inputs are Gaussian with
a few exact zeros, repeated values and a constant block (the edge cases of the scale choice).
"""
import pathlib

import gguf
import numpy as np

T = gguf.GGMLQuantizationType
# type, block elements, bytes per block, offsets of the f16 fields and each field's range
TYPES = {
    "q8_0": (T.Q8_0, 32, 34, [(0, -0.05, 0.05)]),
    "q4_0": (T.Q4_0, 32, 18, [(0, -0.2, 0.2)]),
    "q4_1": (T.Q4_1, 32, 20, [(0, 0.0, 0.2), (2, -1.0, 0.0)]),
    "q5_0": (T.Q5_0, 32, 22, [(0, -0.1, 0.1)]),
    "q5_1": (T.Q5_1, 32, 24, [(0, 0.0, 0.1), (2, -1.0, 0.0)]),
    "q4_k": (T.Q4_K, 256, 144, [(0, 0.0, 0.01), (2, 0.0, 0.01)]),
    "q5_k": (T.Q5_K, 256, 176, [(0, 0.0, 0.005), (2, 0.0, 0.01)]),
    "q6_k": (T.Q6_K, 256, 210, [(208, -0.002, 0.002)]),
}
QUANTIZABLE = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1"]


def fmt(values):
    return " ".join("%.9g" % float(v) for v in values)


def main():
    rng = np.random.default_rng(20261201)
    lines = []
    for name, (qtype, block, nbytes, halves) in TYPES.items():
        nblocks = 8 if block == 32 else 3
        raw = rng.integers(0, 256, size=(nblocks, nbytes), dtype=np.uint8)
        for off, lo, hi in halves:
            h = rng.uniform(lo, hi, size=nblocks).astype(np.float16)
            raw[:, off:off + 2] = h.view(np.uint8).reshape(nblocks, 2)
        values = gguf.quants.dequantize(raw.reshape(-1), qtype).reshape(-1).astype(np.float32)
        assert values.size == nblocks * block and np.all(np.isfinite(values))
        lines.append("dequantize %s %d %s" % (name, values.size, raw.tobytes().hex()))
        lines.append("values " + fmt(values))
    for name in QUANTIZABLE:
        qtype = TYPES[name][0]
        x = rng.standard_normal(32 * 8).astype(np.float32)
        x[5] = 0.0
        x[40:48] = x[40]           # repeated values
        x[64:96] = np.float32(0.3)  # a constant block
        x[96:128] = 0.0             # an all-zero block
        x[130] = -4.0               # a dominant negative value
        q = gguf.quants.quantize(x.reshape(-1, 32), qtype).reshape(-1)
        lines.append("quantize %s %d %s" % (name, x.size, fmt(x)))
        lines.append("bytes " + q.tobytes().hex())
    out = pathlib.Path(__file__).with_name("block_quant_reference.txt")
    out.write_text("\n".join(lines) + "\n")
    print("wrote", out, "gguf", getattr(gguf, "__version__", "?"))


if __name__ == "__main__":
    main()
