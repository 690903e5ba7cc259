#!/bin/bash
# Session 40, call 3: where the 0.5B B1 step stands after sessions 37-39 (no training kernel changed in session 40):
# the step twice, a trace of it (bench/trace_summary.py: critical path by group and kernel), and the compiled
# PyTorch+PEFT peer in the same call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s40c_train_trace.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
(cd .gpu/carry/peers && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1)
echo "model rc=$? at ${SECONDS}s"
train_env b1_1 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_trace "" --model /tmp/q05 --batch 1 --seq 512 --steps 3 --trace $R/trace_b1.tsv
python3 bench/trace_summary.py $R/trace_b1.tsv 30 > $R/trace_b1_summary.txt 2>&1; head -45 $R/trace_b1_summary.txt
compiled_peer 1
train_env b1_2 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
tar czf $OUT/s40c.tar.gz -C $OUT r
