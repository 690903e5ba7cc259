#include "vk/recorder.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <exception>
#include <optional>
#include <utility>

#include "error.h"
#include "vk/push_block.h"

namespace ls::vk {

namespace {
constexpr uint32_t kSetsPerPool = 256;
constexpr uint32_t kQueriesPerPool = 2048;

bool overlaps(const HazardTracker::Span& a, const HazardTracker::Span& b) {
  return a.memory == b.memory && a.begin < b.end && b.begin < a.end;
}
bool any_overlap(std::span<const HazardTracker::Span> xs, const std::vector<HazardTracker::Span>& ys) {
  for (const auto& x : xs)
    for (const auto& y : ys)
      if (overlaps(x, y)) return true;
  return false;
}
// Whether work reading `reads` and writing `writes` must stay ordered after work that read `then_reads` and wrote
// `then_writes` (read after write, write after write, write after read).
bool conflicts(std::span<const HazardTracker::Span> reads, std::span<const HazardTracker::Span> writes,
               const std::vector<HazardTracker::Span>& then_reads, const std::vector<HazardTracker::Span>& then_writes) {
  return any_overlap(reads, then_writes) || any_overlap(writes, then_writes) || any_overlap(writes, then_reads);
}
HazardTracker::Span span_of(const BufferRange& r) {
  return {reinterpret_cast<uint64_t>(r.alloc->block()), r.alloc->block_offset() + r.offset,
          r.alloc->block_offset() + r.offset + r.size};
}
}  // namespace

// [SECTION] HazardTracker

bool HazardTracker::note(std::span<const Span> reads, std::span<const Span> writes) {
  bool barrier = conflicts(reads, writes, reads_, writes_);
  if (barrier) reset();
  reads_.insert(reads_.end(), reads.begin(), reads.end());
  writes_.insert(writes_.end(), writes.begin(), writes.end());
  return barrier;
}

void HazardTracker::reset() {
  reads_.clear();
  writes_.clear();
}

// [SECTION] Program

Program::~Program() { destroy(); }

Program::Program(Program&& o) noexcept { *this = std::move(o); }

Program& Program::operator=(Program&& o) noexcept {
  if (this == &o) return *this;
  destroy();
  device_ = std::exchange(o.device_, nullptr);
  pool_ = std::exchange(o.pool_, VK_NULL_HANDLE);
  cb_ = std::exchange(o.cb_, VK_NULL_HANDLE);
  descriptor_pools_ = std::move(o.descriptor_pools_);
  query_pools_ = std::move(o.query_pools_);
  timing_names_ = std::move(o.timing_names_);
  timing_kernels_ = std::move(o.timing_kernels_);
  keep_alive_ = std::move(o.keep_alive_);
  plan_ = std::move(o.plan_);
  return *this;
}

void Program::destroy() {
  if (!device_) return;
  VkDevice dev = device_->handle();
  for (auto p : descriptor_pools_) vkDestroyDescriptorPool(dev, p, nullptr);
  for (auto q : query_pools_) vkDestroyQueryPool(dev, q, nullptr);
  if (pool_) vkDestroyCommandPool(dev, pool_, nullptr);
  descriptor_pools_.clear();
  query_pools_.clear();
  keep_alive_.clear();
  pool_ = VK_NULL_HANDLE;
  cb_ = VK_NULL_HANDLE;
  device_ = nullptr;
}

void Program::run() {
  if (!device_ || !cb_) throw Error("running an empty or unfinished program");
  device_->submit_and_wait(cb_);
}

size_t Program::barrier_count() const {
  return size_t(std::count_if(plan_.begin(), plan_.end(), [](const PlanStep& s) { return s.barrier_before; }));
}

std::vector<Timing> Program::timings() const {
  std::vector<Timing> out;
  if (query_pools_.empty()) return out;
  const double period = device_->report().timestamp_period_ns;
  const size_t total = timing_names_.size() * 2;
  std::vector<uint64_t> ticks(total);
  for (size_t pi = 0; pi * kQueriesPerPool < total; ++pi) {
    uint32_t n = uint32_t(std::min<size_t>(kQueriesPerPool, total - pi * kQueriesPerPool));
    check(vkGetQueryPoolResults(device_->handle(), query_pools_[pi], 0, n, n * sizeof(uint64_t),
                                ticks.data() + pi * kQueriesPerPool, sizeof(uint64_t),
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
  }
  for (size_t i = 0; i < timing_names_.size(); ++i)
    out.push_back({timing_names_[i], double(ticks[2 * i + 1] - ticks[2 * i]) * period, timing_kernels_[i]});
  return out;
}

// [SECTION] Recorder

Recorder::Recorder(Device& device, RecorderOptions options) : device_(device), options_(options) {
  if (options_.profile && !device.report().timestamps)
    throw Error("profiling asked for, but " + device.report().name + " has no compute timestamps");
  program_.device_ = &device;
  VkCommandPoolCreateInfo pinfo{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                .queueFamilyIndex = device.queue_family()};
  check(vkCreateCommandPool(device.handle(), &pinfo, nullptr, &program_.pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo ainfo{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .commandPool = program_.pool_, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  check(vkAllocateCommandBuffers(device.handle(), &ainfo, &program_.cb_), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo binfo{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check(vkBeginCommandBuffer(program_.cb_, &binfo), "vkBeginCommandBuffer");
  // Whatever ran or was copied before this program (an earlier replay, an upload) is visible to it.
  VkMemoryBarrier start{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
  vkCmdPipelineBarrier(program_.cb_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                       &start, 0, nullptr, 0, nullptr);
  dummy_ = device.memory().allocate(256, "dummy binding");
}

Recorder::~Recorder() = default;

VkDescriptorSet Recorder::allocate_set() {
  VkDevice dev = device_.handle();
  if (sets_left_ == 0) {
    VkDescriptorPoolSize size{.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = kSetsPerPool * kMaxBindings};
    VkDescriptorPoolCreateInfo info{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = kSetsPerPool,
                                    .poolSizeCount = 1, .pPoolSizes = &size};
    VkDescriptorPool pool = VK_NULL_HANDLE;
    check(vkCreateDescriptorPool(dev, &info, nullptr, &pool), "vkCreateDescriptorPool");
    program_.descriptor_pools_.push_back(pool);
    sets_left_ = kSetsPerPool;
  }
  VkDescriptorSetLayout layout = device_.pipelines().set_layout();
  VkDescriptorSetAllocateInfo ainfo{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                    .descriptorPool = program_.descriptor_pools_.back(), .descriptorSetCount = 1,
                                    .pSetLayouts = &layout};
  VkDescriptorSet set = VK_NULL_HANDLE;
  check(vkAllocateDescriptorSets(dev, &ainfo, &set), "vkAllocateDescriptorSets");
  --sets_left_;
  return set;
}

void Recorder::write_timestamp() {
  if (queries_used_ % kQueriesPerPool == 0 && queries_used_ / kQueriesPerPool == program_.query_pools_.size()) {
    VkQueryPoolCreateInfo info{.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP,
                               .queryCount = kQueriesPerPool};
    VkQueryPool pool = VK_NULL_HANDLE;
    check(vkCreateQueryPool(device_.handle(), &info, nullptr, &pool), "vkCreateQueryPool");
    program_.query_pools_.push_back(pool);
    vkCmdResetQueryPool(program_.cb_, pool, 0, kQueriesPerPool);  // re-armed on every replay
  }
  VkQueryPool pool = program_.query_pools_[queries_used_ / kQueriesPerPool];
  vkCmdWriteTimestamp(program_.cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, pool, queries_used_ % kQueriesPerPool);
  ++queries_used_;
}

void Recorder::remember_copy(const BufferRange& source, uint64_t key, std::shared_ptr<Allocation> copy) {
  const HazardTracker::Span target = span_of({.alloc = copy, .offset = 0, .size = copy->size()});
  copy_ = {.source = span_of(source), .target = target, .key = key, .copy = std::move(copy)};
}

std::shared_ptr<Allocation> Recorder::find_copy(const BufferRange& source, uint64_t key) const {
  if (!copy_.copy || !source.alloc || key != copy_.key) return nullptr;
  const HazardTracker::Span s = span_of(source);
  const HazardTracker::Span& c = copy_.source;
  return s.memory == c.memory && s.begin == c.begin && s.end == c.end ? copy_.copy : nullptr;
}

namespace {
// The op's Params struct must be the kernel's push-constant block, byte for byte in size.
void check_push_size(Kernel kernel, size_t size) {
  if (const uint32_t block = push_block(kernel).size; size != block)
    throw Error(std::string("dispatch ") + kernel_info(kernel).name + ": the op's Params struct is " + std::to_string(size) +
                " bytes, the kernel's push-constant block " + std::to_string(block) +
                " (they must match: see the GLSL block the struct mirrors)");
}
}  // namespace

void Recorder::check_params(Kernel kernel, size_t size, std::span<const Scalar> members) {
  check_push_size(kernel, size);
  for (const Scalar& want : push_block(kernel).scalars) {
    const auto got = std::find_if(members.begin(), members.end(), [&](const Scalar& m) { return m.offset == want.offset; });
    if (got != members.end() && got->kind == want.kind) continue;
    throw Error(std::string("dispatch ") + kernel_info(kernel).name + ": the kernel's push-constant block has a " +
                scalar_kind_name(want.kind) + " at byte " + std::to_string(want.offset) + ", the op's Params struct " +
                (got == members.end() ? "no member there" : std::string("a ") + scalar_kind_name(got->kind)) +
                " (see the GLSL block the struct mirrors)");
  }
}

void Recorder::dispatch_raw(Kernel kernel, std::span<const Use> uses, const void* push, size_t push_size,
                            Groups groups, const Spec& spec) {
  if (finished_) throw Error("dispatch on a finished recorder");
  const KernelInfo& info = kernel_info(kernel);
  const DeviceReport& rep = device_.report();
  if (uses.size() > kMaxBindings) throw Error(std::string("dispatch ") + info.name + ": too many bindings");
  if (push_size > kMaxPushBytes) throw Error(std::string("dispatch ") + info.name + ": push constants too large");
  check_push_size(kernel, push_size);
  if (groups.x == 0 || groups.y == 0 || groups.z == 0) return;  // nothing to do (an empty tensor)
  if (groups.x > 65535 || groups.y > 65535 || groups.z > 65535)
    throw Error(std::string("dispatch ") + info.name + ": " + std::to_string(groups.x) + "x" + std::to_string(groups.y) +
                "x" + std::to_string(groups.z) + " workgroups is past the 65535 per dimension every device allows");

  std::vector<HazardTracker::Span> reads, writes;
  VkDescriptorBufferInfo buffers[kMaxBindings];
  for (uint32_t i = 0; i < kMaxBindings; ++i) {
    if (i >= uses.size()) {
      buffers[i] = {.buffer = dummy_->buffer(), .offset = 0, .range = dummy_->size()};
      continue;
    }
    const BufferRange& r = uses[i].range;
    if (!r.alloc) throw Error(std::string("dispatch ") + info.name + ": binding " + std::to_string(i) + " is an empty tensor");
    if (r.size > rep.max_storage_range)
      throw Error(std::string("dispatch ") + info.name + ": binding " + std::to_string(i) + " spans " +
                  std::to_string(r.size) + " bytes, past this device's maxStorageBufferRange of " +
                  std::to_string(rep.max_storage_range) + " (the op must split it)");
    if (rep.storage_alignment && r.offset % rep.storage_alignment)
      throw Error(std::string("dispatch ") + info.name + ": binding " + std::to_string(i) + " starts at byte " +
                  std::to_string(r.offset) + ", not a multiple of minStorageBufferOffsetAlignment " +
                  std::to_string(rep.storage_alignment));
    buffers[i] = {.buffer = r.alloc->buffer(), .offset = r.offset, .range = std::max<VkDeviceSize>(r.size, 4)};
    const HazardTracker::Span span = span_of(r);
    if (uses[i].access != Access::write) reads.push_back(span);
    if (uses[i].access != Access::read) {
      writes.push_back(span);
      auto overlaps = [&](const HazardTracker::Span& c) {
        return span.memory == c.memory && span.begin < c.end && c.begin < span.end;
      };
      // (in program order: when a ScheduleScope's dispatches are recorded later, not again)
      if (!emitting_ && copy_.copy && (overlaps(copy_.source) || overlaps(copy_.target))) copy_ = {};
    }
    program_.keep_alive_.push_back(r.alloc);
  }

  if (schedule_depth_ > 0 && !emitting_) {  // held for the scope's end (ScheduleScope)
    if (!deferred_.empty()) check_against_deferred(info.name, reads, writes);
    const auto* bytes = static_cast<const unsigned char*>(push);
    scheduled_.push_back({{kernel, std::vector<Use>(uses.begin(), uses.end()),
                           std::vector<unsigned char>(bytes, bytes + push_size), groups, spec,
                           labels_.empty() ? std::string() : labels_.back()},
                          std::move(reads),
                          std::move(writes)});
    return;
  }
  VkPipeline pipeline = device_.pipelines().get(kernel, spec);
  VkDescriptorSet set = allocate_set();
  VkWriteDescriptorSet write{.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set, .dstBinding = 0,
                             .descriptorCount = kMaxBindings, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                             .pBufferInfo = buffers};
  vkUpdateDescriptorSets(device_.handle(), 1, &write, 0, nullptr);

  if (!deferred_.empty() && !emitting_) check_against_deferred(info.name, reads, writes);
  bool barrier = hazards_.note(reads, writes);
  VkCommandBuffer cb = program_.cb_;
  if (barrier) {
    VkMemoryBarrier mb{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                       .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT,
                       .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                         nullptr, 0, nullptr);
  }
  std::string name = labels_.empty() ? info.name : labels_.back();
  if (options_.profile) {
    program_.timing_names_.push_back(name);
    program_.timing_kernels_.push_back(info.name);
    write_timestamp();
  }
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, device_.pipelines().layout(), 0, 1, &set, 0, nullptr);
  if (push_size) vkCmdPushConstants(cb, device_.pipelines().layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, uint32_t(push_size), push);
  vkCmdDispatch(cb, groups.x, groups.y, groups.z);
  if (options_.profile) write_timestamp();
  program_.plan_.push_back({std::move(name), barrier});
}

std::shared_ptr<Allocation> Recorder::scratch(VkDeviceSize bytes, uint32_t slot) {
  if (slot >= kScratchSlots) throw Error("Recorder::scratch: no slot " + std::to_string(slot));
  // Grown to the largest request; an outgrown buffer stays alive with the dispatches that used it.
  auto& s = scratch_[slot];
  if (!s || s->size() < bytes) s = device_.memory().allocate(bytes, "scratch");
  return s;
}

std::shared_ptr<Allocation> Recorder::split_scratch(VkDeviceSize bytes, bool deferred) {
  if (deferred && defer_depth_ > 0) {  // a buffer of its own while the scope's reduces wait (DeferScope)
    const uint32_t n = deferred_splits_++;
    if (n < kDeferredSlots) return scratch(bytes, kScratchDeferred + n);
    return device_.memory().allocate(bytes, "scratch");
  }
  if (bytes > kSplitRingBytes) return scratch(bytes, kScratchSplitK);
  if (schedule_depth_ > 0) {  // a buffer of its own in the scope's order, reused by the next scope's
    const uint32_t n = scheduled_splits_++;
    if (n >= scheduled_scratch_.size()) scheduled_scratch_.resize(n + 1);
    auto& s = scheduled_scratch_[n];
    if (!s || s->size() < bytes) s = device_.memory().allocate(bytes, "scratch");
    return s;
  }
  return scratch(bytes, kScratchSplitRing + split_turn_++ % kSplitRingSlots);
}

BufferRange Recorder::tile_counters(uint32_t words) {
  if (words == 0 || words > kCounterWords)
    throw Error("Recorder::tile_counters: " + std::to_string(words) + " words asked, 1 to " +
                std::to_string(kCounterWords) + " a request");
  constexpr VkDeviceSize slot_bytes = VkDeviceSize(kCounterWords) * 4;
  if (!counters_) {
    counters_ = device_.memory().allocate(slot_bytes * kCounterSlots, "split-K tile counters");
    struct FillParams {  // = Params of shaders/optimizer.comp's FILL_ZERO
      uint32_t n;
    };
    constexpr uint32_t words_all = kCounterWords * kCounterSlots, threads = 256;
    dispatch(Kernel::fill_zero_u32, {Use{{counters_, 0, slot_bytes * kCounterSlots}, Access::write}},
             FillParams{words_all}, {(words_all + threads - 1) / threads, 1, 1}, {.local_x = threads});
  }
  const uint32_t slot = counter_turn_++ % kCounterSlots;
  return {counters_, slot * slot_bytes, VkDeviceSize(words) * 4};
}

namespace {
// LORASTUDIO_DEFER_REDUCES=0 records everything as it comes (the scopes do nothing), for measurement.
bool defer_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("LORASTUDIO_DEFER_REDUCES");
    return !(v && std::string_view(v) == "0");
  }();
  return on;
}
}  // namespace

Recorder::DeferScope::DeferScope(Recorder& rec)
    : rec_(rec), exceptions_(std::uncaught_exceptions()), active_(defer_enabled()) {
  if (active_ && rec_.defer_depth_++ == 0) rec_.deferred_splits_ = 0;
}

Recorder::DeferScope::~DeferScope() noexcept(false) {
  if (!active_ || --rec_.defer_depth_ > 0) return;
  if (std::uncaught_exceptions() != exceptions_) {  // unwinding: the recording is abandoned anyway
    rec_.deferred_.clear(), rec_.deferred_reads_.clear(), rec_.deferred_writes_.clear();
    return;
  }
  rec_.record_deferred();
}

void Recorder::defer_raw(Kernel kernel, std::vector<Use> uses, const void* push, size_t push_size, Groups groups,
                         const Spec& spec) {
  if (defer_depth_ == 0) throw Error(std::string("defer ") + kernel_info(kernel).name + ": no DeferScope is open");
  for (const Use& u : uses) {
    if (!u.range.alloc) throw Error(std::string("defer ") + kernel_info(kernel).name + ": an empty tensor bound");
    if (u.access != Access::write) deferred_reads_.push_back(span_of(u.range));
    if (u.access != Access::read) deferred_writes_.push_back(span_of(u.range));
  }
  const auto* bytes = static_cast<const unsigned char*>(push);
  deferred_.push_back({kernel, std::move(uses), std::vector<unsigned char>(bytes, bytes + push_size), groups, spec,
                       labels_.empty() ? std::string() : labels_.back()});
}

void Recorder::check_against_deferred(const char* kernel, std::span<const HazardTracker::Span> reads,
                                      std::span<const HazardTracker::Span> writes) const {
  if (conflicts(reads, writes, deferred_reads_, deferred_writes_))
    throw Error(std::string("dispatch ") + kernel + ": it touches what a deferred dispatch (" +
                kernel_info(deferred_.front().kernel).name +
                ", ...) writes or reads, inside the same Recorder::DeferScope; record it after the scope ends");
}

void Recorder::record_deferred() {
  std::vector<Deferred> pending = std::move(deferred_);
  deferred_.clear(), deferred_reads_.clear(), deferred_writes_.clear();
  for (const Deferred& d : pending) {
    std::optional<Label> label;
    if (!d.label.empty()) label.emplace(*this, d.label);
    dispatch_raw(d.kernel, d.uses, d.push.data(), d.push.size(), d.groups, d.spec);
  }
}

namespace {
// LORASTUDIO_SCHEDULE=0 records dispatches as they come (ScheduleScopes do nothing), for measurement.
bool schedule_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("LORASTUDIO_SCHEDULE");
    return !(v && std::string_view(v) == "0");
  }();
  return on;
}
}  // namespace

Recorder::ScheduleScope::ScheduleScope(Recorder& rec)
    : rec_(rec), exceptions_(std::uncaught_exceptions()), active_(schedule_enabled()) {
  if (active_ && rec_.schedule_depth_++ == 0) rec_.scheduled_splits_ = 0;
}

Recorder::ScheduleScope::~ScheduleScope() noexcept(false) {
  if (!active_ || --rec_.schedule_depth_ > 0) return;
  if (std::uncaught_exceptions() != exceptions_) {  // unwinding: the recording is abandoned anyway
    rec_.scheduled_.clear();
    return;
  }
  rec_.record_scheduled();
}

namespace {
// LORASTUDIO_SCHEDULE_WHY=1 prints, for each dispatch a ScheduleScope held, its stage and the earlier dispatch (and
// the bindings that overlap) that put it there: what to untangle when a chain is longer than its data needs.
bool schedule_why() {
  static const bool on = [] {
    const char* v = std::getenv("LORASTUDIO_SCHEDULE_WHY");
    return v && std::string_view(v) == "1";
  }();
  return on;
}
const char* access_name(Access a) { return a == Access::read ? "reads" : a == Access::write ? "writes" : "updates"; }
}  // namespace

void Recorder::print_schedule(const std::vector<Scheduled>& held, const std::vector<uint32_t>& level,
                              const std::vector<size_t>& after) {
  std::fprintf(stderr, "schedule: %zu dispatches\n", held.size());
  for (size_t i = 0; i < held.size(); ++i) {
    const Deferred& d = held[i].dispatch;
    std::fprintf(stderr, "schedule: #%zu stage %u %s [%s]", i, level[i], kernel_info(d.kernel).name,
                 d.label.c_str());
    if (after[i] != SIZE_MAX) {
      const Deferred& e = held[after[i]].dispatch;
      std::fprintf(stderr, " after #%zu %s:", after[i], kernel_info(e.kernel).name);
      for (size_t u = 0; u < d.uses.size(); ++u)
        for (size_t v = 0; v < e.uses.size(); ++v) {
          const Use &x = d.uses[u], &y = e.uses[v];
          if (!x.range.alloc || !y.range.alloc || (x.access == Access::read && y.access == Access::read)) continue;
          if (!overlaps(span_of(x.range), span_of(y.range))) continue;
          std::fprintf(stderr, " binding %zu %s what its binding %zu %s (%llu bytes at %llu);", u,
                       access_name(x.access), v, access_name(y.access), (unsigned long long)y.range.size,
                       (unsigned long long)(y.range.alloc->block_offset() + y.range.offset));
        }
    }
    std::fprintf(stderr, "\n");
  }
}

void Recorder::record_scheduled() {
  std::vector<Scheduled> held = std::move(scheduled_);
  scheduled_.clear();
  // level[i]: one past the highest level of an earlier dispatch that i conflicts with (0 without one).
  std::vector<uint32_t> level(held.size(), 0);
  std::vector<size_t> after(held.size(), SIZE_MAX);  // the earlier dispatch that set the level
  for (size_t i = 0; i < held.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      const Scheduled &a = held[i], &b = held[j];
      if (level[j] + 1 > level[i] && conflicts(a.reads, a.writes, b.reads, b.writes)) {
        level[i] = level[j] + 1;
        after[i] = j;
      }
    }
  if (schedule_why()) print_schedule(held, level, after);
  std::vector<size_t> order(held.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return level[x] < level[y]; });
  emitting_ = true;
  try {
    for (size_t i : order) {
      const Deferred& d = held[i].dispatch;
      std::optional<Label> label;
      if (!d.label.empty()) label.emplace(*this, d.label);
      dispatch_raw(d.kernel, d.uses, d.push.data(), d.push.size(), d.groups, d.spec);
    }
  } catch (...) {
    emitting_ = false;
    throw;
  }
  emitting_ = false;
}

Program Recorder::finish() {
  if (defer_depth_ > 0) throw Error("finish() inside a Recorder::DeferScope");
  if (schedule_depth_ > 0) throw Error("finish() inside a Recorder::ScheduleScope");
  if (finished_) throw Error("finish() called twice on a recorder");
  finished_ = true;
  VkCommandBuffer cb = program_.cb_;
  // Results are visible to the host and to transfers once the program's fence signals.
  VkMemoryBarrier end{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                      .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       0, 1, &end, 0, nullptr, 0, nullptr);
  check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  program_.keep_alive_.push_back(dummy_);
  return std::move(program_);
}

}  // namespace ls::vk
