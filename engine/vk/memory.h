#pragma once
// Device memory: a sub-allocator over a few large vkAllocateMemory blocks. Each allocation gets its own
// VkBuffer bound inside a block, so a descriptor can bind any aligned range of it. Allocations larger
// than a block get a dedicated block. Freed ranges return to their block's free list (coalesced).
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "error.h"
#include "vk/vulkan.h"

namespace ls::vk {

class Memory;

// One buffer inside a memory block. Owned through shared_ptr by tensors; freed on destruction.
class Allocation {
 public:
  Allocation(Memory& memory, VkBuffer buffer, VkDeviceMemory block, uint32_t block_index, VkDeviceSize offset,
             VkDeviceSize size, void* mapped);
  ~Allocation();
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;

  VkBuffer buffer() const { return buffer_; }
  VkDeviceMemory block() const { return block_; }
  VkDeviceSize block_offset() const { return offset_; }  // where this buffer starts in its block
  VkDeviceSize size() const { return size_; }
  void* mapped() const { return mapped_; }  // non-null when the memory is host-visible and coherent

 private:
  Memory& memory_;
  VkBuffer buffer_;
  VkDeviceMemory block_;
  uint32_t block_index_;
  VkDeviceSize offset_, size_;
  void* mapped_;
};

struct MemoryStats {
  uint64_t blocks = 0, block_bytes = 0, used_bytes = 0, allocations = 0;
  // used_bytes splits into device-local storage (allocate) and host-visible staging (allocate_staging);
  // device_block_bytes: the part of block_bytes that holds device-local storage.
  uint64_t device_bytes = 0, staging_bytes = 0, device_block_bytes = 0;
  // The high-water marks of used_bytes and device_bytes since the Memory was made or reset_peak() was
  // called: what a program really needed, to hold against its memory plan (train/memory_plan.h).
  uint64_t peak_used_bytes = 0, peak_device_bytes = 0;
};

class Memory {
 public:
  // Shared blocks of 64 MiB: 256 held up to ~240 MiB of slack past what a program used (0.5B step on the H100,
  // session 17: 1.75 GiB held for 1.52 in use).
  static constexpr VkDeviceSize kBlockSize = 64ull << 20;
  static constexpr VkDeviceSize kAlignment = 256;  // >= every device's minStorageBufferOffsetAlignment

  Memory(VkDevice device, VkPhysicalDevice physical);
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  // Device-local storage (also a transfer source and destination). Never returns null: throws.
  std::shared_ptr<Allocation> allocate(VkDeviceSize size, const char* what);
  // Host-visible, coherent staging memory for uploads and downloads.
  std::shared_ptr<Allocation> allocate_staging(VkDeviceSize size);
  // Whether staging memory is system memory apart from the device's own (a discrete GPU): a tensor kept
  // there (Tensor::empty_host) takes none of the GPU's memory, and the GPU reads it over the bus.
  bool host_apart() const { return host_apart_; }
  MemoryStats stats() const;
  // Starts the high-water marks again from what is in use now.
  void reset_peak();
  // The bytes of a block an allocation of `size` takes (sizes rounded as allocate() rounds them, with the
  // buffer's own requirement taken as its size): what a memory plan counts for each tensor.
  static VkDeviceSize footprint(VkDeviceSize size);

 private:
  friend class Allocation;
  struct Range { VkDeviceSize offset, size; };
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    void* mapped = nullptr;
    bool staging = false;
    std::vector<Range> free;  // sorted by offset
  };
  std::shared_ptr<Allocation> allocate_in(bool staging, VkDeviceSize size, const char* what);
  void release(uint32_t block_index, VkDeviceSize offset, VkDeviceSize size);
  uint32_t new_block(bool staging, VkDeviceSize size, const char* what);
  Error out_of_memory(VkDeviceSize size, const char* what, VkResult r) const;

  VkDevice device_;
  uint32_t device_type_ = 0, staging_type_ = 0;
  uint64_t heap_bytes_ = 0;  // the device-local heap's size (for the out-of-memory message)
  bool device_mapped_ = false, host_apart_ = false;
  mutable std::mutex mutex_;
  std::vector<Block> blocks_;
  uint64_t used_ = 0, live_ = 0, staging_used_ = 0;
  uint64_t peak_used_ = 0, peak_device_ = 0;
};

}  // namespace ls::vk
