// xla_style_host: a tiny host that drives the tsl::profiler range-annotation interface the way
// XLA's GPU runtime does, then prints what the linked backend did with it.
//
// What it mirrors from XLA:
//   * The GPU tracer enables AnnotationStack when a profiling session starts, so host-side
//     annotations are collected even before any device profiler attaches.
//   * Executor threads name themselves (NameCurrentThread -> roctxNameOsThread).
//   * Each execution opens nested ScopedAnnotations: the HLO module, then the thunk (with
//     XProf's "#key=value,...#" metadata in the name), then the kernel.
//   * Kernel titles are interned once up front with RegisterString, and the kernel range is
//     opened with the templated RangePush(domain, handle, payload) when range emission is on
//     (DefaultProfilerDomain() != nullptr), exactly like XLA's ModuleAnnotation/KernelAnnotation.
//   * Hosts without a C++ scope (Python/JAX TraceAnnotation) use roctx_utils::Annotation and
//     stop it explicitly; the example does that too, with the Rust implementation.
//
// Inside the innermost scope every thread reads AnnotationStack::Get(): that string is what a
// host profiler (XProf's CPU tracer) would attribute work to, so it shows whether the backend
// mirrored the ranges into AnnotationStack. Threads write into their own report slot and main
// prints the reports after join, in thread order, so the output does not depend on scheduling.
//
// Runs on any Linux machine: no ROCm needed. With the Rust backend and no roctx library
// installed, ranges still reach AnnotationStack and the diagnostics say "no roctx library".
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

#ifdef ROCTX_UTILS_HAVE_RUST_IMPL
// Only the Rust implementation defines roctx_utils' own C surface; the stub does not.
#include "roctx_utils/roctx_utils.h"
#endif

namespace {

using tsl::profiler::AnnotationStack;
using tsl::profiler::ProfilerDomainHandle;
using tsl::profiler::StringHandle;

// The payload XLA passes next to a kernel range (an NVTX extended payload on CUDA). The ROCm
// backend drops it, but the templated RangePush needs NvtxSchemaId() to compile, so a host
// written for CUDA keeps passing it unchanged.
struct KernelPayload {
  const char* hlo_op;
  int64_t unique_hlo_op_id;
  // 0 = "no registered schema", which is also what RegisterSchema returns on ROCm.
  uint64_t NvtxSchemaId() const { return 0; }
};

// One executor thread's work: which thunk of the module it runs, and its kernel's title.
struct WorkItem {
  const char* thread_name;
  const char* hlo_op;
  int64_t unique_hlo_op_id;
  const char* kernel_title;
};

constexpr char kModuleName[] = "jit_train_step";

constexpr WorkItem kWork[] = {
    {"xla_gpu_exec_0", "fusion.3", 7, "loop_fusion_3_kernel"},
    {"xla_gpu_exec_1", "custom-call.1", 12, "gemm_custom_call_1"},
    {"xla_gpu_exec_2", "all-reduce.5", 21, "all_reduce_5_kernel"},
};
constexpr int kThreads = sizeof(kWork) / sizeof(kWork[0]);

// The thunk annotation, in the "Name:#key=value,...#" form that XProf parses into metadata.
std::string ThunkAnnotation(const WorkItem& work) {
  return "Thunk:#hlo_op=" + std::string(work.hlo_op) +
         ",unique_hlo_op_id=" + std::to_string(work.unique_hlo_op_id) + "#";
}

// "<annotation>" (depth N): the thread's joined AnnotationStack and how many scopes are open.
std::string StackSnapshot() {
  std::ostringstream out;
  out << '"' << AnnotationStack::Get() << "\" (depth " << AnnotationStack::GetScopeRangeIds().size()
      << ')';
  return out.str();
}

// One executor thread. Returns its report; never touches stdout, so the reports can be
// printed in a fixed order after join.
std::string RunExecutor(int thread_index, StringHandle kernel_title) {
  const WorkItem& work = kWork[thread_index];
  std::ostringstream report;

  // As XLA's executor threads do, so roctx-aware tools show a name instead of a tid.
  tsl::profiler::NameCurrentThread(work.thread_name);

  // Read once per range like ScopedAnnotation does; the contract makes it stable for the
  // process, so push and pop always agree.
  const ProfilerDomainHandle domain = tsl::profiler::DefaultProfilerDomain();
  report << "thread " << thread_index << " [" << work.thread_name << "]  domain="
         << (domain != nullptr ? "non-null (range emission on)" : "null (range emission off)")
         << '\n';

  {
    // Module scope: a plain string, as XLA's top-level module annotation.
    tsl::profiler::ScopedAnnotation module_scope(kModuleName);
    // Thunk scope: a generator, so the name is only built when somebody listens.
    tsl::profiler::ScopedAnnotation thunk_scope([&] { return ThunkAnnotation(work); });

    // Kernel range. With emission on, XLA uses the pre-registered title plus a payload (no
    // string building on the hot path); the ROCm backend then pushes roctx and mirrors the
    // title into AnnotationStack itself. With emission off, the plain ScopedAnnotation path
    // keeps the host profiler's view identical.
    const KernelPayload payload{work.hlo_op, work.unique_hlo_op_id};
    std::optional<tsl::profiler::ScopedAnnotation> kernel_scope;
    if (domain != nullptr) {
      tsl::profiler::RangePush(domain, kernel_title, payload);
    } else {
      kernel_scope.emplace(work.kernel_title);
    }

#ifdef ROCTX_UTILS_HAVE_RUST_IMPL
    {
      // A host without C++ scopes (e.g. JAX's TraceAnnotation via ctypes): explicit Stop(),
      // and the destructor at the end of this block must not pop a second time.
      roctx_utils::Annotation host_callback("host_callback");
      report << "  innermost AnnotationStack:  " << StackSnapshot() << '\n';
      host_callback.Stop();
      report << "  after Annotation::Stop():   " << StackSnapshot() << '\n';
    }
    report << "  after Annotation destroyed: " << StackSnapshot() << '\n';
#else
    report << "  innermost AnnotationStack:  " << StackSnapshot() << '\n';
#endif

    // Close the kernel range the same way it was opened (the domain cannot change between).
    if (domain != nullptr) {
      tsl::profiler::RangePop(domain);
    } else {
      kernel_scope.reset();
    }
  }  // thunk_scope, then module_scope pop here.

  // Balanced pushes and pops leave the thread's stack empty.
  report << "  after all scopes closed:    " << StackSnapshot() << '\n';
  return report.str();
}

#ifdef ROCTX_UTILS_HAVE_RUST_IMPL
const char* RoctxStateName(roctx_utils_roctx_state state) {
  switch (state) {
    case ROCTX_UTILS_ROCTX_MISSING:
      return "MISSING (ranges reach AnnotationStack only)";
    case ROCTX_UTILS_ROCTX_SDK:
      return "SDK (rocprofiler-sdk roctx)";
    case ROCTX_UTILS_ROCTX_LEGACY:
      return "LEGACY (roctracer libroctx64)";
  }
  return "unknown";
}

void PrintRustDiagnostics() {
  const char* library = roctx_utils_roctx_library();
  std::printf("roctx state:   %s\n", RoctxStateName(roctx_utils_roctx_state_get()));
  std::printf("roctx library: %s\n", library != nullptr ? library : "none");

  roctx_utils_counters counters{sizeof(roctx_utils_counters)};
  roctx_utils_counters_get(&counters);
  std::printf("counters:      strings_interned=%" PRIu64 " string_pool_bytes=%" PRIu64
              " strings_truncated=%" PRIu64 " strings_rejected=%" PRIu64
              " null_streams=%" PRIu64 " panics_caught=%" PRIu64 "\n",
              counters.strings_interned, counters.string_pool_bytes, counters.strings_truncated,
              counters.strings_rejected, counters.null_streams, counters.panics_caught);
}
#endif

}  // namespace

int main() {
  // Line-buffered even when piped, so the backend's one-time stderr warnings (e.g. "no roctx
  // library") land next to the step that caused them instead of before everything.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

#ifdef ROCTX_UTILS_HAVE_RUST_IMPL
  std::printf("backend: Rust ROCm implementation (//:roctx_utils_impl)\n");
#else
  std::printf("backend: no-op stub (//:nvtx_utils_stub); build with --config=rocm for ROCm\n");
#endif

  // What XLA's GPU tracer does at session start: from now on ScopedAnnotation collects names
  // into AnnotationStack even when range emission is off.
  AnnotationStack::Enable(true);

  // Intern kernel titles once, before execution, as XLA does when it loads an executable;
  // only when emission is on, since nobody reads the handles otherwise.
  const ProfilerDomainHandle domain = tsl::profiler::DefaultProfilerDomain();
  StringHandle kernel_titles[kThreads] = {};
  if (domain != nullptr) {
    for (int i = 0; i < kThreads; ++i) {
      kernel_titles[i] = tsl::profiler::RegisterString(domain, kWork[i].kernel_title);
    }
  }

  // Run the executors concurrently: each thread has its own AnnotationStack and roctx stack.
  std::vector<std::string> reports(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([i, &reports, &kernel_titles] {
      reports[i] = RunExecutor(i, kernel_titles[i]);
    });
  }
  for (std::thread& thread : threads) thread.join();

  for (const std::string& report : reports) std::fputs(report.c_str(), stdout);

#ifdef ROCTX_UTILS_HAVE_RUST_IMPL
  PrintRustDiagnostics();
#else
  std::printf("roctx diagnostics: not available (the stub has no roctx_utils_* functions)\n");
#endif

  // As the tracer does at session end.
  AnnotationStack::Enable(false);
  return 0;
}
