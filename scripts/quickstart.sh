#!/usr/bin/env bash
# Installs what is missing, builds weft, and runs the main job on the default model
# (configs/default-model, a small Llama trained on the King James Bible; see its README.md).
# Extra arguments go to `weft generate` (e.g. --prompt "The LORD is my shepherd" --json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
args=(--prompt "And God said" --max-tokens 64 --temperature 0.8 --top-p 0.95 --seed 1 "$@")
echo "weft generate ${args[*]}"
build/launcher/weft generate "${args[@]}"
