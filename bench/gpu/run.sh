#!/usr/bin/env bash
# Issue 36 on a lent GPU machine: receive the TensorFlow stack in parts, put it in place, run every check.
#
#   bash bench/gpu/run.sh receive     # in each call that carries a part: unpack it into .gpu_stack/tar/
#   bash bench/gpu/run.sh             # the last call: receive, assemble, bridge CUDA 12 -> 13, run checks.py
#
# The parts come from `python3 bench/gpu/pack.py pack` (here, with PyPI) in .gpu_parts/, each carried by one
# device call with .gpu_parts/manifest.json; .gpu_stack/ is ignored by git, so it stays on the machine between
# calls while the machine is warm (see bench/gpu/README.md for the commands and the device-time plan).
# Environment: OUT (results folder; the device tool sets it), SMALL=1 (tiny sizes), DEVICE=cpu (a dry run on a
# CPU), STAGES (checks.py --stages), BUDGET_S (checks.py --budget_s), STEP_PRESETS / STEP_S (checks.py
# --step_presets / --step_s), PYTHON (default python3),
# TF_PYTHON / KERASHUB_PYTHON / TORCH_PYTHON (default PYTHON), STACK (default .gpu_stack).
set -uo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
STACK=${STACK:-.gpu_stack}
PARTS=${PARTS:-.gpu_parts}
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT" "$STACK/tar"
SETUP="$OUT/gpu_setup.txt"
say() { echo "[run.sh $(date +%T)] $*" | tee -a "$SETUP" >&2; }

# Each part: checked against the manifest, decompressed to $STACK/tar/part_NN.tar (once).
receive() {
  [[ -f "$STACK/site/.complete" ]] && { echo "stack already in place"; return 0; }
  "$PYTHON" - "$PARTS" "$STACK/tar" <<'EOF'
import hashlib, json, lzma, os, shutil, sys
parts, tars = sys.argv[1:3]
manifest = json.load(open(os.path.join(parts, "manifest.json")))
for part in manifest["parts"]:
    src, dst = os.path.join(parts, part["name"]), os.path.join(tars, part["name"][:-3] + ".tar")
    if os.path.exists(dst) or not os.path.exists(src):
        continue
    data = open(src, "rb").read()
    if hashlib.sha256(data).hexdigest() != part["sha256"]:
        sys.exit(f"{src}: sha256 differs from the manifest (an older pack?)")
    raw = lzma.decompress(data)
    if len(raw) != part["raw_bytes"]:
        sys.exit(f"{src}: {len(raw)} bytes unpacked, the manifest says {part['raw_bytes']}")
    open(dst + ".tmp", "wb").write(raw)
    os.replace(dst + ".tmp", dst)
have = sorted(p for p in os.listdir(tars) if p.endswith(".tar"))
print(f"have {len(have)} of {len(manifest['parts'])} parts: {' '.join(h[5:7] for h in have)}")
EOF
}

# All parts there: one tar stream again, unpacked into $STACK (site/ ...).
assemble() {
  [[ -f "$STACK/site/.complete" ]] && { say "stack already in place"; return 0; }
  local want have
  want=$("$PYTHON" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['parts']))" "$PARTS/manifest.json")
  have=$(ls "$STACK"/tar/part_*.tar 2>/dev/null | wc -l)
  [[ "$have" == "$want" ]] || { say "only $have of $want parts here: carry the missing ones first"; return 1; }
  rm -rf "$STACK/site"
  cat "$STACK"/tar/part_*.tar | tar -x -C "$STACK" || return 1
  rm -f "$STACK"/tar/part_*.tar
  touch "$STACK/site/.complete"
  say "stack assembled: $(du -sh "$STACK/site" | cut -f1)"
}

# TensorFlow 2.21 opens CUDA 12 sonames; the image has CUDA 13. libcudart.so.12 is the shipped
# nvidia-cuda-runtime-cu12; the others are links to the image's CUDA 13 libraries (and its cuDNN 9, NCCL 2).
bridge() {
  local links="$STACK/cuda12" roots=(/usr/local/cuda* /usr/local/nvidia /opt /usr/lib/x86_64-linux-gnu)
  rm -rf "$links"; mkdir -p "$links"
  find_lib() { find "${roots[@]}" -name "$1" \( -type f -o -type l \) 2>/dev/null | sort | head -1; }
  local pair want pattern found
  for pair in libcublas.so.12=libcublas.so.13 libcublasLt.so.12=libcublasLt.so.13 libcufft.so.11=libcufft.so.12 \
              libcusolver.so.11=libcusolver.so.12 libcusparse.so.12=libcusparse.so.12 \
              libnvJitLink.so.12=libnvJitLink.so.13 libnvrtc.so.12=libnvrtc.so.13 libcupti.so.12=libcupti.so.13 \
              libnccl.so.2=libnccl.so.2 libcudnn.so.9=libcudnn.so.9; do
    want=${pair%%=*}; pattern=${pair#*=}
    found=$(find_lib "$pattern")
    if [[ -n "$found" ]]; then ln -sf "$(readlink -f "$found")" "$links/$want"; say "link $want -> $found"
    else say "MISSING $pattern (for $want)"; fi
  done
  found=$(find_lib libcudnn.so.9)
  if [[ -n "$found" ]]; then
    for lib in "$(dirname "$found")"/libcudnn*.so.9; do ln -sf "$(readlink -f "$lib")" "$links/$(basename "$lib")"; done
  fi
  ln -sf "$(readlink -f "$STACK"/site/nvidia/cuda_runtime/lib/libcudart.so.12)" "$links/libcudart.so.12" 2>/dev/null
  local ptxas
  ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null | head -1)
  CUDA_DATA_DIR=$( [[ -n "$ptxas" ]] && dirname "$(dirname "$(readlink -f "$ptxas")")" )
  [[ -n "$CUDA_DATA_DIR" && -d "$CUDA_DATA_DIR/nvvm/libdevice" ]] || say "no nvvm/libdevice beside ptxas ($ptxas)"
  [[ -n "$ptxas" ]] && export PATH="$(dirname "$ptxas"):$PATH"
  say "ptxas: ${ptxas:-none}; XLA's CUDA dir: ${CUDA_DATA_DIR:-none}"
}

machine() {
  say "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -2)"
  local names='^(numpy|protobuf|h5py|ml.dtypes|torch|transformers|grpcio|etils|tensorboard) '
  local versions
  versions=$($PYTHON -m pip list 2>/dev/null | grep -iE "$names" | tr -s ' ' | tr '\n' ';')
  say "python: $($PYTHON --version 2>&1); $versions"
}

step=${1:-all}
case "$step" in
  receive) receive ;;
  all)
    start=$SECONDS
    args=(--out "$OUT/gpu_checks.json")
    if [[ "${DEVICE:-gpu}" == gpu ]]; then
      receive && assemble || exit 1
      bridge
      machine
      args+=(--site "$STACK/site" --cuda12 "$STACK/cuda12")
      # Every TensorFlow process (ours, KerasHub, the kbl-* commands) compiles with the settings the kbl-*
      # commands add themselves (keras_bert_lite/xla.py): LLVM compiled on all cores, and XLA's autotuning
      # results in one cache, kept across calls on this machine and returned in $OUT. Committed under
      # bench/gpu/xla_autotune/, they spare the next lent GPU of the same kind its autotuning.
      AUTOTUNE="$STACK/xla_autotune"; mkdir -p "$AUTOTUNE"
      cp -n bench/gpu/xla_autotune/* "$AUTOTUNE"/ 2>/dev/null
      XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_enable_llvm_module_compilation_parallelism=true"
      XLA_FLAGS+=" --xla_gpu_force_compilation_parallelism=$(nproc)"
      export XLA_FLAGS+=" --xla_gpu_per_fusion_autotune_cache_dir=$(readlink -f "$AUTOTUNE")"
      say "XLA_FLAGS: $XLA_FLAGS"
      say "XLA autotune cache: $(ls "$AUTOTUNE" | wc -l) entries at the start"
      [[ -n "${CUDA_DATA_DIR:-}" ]] && args+=(--cuda_data_dir "$CUDA_DATA_DIR")
    elif [[ -f "$PARTS/manifest.json" ]]; then
      receive && assemble && say "stack assembled (a CPU dry run does not run on it)"
    fi
    say "install took $((SECONDS - start)) s"
    [[ -n "${SMALL:-}" && "${SMALL}" != 0 ]] && args+=(--small)
    [[ -n "${DEVICE:-}" ]] && args+=(--device "$DEVICE")
    [[ -n "${STAGES:-}" ]] && args+=(--stages "$STAGES")
    [[ -n "${BUDGET_S:-}" ]] && args+=(--budget_s "$BUDGET_S")
    [[ -n "${STEP_PRESETS:-}" ]] && args+=(--step_presets "$STEP_PRESETS")
    [[ -n "${STEP_S:-}" ]] && args+=(--step_s "$STEP_S")
    args+=(--tf_python "${TF_PYTHON:-$PYTHON}" --kerashub_python "${KERASHUB_PYTHON:-${TF_PYTHON:-$PYTHON}}"
           --torch_python "${TORCH_PYTHON:-$PYTHON}")
    # checks.py keeps to its own budget; this is the backstop.
    timeout -k 10 $(( ${BUDGET_S:-560} + 30 )) "$PYTHON" bench/gpu/checks.py "${args[@]}"
    rc=$?
    if [[ -n "${AUTOTUNE:-}" ]]; then
      tar -czf "$OUT/xla_autotune.tgz" --exclude=./tmp -C "$AUTOTUNE" . &&
        say "XLA autotune cache: $(ls "$AUTOTUNE" | wc -l) entries, in \$OUT/xla_autotune.tgz"
    fi
    say "checks.py exit $rc; whole run $((SECONDS - start)) s"
    exit $rc ;;
  *) echo "usage: run.sh [receive|all]" >&2; exit 2 ;;
esac
