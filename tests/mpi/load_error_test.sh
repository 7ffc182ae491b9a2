#!/usr/bin/env bash
# Distributed load errors end the job cleanly: every case below must exit non-zero on every rank
# with a message naming what is wrong, and no rank may die of a signal (issue 18: each of these
# ended in SIGSEGV on rank 0 while the half-built engine was torn down). The mixture-of-experts
# cases use the golden model qwen2_moe beside MODEL_DIR.
#   load_error_test.sh MPIRUN WEFT MODEL_DIR
set -u
mpirun=$1 weft=$2 model=$3
moe=$(dirname "$model")/qwen2_moe  # 6 experts, top-2, a shared expert
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0

# A copy of the model whose safetensors file lacks one tensor, and one cut short.
python3 - "$model" "$dir" "$moe" <<'PY'
import json, shutil, struct, sys
from pathlib import Path
src, out, moe = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
def read(model):
    blob = (model / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", blob[:8])[0]
    return blob, n, json.loads(blob[8:8 + n]), blob[8 + n:]
for model, name, drop in ((src, "missing_last_layer", "model.layers.1.mlp.down_proj.weight"),
                          (src, "missing_first_layer", "model.layers.0.self_attn.q_proj.weight"),
                          (moe, "missing_expert", "model.layers.1.mlp.experts.4.up_proj.weight")):
    blob, n, header, data = read(model)
    d = out / name
    shutil.copytree(model, d)
    h = {k: v for k, v in header.items() if k != drop}
    text = json.dumps(h).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + data)
blob, n, header, data = read(src)
d = out / "truncated"
shutil.copytree(src, d)
(d / "model.safetensors").write_bytes(blob[: 8 + n + len(data) // 2])
PY

# check NAME NP EXPECTED_MESSAGE -- weft arguments...
check() {
  local name=$1 np=$2 expected=$3
  shift 4
  local log=$dir/$name.log
  timeout -k 5 90 "$mpirun" --allow-run-as-root --oversubscribe -np "$np" "$weft" "$@" >"$log" 2>&1
  local rc=$?
  local why=""
  if [[ $rc -eq 0 ]]; then why="exited 0"
  elif [[ $rc -eq 124 || $rc -eq 137 ]]; then why="hung (status $rc)"
  elif grep -qiE "signal [0-9]+|segmentation fault|core dumped|terminate called" "$log"; then why="a rank died of a signal"
  elif ! grep -qF -- "$expected" "$log"; then why="no message containing '$expected'"
  fi
  if [[ -n $why ]]; then
    echo "FAIL $name: $why"; echo "----- output -----"; tail -20 "$log"; failures=$((failures + 1))
  else
    echo "ok   $name (status $rc)"
  fi
}

gen=(generate --prompt-ids 1,2,3 --max-tokens 4)
check heads_tp3 3 "divisible" -- "${gen[@]}" --model "$model" --tp 3
check layers_per_stage 2 "layers per stage" -- "${gen[@]}" --model "$model" --pp 2 --layers-per-stage 1,3
check missing_tensor_stage1 2 "model.layers.1.mlp.down_proj.weight" -- "${gen[@]}" --model "$dir/missing_last_layer" --pp 2
check missing_tensor_stage0 2 "model.layers.0.self_attn.q_proj.weight" -- "${gen[@]}" --model "$dir/missing_first_layer" --pp 2
check truncated_pp2 2 "model.safetensors" -- "${gen[@]}" --model "$dir/truncated" --pp 2
check truncated_tp2 2 "model.safetensors" -- "${gen[@]}" --model "$dir/truncated" --tp 2
echo '{"custom_id":"a","method":"POST","url":"/v1/completions","body":{"prompt":"x","max_tokens":2}}' >"$dir/in.jsonl"
check batch_missing 2 "model.layers.1.mlp.down_proj.weight" -- batch --model "$dir/missing_last_layer" --pp 2 \
  --input "$dir/in.jsonl" --output "$dir/out.jsonl"
check serve_truncated 2 "model.safetensors" -- serve --model "$dir/truncated" --tp 2 --port 0
# Mixtures of experts: --ep that the expert count or --tp does not allow, --ep on a dense model, an
# expert's tensor missing on the rank that holds it (experts 3-5 live on rank 1 at --ep 2).
check ep_experts 4 "is not divisible by --ep 4" -- "${gen[@]}" --model "$moe" --tp 4 --ep 4
check ep_tp 2 "divide --tp 2" -- "${gen[@]}" --model "$moe" --tp 2 --ep 4
check ep_dense 2 "has no experts" -- "${gen[@]}" --model "$model" --tp 2 --ep 2
check missing_expert 2 "model.layers.1.mlp.experts.4.up_proj.weight" -- "${gen[@]}" --model "$dir/missing_expert" --tp 2 --ep 2

# --device cuda over several ranks is not refused for being distributed: on a machine without a
# GPU every rank says so (or that this weft has no CUDA), as one process does.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  single=$("$weft" "${gen[@]}" --model "$model" --device cuda 2>&1)
  if grep -qF "built without CUDA" <<<"$single"; then no_gpu="built without CUDA"; else no_gpu="no CUDA GPU is visible"; fi
  check cuda_tp2_pp1 2 "$no_gpu" -- "${gen[@]}" --model "$model" --device cuda --tp 2
  check cuda_tp1_pp2 2 "$no_gpu" -- "${gen[@]}" --model "$model" --device cuda --pp 2
fi

[[ $failures -eq 0 ]] && echo PASS || { echo "$failures case(s) failed"; exit 1; }
