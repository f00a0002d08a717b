#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

#include <atomic>
#include <string>
#include <vector>

namespace tsl::profiler {
namespace {

std::atomic<bool> enabled{false};
std::atomic<int64_t> pushes{0};

struct ThreadStack {
  std::string joined;
  std::vector<size_t> marks;  // joined.size() before each push
};

ThreadStack& Local() {
  thread_local ThreadStack stack;
  return stack;
}

}  // namespace

void AnnotationStack::PushAnnotation(std::string_view name) {
  ThreadStack& s = Local();
  s.marks.push_back(s.joined.size());
  if (!s.joined.empty()) s.joined += "::";
  s.joined.append(name.data(), name.size());
  pushes.fetch_add(1, std::memory_order_relaxed);
}

void AnnotationStack::PopAnnotation() {
  ThreadStack& s = Local();
  if (s.marks.empty()) return;
  s.joined.resize(s.marks.back());
  s.marks.pop_back();
}

const std::string& AnnotationStack::Get() { return Local().joined; }

void AnnotationStack::Enable(bool enable) { enabled.store(enable, std::memory_order_release); }

bool AnnotationStack::IsEnabled() { return enabled.load(std::memory_order_acquire); }

int64_t AnnotationStack::PushCount() { return pushes.load(std::memory_order_relaxed); }

}  // namespace tsl::profiler
