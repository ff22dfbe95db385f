#!/usr/bin/env bash
# The GPU check: on a CUDA machine, with nothing downloaded, in about 6.5 minutes,
#   1. the tests marked `cuda` (trainer, evaluation, measurements, every loss on CUDA),
#   2. the README's main job on CUDA (pretrain, then evaluate), timed,
#   3. the GPU loss benchmark (ours against open_clip, pytorch-metric-learning and lightly where
#      installed, and the floor), the pretrain-against-a-bare-loop benchmark and the profile of
#      the losses' kernels at B = 16384,
#   then 4. the fast suite in what is left of 9.5 minutes (it must pass on a CUDA machine too;
#      it took 2.5 to 3.5 minutes on an H200 with 16 cores), so that the whole check fits one
#      call of the device tool (10 minutes).
# Every figure and log goes to one folder: the first argument, or $OUT, or gpu-check/.
#
#     bash benchmarks/gpu_check.sh [FOLDER]
#
# It runs from the checkout without installing it (PYTHONPATH=src, `python -m contrastkit`), so
# a machine that holds torch, torchvision, scikit-learn, matplotlib, pyyaml and pytest needs
# nothing else. The peers are optional: carry their wheels (open_clip_torch, pytorch-metric-
# learning, lightly) and put them on PYTHONPATH first; a peer that is missing is reported so.
# Each step has its own time limit; a step that fails is reported and the next one still runs;
# the exit status is that of the first failure.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-check}}"
mkdir -p "$out"
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
status=0
started=$SECONDS

step() {  # step NAME LIMIT_SECONDS COMMAND...: run it, log to $out/NAME.log, record its time
    local name=$1 limit=$2
    shift 2
    local begin=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    local code=$?
    printf '%-12s exit %3d  %4d s\n' "$name" "$code" $((SECONDS - begin)) | tee -a "$out/summary.txt"
    tail -n 3 "$out/$name.log"
    if [ "$code" -ne 0 ] && [ "$status" -eq 0 ]; then status=$code; fi
}

{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    $python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'bf16', torch.cuda.is_bf16_supported())"
    git rev-parse HEAD 2>/dev/null || true
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

step cuda-tests 150 $python -m pytest -q -p no:cacheprovider -m cuda -n 4
runs=$(mktemp -d)
step main-job 90 bash -c "$python -m contrastkit pretrain runs_dir=$runs progress=false \
    && $python -m contrastkit evaluate $runs/digits-simclr-vrns --no-progress"
step gpu-losses 200 $python -m benchmarks.gpu_losses --out "$out"
# two repeats: one bare loop alone varied by a quarter within one run on an H200
step gpu-train 200 $python -m benchmarks.gpu_train --out "$out" --epochs 3 --repeats 2
step gpu-profile 60 $python -m benchmarks.gpu_profile --out "$out"
left=$((570 - (SECONDS - started)))
if [ "$left" -gt 60 ]; then
    # every failure, not the first only; the cuda tests ran above
    # -rfE: the failures' names even when the summary is all that is read
    step fast-suite "$left" $python -m pytest -q -rfE -p no:cacheprovider -n 15 \
        -m "not slow and not cuda"
else
    echo "fast-suite   skipped: ${left} s left of 9.5 minutes" | tee -a "$out/summary.txt"
fi
echo "total $((SECONDS - started)) s; figures and logs in $out" | tee -a "$out/summary.txt"
exit $status
