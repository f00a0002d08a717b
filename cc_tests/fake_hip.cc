// A test double of the HIP runtime (libamdhip64) as far as a profiler tool can see it: HIP
// registers with rocprofiler-register when it initialises, and every launch and copy it makes is
// what rocprofiler-sdk records. Here that is: hipInit() checks, as register does, whether a tool
// is indicated (ROCP_TOOL_LIBRARIES, ROCPROFILER_REGISTER_LIBRARY, ROCPROFILER_REGISTER_FORCE_LOAD,
// a global rocprofiler_configure; ROCPROFILER_REGISTER_ENABLED=0 disables all); if so it loads the
// SDK as register would ($ROCPROFILER_REGISTER_LIBRARY, else librocprofiler-sdk.so, RTLD_GLOBAL)
// and calls its rocprofiler_set_api_table("hip", ...), which runs the SDK's tool discovery. Then
// module loads, launches and copies become the fake SDK's code-object, dispatch and copy records
// (fake_sdk_hooks.h). With no tool, HIP works and nothing is recorded, as with the real runtime.
//
// The API is HIP-shaped but small (a host written against it knows nothing of any profiler):
//   hipInit(0)                                        once, before anything else
//   hipModuleLoadData(&module, image)                 image: kernel symbols (mangled), one per line
//   hipModuleGetFunction(&function, module, "name")   a symbol of that module
//   hipModuleLaunchKernel(function, duration_ns)      runs for duration_ns on the device
//   hipMemcpyAsync(bytes, kind)                       kind: hipMemcpyHostToDevice (1), ...
// Each returns hipSuccess (0), or hipErrorNotInitialized (3) before hipInit, hipErrorNotFound
// (500) for an unknown symbol or module.
#include <dlfcn.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "fake_register.h"
#include "fake_sdk_hooks.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Sdk {
  FakeSdkLoadKernelSymbolFn load_symbol = nullptr;
  FakeSdkDispatchKernelExFn dispatch = nullptr;
  FakeSdkMemoryCopyFn copy = nullptr;
};

struct Module {
  uint64_t code_object = 0;
  std::vector<std::pair<std::string, uint64_t>> symbols;  // mangled name, kernel id
};

std::mutex g_mutex;
std::atomic<bool> g_initialized{false};
Sdk g_sdk;  // set once in hipInit
std::vector<Module> g_modules;
uint64_t g_next_kernel_id = 1;
std::atomic<uint64_t> g_device_clock{0};  // device timeline: work runs back to back

uint64_t BoottimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The device interval of work of `duration_ns` launched now: after the launch, after earlier work.
std::pair<uint64_t, uint64_t> DeviceInterval(uint64_t duration_ns) {
  const uint64_t earliest = BoottimeNs() + 2000;
  uint64_t prev = g_device_clock.load();
  uint64_t start;
  do {
    start = prev > earliest ? prev : earliest;
  } while (!g_device_clock.compare_exchange_weak(prev, start + duration_ns));
  return {start, start + duration_ns};
}

void RegisterWithRocprofiler() {
  if (!fake_register::ToolIndicated()) return;
  const fake_register::SetApiTable set = fake_register::FindSdk();
  if (set == nullptr) return;  // the real register aborts here
  g_sdk.load_symbol = reinterpret_cast<FakeSdkLoadKernelSymbolFn>(dlsym(RTLD_DEFAULT, "fake_sdk_load_kernel_symbol"));
  g_sdk.dispatch = reinterpret_cast<FakeSdkDispatchKernelExFn>(dlsym(RTLD_DEFAULT, "fake_sdk_dispatch_kernel_ex"));
  g_sdk.copy = reinterpret_cast<FakeSdkMemoryCopyFn>(dlsym(RTLD_DEFAULT, "fake_sdk_memory_copy"));
  set("hip", 70000, 0, nullptr, 0);
}

constexpr int kSuccess = 0, kNotInitialized = 3, kInvalidValue = 1, kNotFound = 500;

}  // namespace

FAKE_EXPORT int hipInit(unsigned /*flags*/) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_initialized.load()) {
    RegisterWithRocprofiler();
    g_initialized.store(true);
  }
  return kSuccess;
}

FAKE_EXPORT int hipModuleLoadData(uint64_t* module, const char* image) {
  if (!g_initialized.load()) return kNotInitialized;
  if (module == nullptr || image == nullptr) return kInvalidValue;
  std::lock_guard<std::mutex> lock(g_mutex);
  Module m;
  m.code_object = g_modules.size() + 1;
  std::istringstream lines{std::string(image)};
  for (std::string name; std::getline(lines, name);) {
    if (name.empty()) continue;
    const uint64_t id = g_next_kernel_id++;
    m.symbols.emplace_back(name, id);
    if (g_sdk.load_symbol) g_sdk.load_symbol(id, name.c_str(), m.code_object);
  }
  g_modules.push_back(std::move(m));
  *module = g_modules.size();  // 1-based handle
  return kSuccess;
}

FAKE_EXPORT int hipModuleGetFunction(uint64_t* function, uint64_t module, const char* name) {
  if (!g_initialized.load()) return kNotInitialized;
  if (function == nullptr || name == nullptr) return kInvalidValue;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (module == 0 || module > g_modules.size()) return kNotFound;
  for (const auto& [symbol, id] : g_modules[module - 1].symbols) {
    if (symbol == name) {
      *function = id;
      return kSuccess;
    }
  }
  return kNotFound;
}

FAKE_EXPORT int hipModuleLaunchKernel(uint64_t function, uint64_t duration_ns) {
  if (!g_initialized.load()) return kNotInitialized;
  if (function == 0) return kInvalidValue;
  const auto [start, end] = DeviceInterval(duration_ns);
  if (g_sdk.dispatch) g_sdk.dispatch(function, start, end, /*agent*/ 1, /*queue*/ 1, FAKE_SDK_DISPATCH_MODULE_LAUNCH);
  return kSuccess;
}

// hipMemcpyKind: HostToHost 0, HostToDevice 1, DeviceToHost 2, DeviceToDevice 3.
FAKE_EXPORT int hipMemcpyAsync(uint64_t bytes, int kind) {
  if (!g_initialized.load()) return kNotInitialized;
  if (kind < 0 || kind > 3) return kInvalidValue;
  const auto [start, end] = DeviceInterval(1000 + bytes / 16);
  // rocprofiler_memory_copy_operation_t is hipMemcpyKind + 1.
  if (g_sdk.copy) g_sdk.copy(kind + 1, bytes, start, end, /*dst*/ kind == 2 ? 0 : 1, /*src*/ kind == 1 ? 0 : 1, 0);
  return kSuccess;
}
