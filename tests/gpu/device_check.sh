#!/usr/bin/env bash
# The GPU figures of docs/performance.md in ONE device call (a lent H100/H200 machine; ../shared/gpu/README.md):
#
#   echo /.whl/ >> .git/info/exclude; ../shared/gpu/wheelhouse.sh .whl; cp -r ../shared/data/mnist .mnist
#   run(command="bash tests/gpu/device_check.sh", carry=[".whl", ".mnist"], timeout_s=600)
#
# Steps, most wanted first, each under its own time limit and all under DEADLINE seconds (default 540):
# the environment; BERT-Large at the notebook's defaults (batch 1024, sequence 128, precision and
# micro-batch "auto"; the plan for 1000 steps is shown, then MAX_BERT_STEPS steps train with its choices);
# LLaMA model_size="auto" (7b on an H200); MNIST at its defaults, and one epoch at precision bf16; the
# IPU-vs-GPU study at its defaults; then `make test-gpu`'s tests (tests/gpu) with what time is left.
# A step that would start with under 20 s left is skipped and says so. Everything lands in $OUT:
# device_check.tar.gz (logs, executed notebooks), figures.json (what each run recorded), summary.txt.
#
#   bash tests/gpu/device_check.sh --cpu     # the same logic on the CPU at tiny sizes (no GPU needed)
set -uo pipefail

MODE=gpu
[ "${1:-}" = "--cpu" ] && MODE=cpu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$(mktemp -d)}
DEADLINE=${DEADLINE:-540}
MAX_BERT_STEPS=${MAX_BERT_STEPS:-60}
WORK=$(mktemp -d)
LOGS=$WORK/device_check
mkdir -p "$LOGS" "$OUT"
STARTED=$(date +%s)

if [ "$MODE" = gpu ]; then
  PY=${PYTHON:-python3}
  if [ -d .whl ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$LOGS/pip.log" 2>&1
    export PYTHONPATH=/tmp/site:$ROOT
  fi
  DEVICE=cuda
  LIMIT_SCALE=1
else
  PY=${PYTHON:-$ROOT/.venv/bin/python}
  [ -x "$PY" ] || PY=python3
  DEVICE=cpu
  LIMIT_SCALE=${LIMIT_SCALE:-4}  # a shared CPU starts kernels and imports slowly: the logic, not the clock
  export LABKIT_GPU_TESTS_ON_CPU=1
fi
[ -d .mnist ] && export LABKIT_DATA_DIR=$ROOT/.mnist
[ -z "${LABKIT_DATA_DIR:-}" ] && [ -d ../shared/data/mnist ] && export LABKIT_DATA_DIR=$(cd ../shared/data/mnist && pwd)
export MPLBACKEND=Agg PYTHONUNBUFFERED=1 LABKIT_PROGRESS=text
export LABKIT_CACHE_DIR=${LABKIT_CACHE_DIR:-$WORK/cache} TORCHINDUCTOR_CACHE_DIR=$WORK/inductor

# step NAME LIMIT_SECONDS COMMAND...: runs COMMAND under min(LIMIT, time left), logs to NAME.log
step() {
  local name=$1 limit=$2; shift 2
  local left=$(( DEADLINE - ($(date +%s) - STARTED) ))
  if [ "$left" -lt 20 ]; then
    echo "$name: skipped, ${left} s left of ${DEADLINE}" | tee -a "$LOGS/summary.txt"
    return
  fi
  limit=$(( limit * LIMIT_SCALE ))
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc in $(( $(date +%s) - t0 )) s (limit ${limit} s)$([ $rc -eq 124 ] && echo ', TIMED OUT')" \
    | tee -a "$LOGS/summary.txt"
}

if [ "$MODE" = gpu ]; then
  BERT=(model_size=large batch_size=1024 max_seq_length=128 max_steps=1000)
  LLAMA=(-p model_size auto)
  MNIST=()
  MNIST_BF16=(-p precision bf16 -p epochs 1)
  STUDY=()
else  # every size shrunk: the logic, not the figures
  BERT=(model_size=micro batch_size=16 max_seq_length=32 max_steps=40)
  MAX_BERT_STEPS=4
  LLAMA=(-p model_size tiny -p batch_size 4 -p steps 6 -p log_steps 3 -p sequence_length 32)
  MNIST=(-p epochs 1 -p max_train_samples 2000 -p max_test_samples 400)
  MNIST_BF16=(-p precision bf16 -p epochs 1 -p max_train_samples 160 -p max_test_samples 80)
  STUDY=(-p replicas "[1]" -p micro_batch_sizes "[64]" -p model small)
fi

{ date -u; uname -a; nvidia-smi 2>&1 | head -15; $PY -c "import torch, transformers, sys; print(sys.version); \
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__); \
print(torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA')"; git log --oneline -1; } \
  > "$LOGS/environment.log" 2>&1

# BERT-Large: the plan for the defaults (its shown time, precision, micro-batch, launch), then that plan's steps
step bert_large 240 $PY - "$LOGS" "$DEVICE" "$MAX_BERT_STEPS" "${BERT[@]}" <<'EOF'
import json, sys, time
from labkit.testbeds.cerebras import bert_large
logs, device, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
values = {k: int(v) if v.isdigit() else v for k, v in (a.split("=", 1) for a in sys.argv[4:])}
config = bert_large.SPEC.validate(dict(values, target=device, log_steps=min(20, steps)))
t0 = time.perf_counter()
chosen = bert_large.plan(config)
plan_s = time.perf_counter() - t0
print(chosen, "\n(plan took {:.1f} s)".format(plan_s), flush=True)
run = bert_large.run_portable(config.replace(max_steps=steps, log_steps=min(20, steps)), chosen.device,
                              log_path=logs + "/bert_large_portable.log", steps=chosen.steps)
rates = run.series.get("rate", {}).get("y", []) if isinstance(run.series.get("rate"), dict) else []
json.dump({"plan": str(chosen), "plan_seconds": plan_s, "params": run.params, "metrics": run.metrics,
           "environment": run.environment, "notes": run.notes, "steady_rate": rates[-1] if rates else None,
           "estimated_seconds_1000_steps": chosen.steps.seconds(config.batch_size * config.max_steps)},
          open(logs + "/bert_large.json", "w"), indent=1, default=str)
EOF
# each notebook through labkit's own runner (a real kernel), into $LOGS/<name>.ipynb
RUN=($PY -m labkit run)
step llama 200 "${RUN[@]}" notebooks/cerebras/llama2_7b.ipynb "$LOGS/llama2_7b.ipynb" -p device "$DEVICE" "${LLAMA[@]}"
step mnist 90 "${RUN[@]}" notebooks/graphcore/mnist.ipynb "$LOGS/mnist.ipynb" -p device "$DEVICE" ${MNIST[@]+"${MNIST[@]}"}
step mnist_bf16 45 "${RUN[@]}" notebooks/graphcore/mnist.ipynb "$LOGS/mnist_bf16.ipynb" -p device "$DEVICE" \
  "${MNIST_BF16[@]}"
step study 90 "${RUN[@]}" notebooks/comparison/ipu_vs_gpu.ipynb "$LOGS/ipu_vs_gpu.ipynb" -p device "$DEVICE" \
  ${STUDY[@]+"${STUDY[@]}"}
step test_gpu 300 $PY -m pytest tests/gpu -m gpu -p no:cacheprovider -rs -q --durations=10

# figures.json: what each run recorded (read back from the executed notebooks), and the step summary
$PY - "$LOGS" > "$LOGS/figures.log" 2>&1 <<'EOF'
import glob, json, os, sys
from labkit import results
logs = sys.argv[1]
figures = {"summary": open(os.path.join(logs, "summary.txt")).read().splitlines()}
bert = os.path.join(logs, "bert_large.json")
if os.path.exists(bert):
    figures["bert_large"] = json.load(open(bert))
for path in sorted(glob.glob(os.path.join(logs, "*.ipynb"))):
    name = os.path.basename(path)[:-6]
    try:
        figures[name] = [{"name": getattr(r, "name", None), "params": r.params, "metrics": r.metrics,
                          "environment": r.environment, "notes": r.notes} for r in results.read(path).runs]
    except Exception as exc:  # a notebook cut short by its time limit: say so, keep the others
        figures[name] = {"unreadable": repr(exc)}
json.dump(figures, open(os.path.join(logs, "figures.json"), "w"), indent=1, default=str)
print("figures.json:", ", ".join(k for k in figures if k != "summary"))
EOF
echo "total: $(( $(date +%s) - STARTED )) s" | tee -a "$LOGS/summary.txt"
tar -czf "$OUT/device_check.tar.gz" -C "$WORK" device_check
cp "$LOGS/summary.txt" "$OUT/summary.txt"
[ -f "$LOGS/figures.json" ] && cp "$LOGS/figures.json" "$OUT/figures.json"
echo "wrote $OUT/device_check.tar.gz, $OUT/figures.json, $OUT/summary.txt"
