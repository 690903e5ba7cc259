#include "vk/memory.h"

#include <algorithm>

#include "error.h"

namespace ls::vk {

namespace {

constexpr VkBufferUsageFlags kUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT;

VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }

// The block made for an allocation that fits no free range: a shared block of kBlockSize, or for an
// allocation over a quarter of that a block of its own size (in 2 MiB steps). (With 256 MiB blocks and no
// blocks of their own, two 7B MLP weights (129.5 MiB each) did not fit one block, so each took a block and left
// 126.5 MiB of it to smaller tensors: the 7B step held 23.5 GiB on the H100 for a plan of 17.75.)
VkDeviceSize block_size_for(VkDeviceSize need) {
  return need > Memory::kBlockSize / 4 ? align_up(need, 2ull << 20) : Memory::kBlockSize;
}

uint32_t find_type(const VkPhysicalDeviceMemoryProperties& mem, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid,
                   bool* found) {
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    auto f = mem.memoryTypes[i].propertyFlags;
    if ((f & want) == want && !(f & avoid)) { *found = true; return i; }
  }
  *found = false;
  return 0;
}

}  // namespace

Allocation::Allocation(Memory& memory, VkBuffer buffer, VkDeviceMemory block, uint32_t block_index,
                       VkDeviceSize offset, VkDeviceSize size, void* mapped)
    : memory_(memory), buffer_(buffer), block_(block), block_index_(block_index), offset_(offset), size_(size),
      mapped_(mapped) {}

Allocation::~Allocation() {
  vkDestroyBuffer(memory_.device_, buffer_, nullptr);
  memory_.release(block_index_, offset_, size_);
}

Memory::Memory(VkDevice device, VkPhysicalDevice physical) : device_(device) {
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(physical, &mem);
  bool ok = false;
  // Device-local memory; on unified-memory devices (lavapipe, integrated GPUs) it is also host-visible
  // and then transfers are plain memcpy.
  const auto coherent = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  device_type_ = find_type(mem, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | coherent, 0, &ok);
  if (ok) {
    device_mapped_ = true;
    // A discrete GPU's small host-visible device-local heap (BAR) is not where weights should go.
    VkDeviceSize heap = mem.memoryHeaps[mem.memoryTypes[device_type_].heapIndex].size;
    bool plain_local = false;
    uint32_t plain = find_type(mem, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, &plain_local);
    if (plain_local && mem.memoryHeaps[mem.memoryTypes[plain].heapIndex].size > heap) {
      device_type_ = plain;
      device_mapped_ = false;
    }
  } else {
    device_type_ = find_type(mem, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &ok);
    if (!ok) device_type_ = find_type(mem, 0, 0, &ok);
  }
  heap_bytes_ = mem.memoryHeaps[mem.memoryTypes[device_type_].heapIndex].size;
  staging_type_ = find_type(mem, coherent | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0, &ok);
  if (!ok) staging_type_ = find_type(mem, coherent, 0, &ok);
  if (!ok) throw Error("vulkan memory: the device has no host-visible coherent memory type");
  // A discrete GPU: staging lives in a heap of system memory (the device's own may still be host-mapped,
  // as the H100's is through its full-size BAR).
  const uint32_t staging_heap = mem.memoryTypes[staging_type_].heapIndex;
  host_apart_ = staging_heap != mem.memoryTypes[device_type_].heapIndex &&
                !(mem.memoryHeaps[staging_heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT);
}

Memory::~Memory() {
  for (auto& b : blocks_)
    if (b.memory) vkFreeMemory(device_, b.memory, nullptr);
}

std::shared_ptr<Allocation> Memory::allocate(VkDeviceSize size, const char* what) {
  return allocate_in(false, size, what);
}

std::shared_ptr<Allocation> Memory::allocate_staging(VkDeviceSize size) { return allocate_in(true, size, "staging"); }

// What a user needs to act: how much was asked and for what, how much lorastudio already holds of what the
// device has, and where the plan of a run (what it needs, what to change) is shown. Call with mutex_ held.
Error Memory::out_of_memory(VkDeviceSize size, const char* what, VkResult r) const {
  uint64_t held = 0;
  for (const Block& b : blocks_) held += b.memory ? b.size : 0;
  return Error(std::string("out of GPU memory allocating ") + std::to_string((size + (1 << 20) - 1) >> 20) + " MiB for " +
               what + " (" + result_name(r) + "): lorastudio holds " + std::to_string(held >> 20) + " MiB of the device's " +
               std::to_string(heap_bytes_ >> 20) +
               " MiB; `lorastudio --batch ... --plan` shows what a run needs and what to change (--quantize nf4, "
               "--grad-checkpoint, a smaller --batch-size, --seq-len or --rank)");
}

uint32_t Memory::new_block(bool staging, VkDeviceSize size, const char* what) {
  VkMemoryAllocateInfo info{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                            .allocationSize = size,
                            .memoryTypeIndex = staging ? staging_type_ : device_type_};
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkResult r = vkAllocateMemory(device_, &info, nullptr, &memory);
  if (r != VK_SUCCESS) throw out_of_memory(size, what, r);
  Block b{.memory = memory, .size = size, .staging = staging, .free = {{0, size}}};
  if (staging || device_mapped_) check(vkMapMemory(device_, memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
  for (uint32_t i = 0; i < blocks_.size(); ++i)
    if (!blocks_[i].memory) { blocks_[i] = b; return i; }
  blocks_.push_back(b);
  return uint32_t(blocks_.size() - 1);
}

std::shared_ptr<Allocation> Memory::allocate_in(bool staging, VkDeviceSize size, const char* what) {
  size = align_up(std::max<VkDeviceSize>(size, 1), 16);  // descriptors bind at least 4 bytes
  VkBufferCreateInfo binfo{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size, .usage = kUsage,
                           .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VkBuffer buffer = VK_NULL_HANDLE;
  if (const VkResult r = vkCreateBuffer(device_, &binfo, nullptr, &buffer); r != VK_SUCCESS) {
    if (r != VK_ERROR_OUT_OF_DEVICE_MEMORY && r != VK_ERROR_OUT_OF_HOST_MEMORY) check(r, "vkCreateBuffer");
    std::lock_guard lock(mutex_);
    throw out_of_memory(size, what, r);
  }
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, buffer, &req);
  VkDeviceSize align = std::max<VkDeviceSize>(req.alignment, kAlignment);
  VkDeviceSize need = align_up(req.size, kAlignment);

  std::lock_guard lock(mutex_);
  try {
    for (int pass = 0; pass < 2; ++pass) {
      for (uint32_t bi = 0; bi < blocks_.size(); ++bi) {
        Block& b = blocks_[bi];
        if (!b.memory || b.staging != staging || !(req.memoryTypeBits & (1u << (staging ? staging_type_ : device_type_))))
          continue;
        for (size_t fi = 0; fi < b.free.size(); ++fi) {
          Range& f = b.free[fi];
          VkDeviceSize start = align_up(f.offset, align);
          if (start + need > f.offset + f.size) continue;
          // Carve [start, start+need) out of f, keeping what is left on both sides.
          Range before{f.offset, start - f.offset}, after{start + need, f.offset + f.size - start - need};
          b.free.erase(b.free.begin() + long(fi));
          if (after.size) b.free.insert(b.free.begin() + long(fi), after);
          if (before.size) b.free.insert(b.free.begin() + long(fi), before);
          check(vkBindBufferMemory(device_, buffer, b.memory, start), "vkBindBufferMemory");
          used_ += need;
          if (staging) staging_used_ += need;
          peak_used_ = std::max(peak_used_, used_);
          peak_device_ = std::max(peak_device_, used_ - staging_used_);
          ++live_;
          void* mapped = b.mapped ? static_cast<char*>(b.mapped) + start : nullptr;
          return std::make_shared<Allocation>(*this, buffer, b.memory, bi, start, need, mapped);
        }
      }
      if (pass == 0) new_block(staging, block_size_for(need), what);
    }
  } catch (...) {
    vkDestroyBuffer(device_, buffer, nullptr);
    throw;
  }
  vkDestroyBuffer(device_, buffer, nullptr);
  throw Error(std::string("vulkan memory: could not place ") + what);
}

void Memory::release(uint32_t block_index, VkDeviceSize offset, VkDeviceSize size) {
  std::lock_guard lock(mutex_);
  Block& b = blocks_[block_index];
  auto it = std::lower_bound(b.free.begin(), b.free.end(), offset,
                             [](const Range& r, VkDeviceSize o) { return r.offset < o; });
  it = b.free.insert(it, Range{offset, size});
  // Coalesce with the next and the previous free range.
  if (it + 1 != b.free.end() && it->offset + it->size == (it + 1)->offset) {
    it->size += (it + 1)->size;
    b.free.erase(it + 1);
  }
  if (it != b.free.begin() && (it - 1)->offset + (it - 1)->size == it->offset) {
    (it - 1)->size += it->size;
    b.free.erase(it);
  }
  used_ -= size;
  if (b.staging) staging_used_ -= size;
  --live_;
  // Give a block that is entirely free back to the driver, keeping one of each kind warm.
  if (b.free.size() == 1 && b.free[0].size == b.size) {
    size_t same = 0;
    for (const auto& o : blocks_) same += o.memory && o.staging == b.staging;
    if (same > 1) {
      vkFreeMemory(device_, b.memory, nullptr);
      b = Block{};
    }
  }
}

MemoryStats Memory::stats() const {
  std::lock_guard lock(mutex_);
  MemoryStats s;
  for (const auto& b : blocks_)
    if (b.memory) {
      ++s.blocks;
      s.block_bytes += b.size;
      if (!b.staging) s.device_block_bytes += b.size;
    }
  s.used_bytes = used_;
  s.allocations = live_;
  s.device_bytes = used_ - staging_used_;
  s.staging_bytes = staging_used_;
  s.peak_used_bytes = peak_used_;
  s.peak_device_bytes = peak_device_;
  return s;
}

void Memory::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_used_ = used_;
  peak_device_ = used_ - staging_used_;
}

VkDeviceSize Memory::footprint(VkDeviceSize size) {
  return align_up(align_up(std::max<VkDeviceSize>(size, 1), 16), kAlignment);
}

}  // namespace ls::vk
