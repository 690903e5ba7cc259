# Reads a weight into the L2 cache beside a stage that leaves the memory bus idle (ops/prefetch.h).
ls_kernel(prefetch prefetch.comp)
