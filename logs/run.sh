#!/bin/bash
cd /work/wt-hiding
echo "=== $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
nice -n 10 .venv/bin/python benchmarks/simulated_sensitivity.py --cores 1024 16384 --approaches hybrid-multiple --overheads-us --batch-syncs-us --unhidden 0 1 --driver /work/wt-sim7/build/smpi/cpp/tools/hybridfd-bench -o benchmarks/results/simulated_sensitivity_unhidden_bluegene_p.json
echo "=== $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg) END"
