// Bundled host compatibility layer: XLA's AnnotationStack without absl. See the header.
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace tsl::profiler {
namespace {

// Low 48 bits: per-thread range counter. Bits 48..62: 15-bit thread id. Bit 63: clear.
constexpr uint64_t kRangeIdMask = (uint64_t{1} << 48) - 1;
constexpr uint64_t kTidMask = ~kRangeIdMask;
// Ids of threads beyond the 15-bit space: top bits 0b10, low 62 bits from a shared counter.
constexpr uint64_t kSharedRangeIdMask = (uint64_t{1} << 62) - 1;
constexpr uint64_t kSharedTid = uint64_t{2} << 62;
// Top bits 0b11: the thread has not pushed yet (no thread id assigned).
constexpr uint64_t kUninitializedTid = uint64_t{3} << 62;

// Thread ids 1 .. 2^15 - 1 are handed out; reaching kTidLimit means the space is exhausted.
constexpr int kTidLimit = 1 << 15;

// Next thread id to hand out. Starts at 1 (0 is never used, as in XLA).
std::atomic<int> next_free_thread_id{1};

// Shared range counter for threads that got no thread id of their own.
std::atomic<uint64_t> global_shared_range_id{0};

std::atomic<bool> warned_shared_tid{false};

inline bool IsIdWithNormalTid(uint64_t id) { return (id >> 63) == 0; }
inline bool IsUninitializedId(uint64_t id) { return id >= kUninitializedTid; }

// Called once per thread, on its first push: allocates the thread id part of its range ids.
uint64_t InitializeUniqueId() {
  int tid = next_free_thread_id.load(std::memory_order_relaxed);
  while (tid < kTidLimit &&
         !next_free_thread_id.compare_exchange_weak(tid, tid + 1, std::memory_order_release,
                                                    std::memory_order_relaxed)) {
  }
  if (tid >= kTidLimit) {
    if (!warned_shared_tid.exchange(true, std::memory_order_relaxed)) {
      std::fprintf(stderr,
                   "AnnotationStack: more than %d threads pushed annotations; further "
                   "threads share one scope range id counter (slower).\n",
                   kTidLimit - 1);
    }
    return kSharedTid;
  }
  return static_cast<uint64_t>(tid) << 48;
}

// The range id that follows `id` (the calling thread's last id) on the calling thread.
uint64_t NextUniqueId(uint64_t id) {
  if (IsUninitializedId(id)) id = InitializeUniqueId();
  if (IsIdWithNormalTid(id)) return ((id + 1) & kRangeIdMask) | (id & kTidMask);
  return (global_shared_range_id.fetch_add(1, std::memory_order_release) & kSharedRangeIdMask) |
         kSharedTid;
}

struct ThreadAnnotationData {
  int generation = 0;
  std::vector<size_t> stack;  // string length before each push
  std::string string;         // names joined with "::"
  std::vector<int64_t> scope_range_id_stack;
  uint64_t scope_id_last = kUninitializedTid;  // survives generation changes
};

// The calling thread's data, wiped (except scope_id_last) if the generation has moved.
ThreadAnnotationData& GetAnnotationData(const std::atomic<int>& generation_atomic) {
  static thread_local ThreadAnnotationData data;
  int generation = generation_atomic.load(std::memory_order_acquire);
  if (generation != data.generation) {
    data.generation = generation;
    data.stack.clear();
    data.string.clear();
    data.scope_range_id_stack.clear();
  }
  return data;
}

}  // namespace

// Must be lock-free: ScopedAnnotation reads it on every push/pop.
std::atomic<int> AnnotationStack::generation_{0};
static_assert(ATOMIC_INT_LOCK_FREE == 2, "AnnotationStack assumes a lock-free atomic<int>");

void AnnotationStack::PushAnnotation(std::string_view name) {
  ThreadAnnotationData& data = GetAnnotationData(generation_);
  data.stack.push_back(data.string.size());
  if (data.string.empty()) {
    data.string.assign(name.data(), name.size());
  } else {
    data.string.reserve(data.string.size() + 2 + name.size());
    data.string.append("::", 2);
    data.string.append(name.data(), name.size());
  }
  data.scope_id_last = NextUniqueId(data.scope_id_last);
  data.scope_range_id_stack.push_back(static_cast<int64_t>(data.scope_id_last));
}

void AnnotationStack::PopAnnotation() {
  ThreadAnnotationData& data = GetAnnotationData(generation_);
  if (data.stack.empty()) {
    data.string.clear();
    data.scope_range_id_stack.clear();
    return;
  }
  data.string.resize(data.stack.back());
  data.stack.pop_back();
  data.scope_range_id_stack.pop_back();
}

const std::string& AnnotationStack::Get() { return GetAnnotationData(generation_).string; }

ScopeRangeIdSpan AnnotationStack::GetScopeRangeIds() {
  const std::vector<int64_t>& ids = GetAnnotationData(generation_).scope_range_id_stack;
  return ScopeRangeIdSpan(ids.data(), ids.size());
}

void AnnotationStack::Enable(bool enable) {
  int generation = generation_.load(std::memory_order_relaxed);
  for (;;) {
    // Move the counter only on an actual state change.
    if (static_cast<bool>(generation & 1) == enable) return;
    // Enabling: set the low bit. Disabling: advance to the next even value. Unsigned
    // arithmetic so that wrap-around after 2^31 toggles is well defined.
    const unsigned g = static_cast<unsigned>(generation);
    const int next = static_cast<int>(enable ? (g | 1u) : ((g + 1u) & ~1u));
    if (generation_.compare_exchange_weak(generation, next, std::memory_order_release,
                                          std::memory_order_relaxed)) {
      return;
    }
  }
}

namespace annotation_stack_internal {

int SetNextThreadIdForTest(int next_thread_id) {
  next_thread_id = std::clamp(next_thread_id, 1, kTidLimit);
  return next_free_thread_id.exchange(next_thread_id, std::memory_order_acq_rel);
}

}  // namespace annotation_stack_internal

}  // namespace tsl::profiler
