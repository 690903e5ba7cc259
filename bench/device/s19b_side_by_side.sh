#!/bin/bash
# Session 19, device call 2: the reduce pass kept (call 1: summing split-K slices in the kernel was slower), the
# flash backward's delta in a pass of its own (dq and dk/dv in one stage), gate's and up's dx products side by side
# (added by the norm's backward), the norm's backward leaving dx's f16 copy for the next product, split scratch in
# a ring of two slots up to 8 MiB. GPU tests; steps against session 18's bench (.gpu/carry/old); the split-K
# threshold (LORASTUDIO_CM2_SPLIT_BELOW, tiles) raised so that single products give each SM two workgroups or more.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s19b_side_by_side.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in matmul_test attention_test norms_test training_test memory_plan_test quantized_model_test generator_golden_test arch_golden_test; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/$t.txt | head -6
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
run() {  # name, binary, env, args...
  local n=$1 bin=$2 e=$3; shift 3
  env $e timeout 100 $bin train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2
}
run b1_old $W/old/lorastudio-bench X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1 $B/lorastudio-bench X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
run b1_s132 $B/lorastudio-bench LORASTUDIO_CM2_SPLIT_BELOW=132 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1_s264 $B/lorastudio-bench LORASTUDIO_CM2_SPLIT_BELOW=264 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b8_old $W/old/lorastudio-bench X=1 --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b8 $B/lorastudio-bench X=1 --model /tmp/q05 --batch 8 --seq 512 --steps 5
run 7b_old $W/old/lorastudio-bench X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b $B/lorastudio-bench X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b.tsv
run 7b_s132 $B/lorastudio-bench LORASTUDIO_CM2_SPLIT_BELOW=132 --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b_s132.tsv
run 7b_s264 $B/lorastudio-bench LORASTUDIO_CM2_SPLIT_BELOW=264 --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b_nf4 $B/lorastudio-bench X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize nf4
for m in q05 q7; do
  for v in old new s132; do
    bin=$B/lorastudio-bench; e=X=1; [ $v = old ] && bin=$W/old/lorastudio-bench; [ $v = s132 ] && e=LORASTUDIO_CM2_SPLIT_BELOW=132
    env $e timeout 100 $bin inference --model /tmp/$m > $R/infer_${m}_$v.txt 2>&1
    echo "inference $m $v rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer_${m}_$v.txt | head -2
  done
done
tar czf $OUT/s19b.tar.gz -C $OUT r && rm -rf $R
