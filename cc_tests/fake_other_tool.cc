// Another rocprofiler-sdk tool in the same ROCP_TOOL_LIBRARIES list, standing in for rocprofv3's
// tool library: it subscribes MARKER_CORE_API in a context of its own, counts the callbacks it
// gets, and at its finalize writes "priority=<p> markers=<n>" to $OTHER_TOOL_OUT. It binds the SDK
// through the global scope (the SDK is loaded RTLD_GLOBAL by rocprofiler-register).
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

struct Result {
  size_t size;
  int (*initialize)(void (*fini)(), void* tool_data);
  void (*finalize)(void* tool_data);
  void* tool_data;
};

std::atomic<uint64_t> g_markers{0};
uint32_t g_priority = 0;
uint32_t g_version = 0;

struct Record6 {
  unsigned char bytes[56];
};
struct Record7 {
  unsigned char bytes[64];
};
void OnMarker6(Record6, uint64_t*, void*) { g_markers.fetch_add(1); }
void OnMarker7(Record7, uint64_t*, void*) { g_markers.fetch_add(1); }

int Initialize(void (*)(), void*) {
  using CreateContext = int (*)(uint64_t*);
  using ConfigureCallback = int (*)(uint64_t, int, const int32_t*, size_t, void*, void*);
  using StartContext = int (*)(uint64_t);
  auto create = reinterpret_cast<CreateContext>(dlsym(RTLD_DEFAULT, "rocprofiler_create_context"));
  auto configure = reinterpret_cast<ConfigureCallback>(
      dlsym(RTLD_DEFAULT, "rocprofiler_configure_callback_tracing_service"));
  auto start = reinterpret_cast<StartContext>(dlsym(RTLD_DEFAULT, "rocprofiler_start_context"));
  if (!create || !configure || !start) return -1;
  uint64_t context = 0;
  if (create(&context) != 0) return -1;
  void* callback = g_version >= 10000 ? reinterpret_cast<void*>(&OnMarker7)
                                      : reinterpret_cast<void*>(&OnMarker6);
  if (configure(context, /*MARKER_CORE_API*/ 7, nullptr, 0, callback, nullptr) != 0) return -1;
  return start(context) == 0 ? 0 : -1;
}

void Finalize(void*) {
  const char* out = std::getenv("OTHER_TOOL_OUT");
  if (out == nullptr) return;
  if (FILE* f = std::fopen(out, "w")) {
    std::fprintf(f, "priority=%u markers=%llu\n", g_priority,
                 static_cast<unsigned long long>(g_markers.load()));
    std::fclose(f);
  }
}

Result g_result{sizeof(Result), &Initialize, &Finalize, nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) Result* rocprofiler_configure(
    uint32_t version, const char*, uint32_t priority, void* client_id) {
  g_version = version;
  g_priority = priority;
  static const char kName[] = "fake_other_tool";
  // client_id->name: offset 0 in 6.x, 8 in 7.x (after size).
  auto** name = reinterpret_cast<const char**>(static_cast<unsigned char*>(client_id) +
                                               (version >= 10000 ? 8 : 0));
  *name = kName;
  return &g_result;
}
