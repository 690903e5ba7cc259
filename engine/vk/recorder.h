#pragma once
// Record once, replay many (docs/design.md). A Recorder writes dispatches into a command buffer and hands
// back a Program that can be submitted any number of times. The recorder knows which byte ranges each
// dispatch reads and writes, and puts a barrier before a dispatch only when it touches something an
// earlier, not yet fenced dispatch wrote (read-after-write, write-after-write) or reads
// (write-after-read). With profiling on, every dispatch is wrapped in timestamps and named by the
// innermost Label (or by its kernel).
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels.h"
#include "vk/device.h"
#include "vk/params_layout.h"

namespace ls::vk {

// A byte range of one allocation, as a dispatch binds it.
struct BufferRange {
  std::shared_ptr<const Allocation> alloc;
  VkDeviceSize offset = 0, size = 0;  // within the allocation
};

enum class Access { read, write, read_write };
struct Use {
  BufferRange range;
  Access access;
};

struct Groups {
  uint32_t x = 1, y = 1, z = 1;
};

// What the recorder decided for one dispatch; tests read it to check barrier placement.
struct PlanStep {
  std::string name;
  bool barrier_before = false;
};

// The hazard logic alone, free of Vulkan objects so it can be unit-tested.
class HazardTracker {
 public:
  struct Span {
    uint64_t memory;              // which VkDeviceMemory block
    uint64_t begin, end;          // bytes [begin, end) within the block
  };
  // True when a dispatch with these accesses must wait for the earlier ones; the tracker then forgets
  // the earlier accesses (the barrier orders all of them) and remembers this dispatch's.
  bool note(std::span<const Span> reads, std::span<const Span> writes);
  void reset();

 private:
  std::vector<Span> reads_, writes_;
};

struct Timing {
  std::string name;    // the innermost Label, else the kernel
  double ns = 0;
  std::string kernel;  // the kernel's name
};

class Program {
 public:
  Program() = default;
  ~Program();
  Program(Program&&) noexcept;
  Program& operator=(Program&&) noexcept;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // Submits the recorded commands and waits for them. Timings refer to the latest run.
  void run();
  const std::vector<PlanStep>& plan() const { return plan_; }
  size_t dispatch_count() const { return plan_.size(); }
  size_t barrier_count() const;
  bool profiled() const { return !query_pools_.empty(); }
  // One entry per dispatch, in order, GPU time from timestamps. Empty unless profiled.
  std::vector<Timing> timings() const;

 private:
  friend class Recorder;
  void destroy();
  Device* device_ = nullptr;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> descriptor_pools_;
  std::vector<VkQueryPool> query_pools_;
  std::vector<std::string> timing_names_, timing_kernels_;
  std::vector<std::shared_ptr<const Allocation>> keep_alive_;
  std::vector<PlanStep> plan_;
};

struct RecorderOptions {
  bool profile = false;  // timestamps around every dispatch
};

class Recorder {
 public:
  explicit Recorder(Device& device, RecorderOptions options = {});
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  Device& device() { return device_; }

  // Binding i of the kernel is uses[i]. Params is the kernel's push-constant block: each of the block's
  // scalars must be a member of Params at the same offset with the same type (vk/params_layout.h).
  template <class Params>
  void dispatch(Kernel kernel, std::initializer_list<Use> uses, const Params& params, Groups groups,
                const Spec& spec = {}) {
    static_assert(std::is_trivially_copyable_v<Params>);
    static_assert(sizeof(Params) <= kMaxPushBytes);
    check_params(kernel, sizeof(Params), params_scalars(params));
    dispatch_raw(kernel, {uses.begin(), uses.size()}, &params, sizeof(Params), groups, spec);
  }
  void dispatch_raw(Kernel kernel, std::span<const Use> uses, const void* push, size_t push_size, Groups groups,
                    const Spec& spec);
  // Throws ls::Error naming the kernel when the Params struct is not its block's size, or for the first of the
  // block's scalars the struct's members do not mirror.
  static void check_params(Kernel kernel, size_t size, std::span<const Scalar> members);

  // Profiling names: dispatches recorded while a Label lives are timed under its name.
  class Label {
   public:
    Label(Recorder& rec, std::string name) : rec_(rec) { rec_.labels_.push_back(std::move(name)); }
    ~Label() { rec_.labels_.pop_back(); }
    Label(const Label&) = delete;
    Label& operator=(const Label&) = delete;

   private:
    Recorder& rec_;
  };

  // Scratch memory for the dispatches of this recording: at least `bytes`, one buffer per slot reused
  // by every caller of that slot (the hazard tracker orders the reuse; the program keeps it alive).
  // Slots: kScratchSplitK for split-K partial sums, kScratchAttention + i for attention's score matrices,
  // kScratchDropout for the LoRA input after dropout, kScratchCm2A for an f32 operand converted to f16,
  // kScratchWeight for a quantized weight dequantized for a product (ops/quant.h).
  // kScratchSplitRing and the slot after it: split_scratch's small requests; kScratchDeferred and the two after
  // it: the partial sums of split products whose reduces a DeferScope holds back.
  static constexpr uint32_t kScratchSplitK = 0, kScratchAttention = 1, kScratchDropout = 4, kScratchCm2A = 5,
                            kScratchWeight = 6, kScratchSplitRing = 7, kScratchDeferred = 9, kDeferredSlots = 3,
                            kScratchSlots = 12;
  std::shared_ptr<Allocation> scratch(VkDeviceSize bytes, uint32_t slot = kScratchSplitK);
  // Split-K partial sums: requests of at most kSplitRingBytes take the two ring slots in turn, larger ones
  // kScratchSplitK, so that independent split products recorded one after another (q, k and v) do not share
  // scratch: one's slices then run beside the previous one's reduce, with no barrier between them (0.5B B1:
  // k's and v's 0.8 MB). Not q's 5.5 MB, nor gate's and up's dx (they would run side by side): two more slots
  // of that size took the 0.5B B1 step past 1.5 GiB held (session 19). train/step_scratch.cpp plans the same.
  static constexpr VkDeviceSize kSplitRingBytes = VkDeviceSize(1) << 20;
  static constexpr uint32_t kSplitRingSlots = 2;
  // Counters for a product whose K slices add up their partial sums themselves (ops/matmul.cpp cm2_dispatch: a tile's
  // last slice to finish adds them): `words` 32-bit words, zero when the dispatch starts and left zero by it. The
  // first request records a dispatch zeroing kCounterSlots slots of kCounterWords words, each run of the program
  // again; requests take the slots in turn, so that products recorded near each other never wait on each other
  // for them. At most kCounterWords words.
  static constexpr uint32_t kCounterSlots = 32, kCounterWords = 2048;
  BufferRange tile_counters(uint32_t words);

  // `deferred`: the product's reduce is to be held back (DeferScope); in a scope such requests take the
  // kScratchDeferred slots in order, a buffer each (new ones past the third), until the scope ends. Other requests
  // of at most kSplitRingBytes in a ScheduleScope take a buffer each too, in the scope's order (the next scope
  // reuses them in its order), not the ring: a shared slot chains products that depend on nothing of each other,
  // each waiting for the last one's reduce to read it (0.5B B1, session 41: LoRA's dA and dB products and q/k/v's
  // dx product, five stages a layer).
  std::shared_ptr<Allocation> split_scratch(VkDeviceSize bytes, bool deferred = false);

  // Deferred dispatches (ops/matmul.cpp: a split-K product's second pass, the reduce). While a DeferScope lives,
  // defer() keeps a dispatch to record when the outermost scope ends, after everything recorded in it, instead
  // of now: independent split products recorded one after another (q, k and v; gate's and up's dx) then run
  // their slices side by side in one stage and their reduces together after it, instead of a stage each. Their
  // partial sums take scratch of their own (split_scratch's `deferred`). A dispatch recorded in the scope that
  // touches what a deferred one writes, or writes what it reads, is a caller's mistake: it throws ls::Error.
  class DeferScope {
   public:
    explicit DeferScope(Recorder& rec);
    // Records the deferred dispatches when the outermost scope ends (not while an exception unwinds).
    ~DeferScope() noexcept(false);
    DeferScope(const DeferScope&) = delete;
    DeferScope& operator=(const DeferScope&) = delete;

   private:
    Recorder& rec_;
    int exceptions_;
    bool active_;  // LORASTUDIO_DEFER_REDUCES=0 turns scopes off, for measurement
  };
  bool deferring() const { return defer_depth_ > 0; }

  // Dispatches recorded while a ScheduleScope lives are kept, and recorded when the outermost scope ends in an
  // order of fewest stages: each at the earliest level after every earlier dispatch of the scope it conflicts
  // with (reads what it writes, writes what it reads or writes), the levels one after another, a level's
  // dispatches in the order they came. So a dispatch that depends on none of the chain before it (LoRA's
  // weight gradients, a split product's slices) joins the first stage it can, instead of adding barriers where
  // it was recorded. The order of conflicting dispatches is kept, so the program computes what it computed.
  // Ops record nothing but dispatches, so nothing else needs ordering. LORASTUDIO_SCHEDULE=0 turns the
  // scopes off (measurement).
  class ScheduleScope {
   public:
    explicit ScheduleScope(Recorder& rec);
    ~ScheduleScope() noexcept(false);
    ScheduleScope(const ScheduleScope&) = delete;
    ScheduleScope& operator=(const ScheduleScope&) = delete;

   private:
    Recorder& rec_;
    int exceptions_;
    bool active_;
  };
  template <class Params>
  void defer(Kernel kernel, std::vector<Use> uses, const Params& params, Groups groups, const Spec& spec = {}) {
    static_assert(std::is_trivially_copyable_v<Params>);
    static_assert(sizeof(Params) <= kMaxPushBytes);
    check_params(kernel, sizeof(Params), params_scalars(params));
    defer_raw(kernel, std::move(uses), &params, sizeof(Params), groups, spec);
  }

  // A copy of a byte range that the dispatches just recorded made (ops/matmul.cpp: an f32 activation
  // converted to f16 in the kScratchCm2A slot for the tensor cores), so that later products reading the
  // same range use it instead of converting again (q, k and v read one input, gate and up another). One
  // copy is remembered, under a caller's key for its layout; it is forgotten when a dispatch writes the
  // source range or the copy's allocation, and replaced by the next one remembered.
  void remember_copy(const BufferRange& source, uint64_t key, std::shared_ptr<Allocation> copy);
  // The remembered copy of exactly this source range under this key, or null.
  std::shared_ptr<Allocation> find_copy(const BufferRange& source, uint64_t key) const;

  // Ends recording. The Recorder is spent afterwards.
  Program finish();

 private:
  VkDescriptorSet allocate_set();
  void write_timestamp();

  Device& device_;
  RecorderOptions options_;
  Program program_;
  HazardTracker hazards_;
  std::vector<std::string> labels_;
  uint32_t sets_left_ = 0;
  uint32_t queries_used_ = 0;
  std::shared_ptr<const Allocation> dummy_;
  std::shared_ptr<Allocation> scratch_[kScratchSlots];
  uint32_t split_turn_ = 0;
  std::shared_ptr<Allocation> counters_;
  uint32_t counter_turn_ = 0;
  struct Deferred {
    Kernel kernel;
    std::vector<Use> uses;
    std::vector<unsigned char> push;
    Groups groups;
    Spec spec;
    std::string label;
  };
  void defer_raw(Kernel kernel, std::vector<Use> uses, const void* push, size_t push_size, Groups groups,
                 const Spec& spec);
  void check_against_deferred(const char* kernel, std::span<const HazardTracker::Span> reads,
                              std::span<const HazardTracker::Span> writes) const;
  void record_deferred();
  void record_scheduled();
  std::vector<Deferred> deferred_;
  // What a ScheduleScope holds: each dispatch with the spans it reads and writes.
  struct Scheduled {
    Deferred dispatch;
    std::vector<HazardTracker::Span> reads, writes;
  };
  std::vector<Scheduled> scheduled_;
  static void print_schedule(const std::vector<Scheduled>& held, const std::vector<uint32_t>& level,
                             const std::vector<size_t>& after);
  int schedule_depth_ = 0;
  bool emitting_ = false;  // record_scheduled is recording what the scope held
  std::vector<HazardTracker::Span> deferred_reads_, deferred_writes_;
  int defer_depth_ = 0;
  uint32_t deferred_splits_ = 0;  // deferred split-K scratch requests in the current scope
  uint32_t scheduled_splits_ = 0;  // split-K scratch requests in the current ScheduleScope
  std::vector<std::shared_ptr<Allocation>> scheduled_scratch_;
  struct RememberedCopy {
    HazardTracker::Span source{}, target{};
    uint64_t key = 0;
    std::shared_ptr<Allocation> copy;
  } copy_;
  bool finished_ = false;
};

}  // namespace ls::vk
