#!/usr/bin/env python3
"""Writes fixtures/reference.safetensors with the Hugging Face safetensors library (the format's
reference implementation), so model_loading_test reads a file weft did not write. Values are
simple formulas the test recomputes. Run from the repository root; the output is committed.
    python3 tests/unit/model/gen_safetensors_fixture.py
"""
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "reference.safetensors")


def main():
    tensors = {
        # value = index * 0.25 - 3 (exact in every float format used here)
        "f32": (torch.arange(2 * 3 * 4, dtype=torch.float32) * 0.25 - 3).reshape(2, 3, 4),
        "f16": (torch.arange(5 * 6, dtype=torch.float32) * 0.25 - 3).to(torch.float16).reshape(5, 6),
        "bf16": (torch.arange(7, dtype=torch.float32) * 0.25 - 3).to(torch.bfloat16),
        "i64": torch.arange(4, dtype=torch.int64).reshape(2, 2) * 1000000000000 - 7,
        "i32": torch.tensor([-1, 2, -3], dtype=torch.int32),
        "scalar": torch.tensor(1.5, dtype=torch.float32),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
        "model.layers.0.weight": (torch.arange(1 * 2 * 3 * 4, dtype=torch.float32) * 0.25 - 3).reshape(1, 2, 3, 4),
    }
    save_file(tensors, OUT, metadata={"format": "pt", "note": "weft test fixture"})
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
