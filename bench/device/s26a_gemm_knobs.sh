#!/bin/bash
# Session 26, device call 1 (H200): the cooperative-matrix-2 GEMM's new measurement switches, one binary:
# the K loop's unroll (LORASTUDIO_CM2_UNROLL, specialization constant 1; was fixed at 8), the workgroup size
# (LORASTUDIO_CM2_THREADS, constant 0; was fixed per tile), and the 64×64 tile unsplit where split-K would split
# (on by default; LORASTUDIO_CM2_SPLIT_OR_S=0 keeps the split). Registers per pipeline (LORASTUDIO_PIPELINE_STATS=1),
# the training products (micro train16_*) under each, GEMM tests, then the steps under the most promising ones.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s26a_gemm_knobs.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests matmul_test
# micro with registers: name, filter, environment assignments...
micro_stats() {
  local n=$1 f=$2; shift 2
  env LORASTUDIO_PIPELINE_STATS=1 "$@" timeout 60 $B/lorastudio-bench micro --filter $f --iters 20 > $R/micro_$n.txt 2>&1
  echo "micro $n rc=$? at ${SECONDS}s: $(grep 'pipeline stats: gemm_cm2' $R/micro_$n.txt | grep -o 'Register Count=[0-9]*' | sort | uniq -c | paste -sd' ')"
  grep -E "^$f" $R/micro_$n.txt | cut -c1-33,78-112
}
micro_stats default train16_
micro_stats split LORASTUDIO_CM2_SPLIT_OR_S=0 train16_
for u in 1 2 4; do micro_stats u$u train16_ LORASTUDIO_CM2_UNROLL=$u; done
for t in t l m; do
  for u in 1 2; do micro_stats ${t}_u$u train16_7b LORASTUDIO_CM2_TILE=$t LORASTUDIO_CM2_UNROLL=$u; done
done
micro_stats m_th128_u2 train16_7b LORASTUDIO_CM2_TILE=m LORASTUDIO_CM2_THREADS=128 LORASTUDIO_CM2_UNROLL=2
micro_stats t_th512_u2 train16_7b LORASTUDIO_CM2_TILE=t LORASTUDIO_CM2_THREADS=512 LORASTUDIO_CM2_UNROLL=2
micro_stats h_th256 train16_5 LORASTUDIO_CM2_TILE=h LORASTUDIO_CM2_THREADS=256
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
train_env b1_split LORASTUDIO_CM2_SPLIT_OR_S=0 --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_new "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_u2 LORASTUDIO_CM2_UNROLL=2 --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_u4 LORASTUDIO_CM2_UNROLL=4 --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_split2 LORASTUDIO_CM2_SPLIT_OR_S=0 --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b8_split LORASTUDIO_CM2_SPLIT_OR_S=0 --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_new "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_u2 LORASTUDIO_CM2_UNROLL=2 --model /tmp/q05 --batch 8 --seq 512 --steps 5
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_split LORASTUDIO_CM2_SPLIT_OR_S=0 --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_u2 LORASTUDIO_CM2_UNROLL=2 --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_u4 LORASTUDIO_CM2_UNROLL=4 --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s26a.tar.gz -C $OUT r && rm -rf $R
