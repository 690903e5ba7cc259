#!/bin/bash
# Session 18, device call 1: the untied embedding table in system memory (model::embedding_in_host_memory) and
# logit chunks of 128 MiB (were 256), each against the same binary with the old behaviour
# (LORASTUDIO_EMBED_ON_GPU=1 LORASTUDIO_LOGIT_MIB=256): memory held and step time at 0.5B B1, B8 and 7B B1, 7B
# prefill and decode; GPU tests (architecture_forward_test: the phi3 and mistral tiny models are untied, so their
# tables now sit in system memory on the H100; memory_plan_test; training_test); a trace of every dispatch of
# one profiled step (--trace) at 0.5B B1 and 7B B1, to find the critical path.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s18a_memory_trace.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in architecture_forward_test memory_plan_test training_test; do
  timeout 150 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/$t.txt | head -8
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
OLD="LORASTUDIO_EMBED_ON_GPU=1 LORASTUDIO_LOGIT_MIB=256"
run() {  # name, env, args...
  local n=$1 e=$2; shift 2
  env $e timeout 100 $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -3
}
run b1_old "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1 X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
run b1_old2 "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1_2 X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b8_old "$OLD" --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b8 X=1 --model /tmp/q05 --batch 8 --seq 512 --steps 5 --trace $R/trace_b8.tsv
run 7b_old "$OLD" --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b.tsv
for e in "$OLD" X=1; do
  env $e timeout 100 $B/lorastudio-bench inference --model /tmp/q7 > $R/infer7_${e%%=*}.txt 2>&1
  echo "inference 7B ($e) rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer7_${e%%=*}.txt | head -3
done
tar czf $OUT/s18a.tar.gz -C $OUT r && rm -rf $R
