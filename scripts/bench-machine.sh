# Sourced by the scripts that write a docs/bench/ file themselves (lease-sim.sh,
# counting-bench.sh): sets `machine` as scripts/perf-page.py names a machine, the CPU's
# model, how many, and whether a VM.
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
vm=""
grep -qw hypervisor /proc/cpuinfo && vm=" (VM)"
machine="$model, $(nproc) vCPUs$vm"
[ -n "$vm" ] || machine="$model, $(nproc) CPUs"
