#!/bin/bash
# Session 18, device call 4: the final build's rows (0.5B B1 and B8 steps, 7B B1 bf16, nf4 and nf4 with
# --grad-checkpoint, prefill and decode at both sizes), the memory plans of the 7B and 14B shapes (`--plan`; the
# 14B folder from bench/make_shape_model.py --sparse: headers only), and the compiled PyTorch peer in the same call
# as far as the call's time allows (7B first, then 0.5B; the eager peer not run: session 17's figures).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s18d_final_rows.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "model rc=$?" >> $R/make_model05.txt) &
M05=$!
wait $M05; tail -1 $R/make_model05.txt
(cd $P && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "model rc=$?" >> $R/make_model7.txt) &
M7=$!
run() {  # name, args...
  local n=$1; shift
  timeout 100 $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -3
}
wait $M7; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
run b1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1_2 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b8 --model /tmp/q05 --batch 8 --seq 512 --steps 5
run 7b --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b_nf4 --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize nf4
run 7b_nf4_ckpt --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize nf4 --grad-checkpoint
for m in q05 q7; do
  timeout 100 $B/lorastudio-bench inference --model /tmp/$m > $R/infer_$m.txt 2>&1
  echo "inference $m rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer_$m.txt | head -2
done
timeout 100 $B/lorastudio-bench inference --model /tmp/q7 --quantize nf4 > $R/infer_q7_nf4.txt 2>&1
echo "inference 7B nf4 rc=$? at ${SECONDS}s"; grep -E "decode" $R/infer_q7_nf4.txt | head -1
python3 bench/make_shape_model.py /tmp/p14 $T --shape 14b --sparse > $R/make_p14.txt 2>&1; tail -1 $R/make_p14.txt
for args in "--model /tmp/q7" "--model /tmp/q7 --quantize nf4" "--model /tmp/p14" "--model /tmp/p14 --quantize nf4" \
            "--model /tmp/p14 --quantize nf4 --grad-checkpoint"; do
  timeout 30 $B/lorastudio --batch $args --batch-size 1 --seq-len 512 --plan > $R/plan.txt 2>&1
  echo "plan $args rc=$?"; grep -E "total|system memory" $R/plan.txt | head -2
done
cd $P
timeout 230 python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro --compile reduce-overhead > $R/peer7_compiled.txt 2>&1
echo "peer 7B compiled rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer7_compiled.txt
left=$((575 - SECONDS)); [ $left -gt 60 ] && {
  timeout $left python3 torch_peft_bench.py --model /tmp/q05 --batch 1 --skip-micro --compile reduce-overhead > $R/peer05_compiled.txt 2>&1
  echo "peer 0.5B compiled rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer05_compiled.txt; }
cd - > /dev/null
tar czf $OUT/s18d.tar.gz -C $OUT r && rm -rf $R
