#!/usr/bin/env bash
# Installs what is missing, builds weft, and runs the main job on the bundled default model.
# Extra arguments go to `weft generate` (e.g. --max-tokens 32 --json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# The bundled default model: a tiny Llama (random weights, so the tokens are noise) that ships
# with the golden tests. A trained default model replaces it in a later issue.
model=tests/golden/models/llama_gqa
echo "weft generate --model $model --prompt-ids 1,2,3,4,5 --max-tokens 16 $*"
build/launcher/weft generate --model "$model" --prompt-ids 1,2,3,4,5 --max-tokens 16 "$@"
