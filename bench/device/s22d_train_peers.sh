#!/bin/bash
# Session 22, device call 4 (H200): issue 21's training rows on the H200 beside PyTorch+PEFT (eager and compiled with
# reduce-overhead) in one call: 0.5B B1×T512, 0.5B B8, 7B B1 (ours with a trace at 0.5B B1), 0.5B prefill from the
# inference bench. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s22d_train_peers.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
P=$PWD/.gpu/carry/peers
make_models
train() {  # name, args...
  local n=$1; shift
  timeout 100 $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2
}
peer() {  # name, seconds at most, args...
  local n=$1 t=$2; shift 2
  local left=$((540 - SECONDS)); [ $left -lt $t ] && t=$left
  [ $t -lt 30 ] && { echo "$n skipped at ${SECONDS}s"; return; }
  (cd $P && timeout $t python3 torch_peft_bench.py "$@" --skip-micro > $R/$n.txt 2>&1)
  echo "$n rc=$? at ${SECONDS}s"; grep -E '"(train_ms_per_step|train_tokens_per_s|train_peak_gib|prefill512_tokens_per_s|decode_loop_tokens_per_s)"' $R/$n.txt | paste -sd' '
}
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 150 ]; do sleep 2; done  # the 0.5B model first
echo "0.5B model at ${SECONDS}s"
train b1 --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
train b1_2 --model /tmp/q05 --batch 1 --seq 512 --steps 9
train b8 --model /tmp/q05 --batch 8 --seq 512 --steps 5
peer peer05_compiled 150 --model /tmp/q05 --batch 1 --compile reduce-overhead
peer peer05_eager 60 --model /tmp/q05 --batch 1
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train 7b --model /tmp/q7 --batch 1 --seq 512 --steps 5
peer peer7_eager 120 --model /tmp/q7 --batch 1 --new-tokens 20
peer peer7_compiled 200 --model /tmp/q7 --batch 1 --new-tokens 20 --compile reduce-overhead
tar czf $OUT/s22d.tar.gz -C $OUT r && rm -rf $R
