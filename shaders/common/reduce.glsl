// Workgroup reductions for any subgroup size from 8 to 64 and workgroups up to 1024 threads.
// Every thread gets the result. Deterministic: subgroup partials are summed in a fixed order.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

shared float ls_reduce_scratch[128];

float workgroup_sum(float v) {
  v = subgroupAdd(v);
  barrier();  // the previous reduction's readers are done with the scratch
  if (subgroupElect()) ls_reduce_scratch[gl_SubgroupID] = v;
  barrier();
  float total = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) total += ls_reduce_scratch[i];
  return total;
}

float workgroup_max(float v) {
  v = subgroupMax(v);
  barrier();
  if (subgroupElect()) ls_reduce_scratch[gl_SubgroupID] = v;
  barrier();
  float m = ls_reduce_scratch[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) m = max(m, ls_reduce_scratch[i]);
  return m;
}
