#include "vk/memory_budget.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "error.h"

namespace ls::vk {

namespace {

constexpr const char* kOverride = "LORASTUDIO_DEVICE_MEMORY_BUDGET";

}  // namespace

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  };
  text = trim(text);
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) ++digits;
  if (digits == 0) return std::nullopt;
  const std::string number(text.substr(0, digits));
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) return std::nullopt;
  std::string unit;
  for (char c : trim(text.substr(digits))) unit += char(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB")) unit.erase(unit.size() - 2, 1);  // KiB -> KB
  if (unit.size() == 2 && unit[1] == 'B') unit.pop_back();    // KB -> K
  if (unit == "B") unit.clear();
  const std::string_view units = "KMGT";
  double scale = 1;
  if (!unit.empty()) {
    const size_t power = units.find(unit);
    if (unit.size() != 1 || power == std::string_view::npos) return std::nullopt;
    scale = std::ldexp(1.0, 10 * int(power + 1));
  }
  const double bytes = value * scale;
  if (bytes >= 0x1p63) return std::nullopt;
  return uint64_t(std::llround(bytes));
}

MemoryBudget read_memory_budget(VkPhysicalDevice physical, bool has_budget_extension, uint64_t allocator_bytes) {
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 props{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                          .pNext = has_budget_extension ? &budget : nullptr};
  vkGetPhysicalDeviceMemoryProperties2(physical, &props);
  MemoryBudget b;
  uint64_t driver_budget = 0, driver_usage = 0;
  const VkPhysicalDeviceMemoryProperties& mem = props.memoryProperties;
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i) {
    if (!(mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) continue;
    b.heap_bytes += mem.memoryHeaps[i].size;
    driver_budget += budget.heapBudget[i];
    driver_usage += budget.heapUsage[i];
  }
  // A driver may leave the budget at 0 (the extension's structure unfilled): then the heaps it is.
  if (has_budget_extension && driver_budget > 0) {
    b.budget_bytes = std::min(driver_budget, b.heap_bytes);
    b.in_use_bytes = driver_usage;
    b.source = "VK_EXT_memory_budget";
  } else {
    b.budget_bytes = b.heap_bytes;
    b.in_use_bytes = allocator_bytes;
    b.source = "device-local heap size";
  }
  if (const char* env = std::getenv(kOverride); env && *env) {
    const auto bytes = parse_byte_size(env);
    if (!bytes)
      throw Error(std::string(kOverride) + "=\"" + env + "\" is not a size (bytes, or a number with K, M, G or T: \"6G\")");
    b.budget_bytes = *bytes;
    b.in_use_bytes = allocator_bytes;
    b.source = kOverride;
  }
  return b;
}

}  // namespace ls::vk
