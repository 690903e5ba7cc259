#!/bin/bash
# Session 41, call 4: as call 3 (s41a_scoped_splits.sh), with only the small split requests (<= 1 MiB) of the layer
# backward's ScheduleScope in buffers of their own and LoRA's skinny products split to fit that (call 3's version
# held 1.52 GiB at 0.5B B1, past the issue's 1.5). The 0.5B B1 step old (session 40's bench, .gpu/carry/old) and new alternated, the new step's schedule
# (LORASTUDIO_SCHEDULE_WHY=1) and trace, memory_plan_test and training_test, then the 7B B1 step old and new.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s41b_scoped_small.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
unpack_old_bench
make_models
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 200 ]; do sleep 2; done
O=$W/old/lorastudio-bench
timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 3 > $R/warm.txt 2>&1
for i in 1 2 3; do
  env timeout 100 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 9 > $R/b1_new$i.txt 2>&1
  echo "b1 new $i rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/b1_new$i.txt | head -2
  env timeout 100 $O train --model /tmp/q05 --batch 1 --seq 512 --steps 9 > $R/b1_old$i.txt 2>&1
  echo "b1 old $i rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/b1_old$i.txt | head -2
done
LORASTUDIO_SCHEDULE_WHY=1 timeout 100 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 1 \
  --trace $R/trace_b1.tsv > $R/why.txt 2>&1
echo "why rc=$?"; grep -c "^schedule: #" $R/why.txt; grep "^schedule" $R/why.txt | sed -n '1,/dispatches/p' | tail -n +2 | head -60 | cut -c1-200
python3 bench/trace_summary.py $R/trace_b1.tsv 30 > $R/trace_b1_summary.txt 2>&1; head -12 $R/trace_b1_summary.txt
link_source_dir; gpu_tests memory_plan_test training_test
wait $MK
for b in $B/lorastudio-bench $O; do
  timeout 150 $b train --model /tmp/q7 --batch 1 --seq 512 --steps 5 > $R/b7_$(basename $(dirname $b)).txt 2>&1
  echo "7b $b rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/b7_$(basename $(dirname $b)).txt | head -2
done
tar czf $OUT/s41b.tar.gz -C $OUT r
