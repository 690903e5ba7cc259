#!/bin/bash
# Session 19, device call 1: split-K products summed in the cm2 kernel (the last slice of a tile adds them, no
# reduce pass), split scratch taken in turns (q, k and v need no barrier between them), the flash backward's
# dk/dv kernel computing delta itself (one stage with dq), LoRA's backward reordered with dx's adapter term in
# the cm2 product's epilogue. GPU tests; steps and inference against session 18's final bench (.gpu/carry/old),
# traces of the new steps.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s19a_sum_in_kernel.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in matmul_test attention_test training_test memory_plan_test quantized_model_test generator_golden_test arch_golden_test; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/$t.txt | head -6
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
run() {  # name, binary, env, args...
  local n=$1 bin=$2 e=$3; shift 3
  env $e timeout 100 $bin train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held|barriers|loss" $R/$n.txt | head -4
}
run b1_old $W/old/lorastudio-bench X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1 $B/lorastudio-bench X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
run b1_nosum $B/lorastudio-bench LORASTUDIO_CM2_SUM_IN_KERNEL=0 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1_2 $B/lorastudio-bench X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b8_old $W/old/lorastudio-bench X=1 --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b8 $B/lorastudio-bench X=1 --model /tmp/q05 --batch 8 --seq 512 --steps 5
run 7b_old $W/old/lorastudio-bench X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b $B/lorastudio-bench X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b.tsv
for m in q05 q7; do
  for v in old new; do
    bin=$B/lorastudio-bench; [ $v = old ] && bin=$W/old/lorastudio-bench
    timeout 100 $bin inference --model /tmp/$m > $R/infer_${m}_$v.txt 2>&1
    echo "inference $m $v rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer_${m}_$v.txt | head -2
  done
done
tar czf $OUT/s19a.tar.gz -C $OUT r && rm -rf $R
