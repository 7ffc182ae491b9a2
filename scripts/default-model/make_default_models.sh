#!/usr/bin/env bash
# Rebuilds the default model pair from scratch: configs/default-model (~5.8M parameters) and
# configs/default-draft (~1.3M), their shared tokenizer, the held-out text and the golden
# references. A tool, not part of the build or the tests; on a 2-core CPU it takes about half an
# hour (torch uses every core; a GPU is not needed).
#   scripts/default-model/make_default_models.sh [WORK_DIR]
# Needs: the Debian package bible-kjv (the `bible` reader of bible-kjv-text; installed here when
# missing) and PyPI torch, transformers, tokenizers, safetensors.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${1:-$(mktemp -d /tmp/weft-default-model.XXXXXX)}"
if ! command -v bible >/dev/null; then
  apt-get install -y --no-install-recommends bible-kjv
fi
python3 -c "import torch, transformers, tokenizers, safetensors" 2>/dev/null ||
  python3 -m pip install torch transformers tokenizers safetensors

python3 "$here/prepare_text.py" "$work/data"
python3 "$here/train_tokenizer.py" "$work/data/train.txt" "$work/tokenizer"
for size in target draft; do
  python3 "$here/train_model.py" --size "$size" --data "$work/data" --tokenizer "$work/tokenizer" \
    --out "$work/$size" --minutes 60 | tee "$work/$size.log"
done
rm -rf "$root/configs/default-model" "$root/configs/default-draft"
mkdir -p "$root/configs/default-model" "$root/configs/default-draft"
for f in config.json generation_config.json model.safetensors tokenizer.json tokenizer_config.json training.json; do
  cp "$work/target/$f" "$root/configs/default-model/$f"
  cp "$work/draft/$f" "$root/configs/default-draft/$f"
done
cp "$work/data/heldout.txt" "$root/tests/golden/default_model/heldout.txt"
python3 "$here/make_reference.py"
(cd "$here" && python3 evaluate.py --target "$root/configs/default-model" --draft "$root/configs/default-draft" \
  --text "$root/tests/golden/default_model/heldout.txt") | tee "$work/evaluation.json"
echo "Update the model cards (configs/default-*/README.md) with $work/evaluation.json."
