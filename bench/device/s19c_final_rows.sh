#!/bin/bash
# Session 19, device call 3: the final build (call 2's changes, the split ring down to 1 MiB so that the 0.5B B1
# step stays within 1.5 GiB, the grad-checkpoint forward in the scratch plan's walk, the attention's residual add in
# the next norm's pass). GPU tests; steps beside session 18's bench (.gpu/carry/old); the compiled peer at 0.5B B1 in
# the same call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s19c_final_rows.sh
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
run() {  # name, binary, args...
  local n=$1 bin=$2; shift 2
  timeout 100 $bin train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2
}
run b1_old $W/old/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1 $B/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
run b1_2 $B/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b8_old $W/old/lorastudio-bench --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b8 $B/lorastudio-bench --model /tmp/q05 --batch 8 --seq 512 --steps 5
run 7b_old $W/old/lorastudio-bench --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b $B/lorastudio-bench --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b.tsv
run 7b_nf4 $B/lorastudio-bench --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize nf4
run 7b_nf4_ckpt $B/lorastudio-bench --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize nf4 --grad-checkpoint
for m in q05 q7; do
  timeout 100 $B/lorastudio-bench inference --model /tmp/$m > $R/infer_$m.txt 2>&1
  echo "inference $m rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer_$m.txt | head -2
done
cd $P
left=$((585 - SECONDS)); [ $left -gt 60 ] && {
  timeout $left python3 torch_peft_bench.py --model /tmp/q05 --batch 1 --skip-micro --compile reduce-overhead > $R/peer05_compiled.txt 2>&1
  echo "peer 0.5B compiled rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer05_compiled.txt; }
cd - > /dev/null
tar czf $OUT/s19c.tar.gz -C $OUT r && rm -rf $R
