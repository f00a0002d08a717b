// A real NVTX3 client: compiled against NVIDIA's own NVTX3 headers (PyPI nvidia-nvtx), whose
// header-only loader reads NVTX_INJECTION64_PATH, dlopens libroctx_utils_nvtx.so and calls its
// InitializeInjectionNvtx2, exactly as JAX's xla_cuda_plugin.so and PyTorch do. It makes the
// calls XLA and PyTorch make (nvidia_sources.md B), then reads what the injection recorded
// through the C API of the same loaded instance. Prints one PASS/FAIL line per check and
// "nvtx real client: N passed, M failed"; exits 1 on any failure.
//
// Run by scripts/test.sh with ROCTX_UTILS_XSPACE_OUT set, so the first NVTX call starts the
// automatic session, as it does in an uninstrumented process.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "nvtx3/nvToolsExt.h"
#include "roctx_utils/roctx_utils.h"

namespace {

int passed = 0, failed = 0;

void Check(bool ok, const std::string& name, const std::string& why = "") {
  if (ok) {
    ++passed;
    std::printf("PASS %s\n", name.c_str());
  } else {
    ++failed;
    std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
  }
}

template <typename F>
F Sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

int main() {
  // PyTorch's calls: default domain, ASCII, levels returned to the caller.
  const int outer = nvtxRangePushA("outer");
  const int inner = nvtxRangePushA("inner");
  nvtxMarkA("tick");
  Check(outer == 0 && inner == 1, "push-levels", "got " + std::to_string(outer) + ", " + std::to_string(inner));
  Check(nvtxRangePop() == 1, "pop-level");
  const nvtxRangeId_t id = nvtxRangeStartA("prefetch");
  Check(id != 0, "range-start-id");
  std::thread([id] { nvtxRangeEnd(id); }).join();
  nvtxRangePushW(L"wide \u00e9t\u00e9");
  nvtxRangePop();

  // XLA's calls: the TSL domain, registered titles with an extension payload, thread names.
  nvtxDomainHandle_t tsl = nvtxDomainCreateA("TSL");
  Check(tsl != nullptr, "domain-create", "a null TSL domain turns XLA's NVTX path off");
  nvtxStringHandle_t title = nvtxDomainRegisterStringA(tsl, "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#");
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = title;
  Check(nvtxDomainRangePushEx(tsl, &a) == 0, "domain-level", "levels are per domain");
  nvtxDomainRangePop(tsl);
  const long tid = syscall(SYS_gettid);
  nvtxNameOsThreadA(static_cast<uint32_t>(tid), "XlaLauncher:#global=0#");
  nvtxRangePop();  // outer

  void* lib = dlopen(std::getenv("NVTX_INJECTION64_PATH"), RTLD_NOW | RTLD_NOLOAD);
  Check(lib != nullptr, "injection-loaded", "NVTX's loader did not load NVTX_INJECTION64_PATH");
  if (lib == nullptr) {
    std::printf("nvtx real client: %d passed, %d failed\n", passed, failed);
    return 1;
  }
  auto stop = Sym<int (*)(roctx_utils_snapshot**)>(lib, "roctx_utils_session_stop");
  auto count = Sym<size_t (*)(const roctx_utils_snapshot*)>(lib, "roctx_utils_snapshot_event_count");
  auto event = Sym<int (*)(const roctx_utils_snapshot*, size_t, roctx_utils_event*)>(lib, "roctx_utils_snapshot_event");
  auto name = Sym<size_t (*)(const roctx_utils_snapshot*, uint64_t, char*, size_t)>(lib, "roctx_utils_snapshot_thread_name");
  roctx_utils_snapshot* s = nullptr;
  Check(stop(&s) == ROCTX_UTILS_OK && s != nullptr, "session", "no automatic session (is ROCTX_UTILS_XSPACE_OUT set?)");
  std::vector<std::string> labels;
  for (size_t i = 0; s != nullptr && i < count(s); ++i) {
    roctx_utils_event e{sizeof(e)};
    event(s, i, &e);
    labels.emplace_back(e.label, e.label_len);
  }
  const std::vector<std::string> want = {"outer", "inner", "tick", "prefetch", "wide \xc3\xa9t\xc3\xa9",
                                         "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#"};
  std::string got;
  for (const auto& l : labels) got += "[" + l + "] ";
  Check(labels == want, "labels", got);
  char buf[128] = {};
  if (s != nullptr) name(s, static_cast<uint64_t>(tid), buf, sizeof(buf));
  Check(std::string(buf) == "XlaLauncher:#global=0#", "thread-name", buf);
  std::printf("nvtx real client: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
