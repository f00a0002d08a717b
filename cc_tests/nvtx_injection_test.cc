// libroctx_utils_nvtx.so as an NVTX3 client's loader sees it (nvidia_sources.md A): this binary
// plays the loader of one or more instrumented libraries. It dlopens the injection library
// named by NVTX_INJECTION64_PATH, calls InitializeInjectionNvtx2 with its own
// nvtxGetExportTable (CALLBACKS + VERSIONINFO, module tables of the sizes NVTX 3 has), then
// calls through the slots exactly as the NVTX inline functions do: an empty slot is a no-op
// with the neutral value. What was recorded is read back through the C API of the same loaded
// instance (dlsym), in an in-process session.
#include <atomic>
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "roctx_utils/roofline.h"

namespace {

// ---- the client side of the ABI (our own declarations of the spec's layouts) ----

using Fn = void (*)();
using Slot = Fn*;

struct ExportTableCallbacks {
  size_t struct_size;
  int (*get_module_function_table)(int module, Slot** out_table, unsigned* out_size);
};
struct ExportTableVersionInfo {
  size_t struct_size;
  uint32_t version;
  uint32_t reserved0;
  void (*set_injection_nvtx_version)(uint32_t);
};
static_assert(sizeof(ExportTableCallbacks) == 16, "A.2");
static_assert(sizeof(ExportTableVersionInfo) == 24, "A.2");

struct EventAttributes {
  uint16_t version;
  uint16_t size;
  uint32_t category;
  int32_t color_type;
  uint32_t color;
  int32_t payload_type;
  int32_t reserved0;
  uint64_t payload;
  int32_t message_type;
  const void* message;
};
static_assert(sizeof(EventAttributes) == 48, "A.5");
static_assert(offsetof(EventAttributes, message) == 40, "A.5");

enum Module { kCore = 1, kCuda = 2, kCudart = 4, kCore2 = 5, kSync = 6 };
// Slot indices (A.3).
enum Core {
  kMarkEx = 1, kMarkA, kMarkW, kRangeStartEx, kRangeStartA, kRangeStartW, kRangeEnd,
  kRangePushEx, kRangePushA, kRangePushW, kRangePop, kNameCategoryA, kNameCategoryW,
  kNameOsThreadA, kNameOsThreadW, kCoreSize
};
enum Core2 {
  kDomainMarkEx = 1, kDomainRangeStartEx, kDomainRangeEnd, kDomainRangePushEx, kDomainRangePop,
  kDomainResourceCreate, kDomainResourceDestroy, kDomainNameCategoryA, kDomainNameCategoryW,
  kDomainRegisterStringA, kDomainRegisterStringW, kDomainCreateA, kDomainCreateW, kDomainDestroy,
  kInitialize, kCore2Size
};
constexpr int kNoPushPopTracking = -2;

// One instrumented library: its own slots (what the NVTX3 headers keep per linkage unit).
struct Client {
  unsigned core_size = kCoreSize, core2_size = kCore2Size, cuda_size = 9, cudart_size = 7;
  Fn core[kCoreSize + 1] = {};
  Fn core2[kCore2Size + 1] = {};
  Fn cuda[10] = {};
  Fn cudart[8] = {};
  Fn sync[8] = {};
  std::vector<Slot> core_t, core2_t, cuda_t, cudart_t, sync_t;
  uint32_t version_set = 0;
  bool give_callbacks = true;
  size_t callbacks_size = sizeof(ExportTableCallbacks);

  Client() {
    auto table = [](Fn* slots, unsigned size, std::vector<Slot>& t) {
      t.assign(size + 1, nullptr);  // index 0 and index `size` stay null (A.2)
      for (unsigned i = 1; i < size; ++i) t[i] = &slots[i];
    };
    table(core, kCoreSize, core_t);
    table(core2, kCore2Size, core2_t);
    table(cuda, 9, cuda_t);
    table(cudart, 7, cudart_t);
    table(sync, 7, sync_t);
  }
  template <typename F>
  F get(Fn* slots, int i) const {
    return reinterpret_cast<F>(slots[i]);
  }
};

Client* g_client = nullptr;  // the client whose loader is running init

int GetModuleFunctionTable(int module, Slot** out_table, unsigned* out_size) {
  Client& c = *g_client;
  switch (module) {
    case kCore: *out_table = c.core_t.data(); *out_size = c.core_size; return 1;
    case kCore2: *out_table = c.core2_t.data(); *out_size = c.core2_size; return 1;
    case kCuda: *out_table = c.cuda_t.data(); *out_size = c.cuda_size; return 1;
    case kCudart: *out_table = c.cudart_t.data(); *out_size = c.cudart_size; return 1;
    case kSync: *out_table = c.sync_t.data(); *out_size = 7; return 1;
  }
  return 0;  // OpenCL (3) and anything newer
}

void SetInjectionNvtxVersion(uint32_t v) { g_client->version_set = v; }

const void* GetExportTable(uint32_t id) {
  static ExportTableCallbacks callbacks;
  static ExportTableVersionInfo version;
  callbacks = {g_client->callbacks_size, &GetModuleFunctionTable};
  version = {sizeof(version), 3, 0, &SetInjectionNvtxVersion};
  if (id == 1) return g_client->give_callbacks ? &callbacks : nullptr;
  if (id == 3) return &version;
  return nullptr;
}

using InitFn = int (*)(const void* (*)(uint32_t));

void* Library() {
  static void* lib = dlopen(std::getenv("NVTX_INJECTION64_PATH"), RTLD_LAZY);
  return lib;
}

int Init(Client& c) {
  auto init = reinterpret_cast<InitFn>(dlsym(Library(), "InitializeInjectionNvtx2"));
  if (init == nullptr) return -100;
  g_client = &c;
  const int ok = init(&GetExportTable);
  g_client = nullptr;
  return ok;
}

// The C API of the loaded instance.
struct Api {
  int (*start)(const roctx_utils_session_options*);
  int (*stop)(roctx_utils_snapshot**);
  void (*free)(roctx_utils_snapshot*);
  size_t (*count)(const roctx_utils_snapshot*);
  int (*event)(const roctx_utils_snapshot*, size_t, roctx_utils_event*);
  size_t (*thread_name)(const roctx_utils_snapshot*, uint64_t, char*, size_t);
  int (*stats)(const roctx_utils_snapshot*, roctx_utils_capture_stats*);
  static const Api& Get() {
    static const Api api = [] {
      Api a{};
      void* l = Library();
      a.start = reinterpret_cast<decltype(a.start)>(dlsym(l, "roctx_utils_session_start"));
      a.stop = reinterpret_cast<decltype(a.stop)>(dlsym(l, "roctx_utils_session_stop"));
      a.free = reinterpret_cast<decltype(a.free)>(dlsym(l, "roctx_utils_snapshot_free"));
      a.count = reinterpret_cast<decltype(a.count)>(dlsym(l, "roctx_utils_snapshot_event_count"));
      a.event = reinterpret_cast<decltype(a.event)>(dlsym(l, "roctx_utils_snapshot_event"));
      a.thread_name = reinterpret_cast<decltype(a.thread_name)>(dlsym(l, "roctx_utils_snapshot_thread_name"));
      a.stats = reinterpret_cast<decltype(a.stats)>(dlsym(l, "roctx_utils_snapshot_stats"));
      return a;
    }();
    return api;
  }
};

struct Ev {
  uint32_t kind, depth;
  uint64_t tid, end_tid;
  std::string label;
};

struct Captured {
  std::vector<Ev> events;
  roctx_utils_capture_stats stats{sizeof(roctx_utils_capture_stats)};
  std::string thread_name;
  std::vector<std::string> Labels() const {
    std::vector<std::string> out;
    for (const Ev& e : events) out.push_back(e.label);
    return out;
  }
};

void Start() {
  roctx_utils_session_options o{};
  o.struct_size = sizeof(o);
  o.mode = ROCTX_UTILS_CAPTURE_IN_PROCESS;
  ASSERT_EQ(Api::Get().start(&o), ROCTX_UTILS_OK);
}

Captured Stop(uint64_t named_tid = 0) {
  const Api& a = Api::Get();
  Captured c;
  roctx_utils_snapshot* s = nullptr;
  EXPECT_EQ(a.stop(&s), ROCTX_UTILS_OK);
  if (s == nullptr) return c;
  for (size_t i = 0; i < a.count(s); ++i) {
    roctx_utils_event e{sizeof(roctx_utils_event)};
    a.event(s, i, &e);
    c.events.push_back({e.kind, e.depth, e.tid, e.end_tid, std::string(e.label, e.label_len)});
  }
  a.stats(s, &c.stats);
  char name[256] = {};
  if (named_tid != 0) a.thread_name(s, named_tid, name, sizeof(name));
  c.thread_name = name;
  a.free(s);
  return c;
}

uint64_t Tid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

EventAttributes Attr(int message_type, const void* message) {
  EventAttributes a{};
  a.version = 3;
  a.size = sizeof(a);
  a.message_type = message_type;
  a.message = message;
  return a;
}

class NvtxInjection : public ::testing::Test {
 protected:
  static Client& Xla() {  // one instrumented library, initialized once for the whole binary
    static Client* c = [] {
      auto* client = new Client;
      EXPECT_EQ(Init(*client), 1);
      return client;
    }();
    return *c;
  }
  void SetUp() override {
    ASSERT_NE(Library(), nullptr) << dlerror();
    ASSERT_NE(Api::Get().start, nullptr);
    Xla();
  }
};

TEST_F(NvtxInjection, InitFillsEveryCoreDomainAndNamingSlotAsCompleteSetsAndSaysItsVersion) {
  Client& c = Xla();
  EXPECT_EQ(c.version_set, 3u);
  for (int i = kMarkEx; i <= kRangePop; ++i) EXPECT_NE(c.core[i], nullptr) << "core slot " << i;
  EXPECT_NE(c.core[kNameOsThreadA], nullptr);
  EXPECT_NE(c.core[kNameOsThreadW], nullptr);
  for (int i : {kDomainMarkEx, kDomainRangeStartEx, kDomainRangeEnd, kDomainRangePushEx, kDomainRangePop,
                kDomainRegisterStringA, kDomainRegisterStringW, kDomainCreateA, kDomainCreateW, kDomainDestroy}) {
    EXPECT_NE(c.core2[i], nullptr) << "core2 slot " << i;
  }
  for (int i : {1, 2, 5, 6}) EXPECT_NE(c.cuda[i], nullptr) << "cuda slot " << i;
  for (int i : {1, 2, 3, 4}) EXPECT_NE(c.cudart[i], nullptr) << "cudart slot " << i;
  EXPECT_EQ(c.core[0], nullptr);
  EXPECT_EQ(c.core[kCoreSize], nullptr) << "the sentinel past the table is never written";
  for (Fn f : c.sync) EXPECT_EQ(f, nullptr) << "no sync-module slots";
}

// PyTorch: torch.cuda.nvtx.range_push/pop/mark/range_start/range_end, default domain, ASCII.
TEST_F(NvtxInjection, DefaultDomainRangesMarksAndStartEndRangesAreRecordedWithNvtxLevels) {
  Client& c = Xla();
  Start();
  auto push = c.get<int (*)(const char*)>(c.core, kRangePushA);
  auto pop = c.get<int (*)()>(c.core, kRangePop);
  EXPECT_EQ(push("outer"), 0);
  EXPECT_EQ(push("inner"), 1);
  c.get<void (*)(const char*)>(c.core, kMarkA)("tick");
  EXPECT_EQ(pop(), 1);
  EXPECT_EQ(pop(), 0);
  EXPECT_EQ(pop(), -1) << "nothing open: an error, and nothing recorded";
  const uint64_t id = c.get<uint64_t (*)(const char*)>(c.core, kRangeStartA)("prefetch");
  EXPECT_NE(id, 0u);
  std::thread([&] { c.get<void (*)(uint64_t)>(c.core, kRangeEnd)(id); }).join();
  const Captured r = Stop();
  EXPECT_EQ(r.Labels(), (std::vector<std::string>{"outer", "inner", "tick", "prefetch"}));
  EXPECT_EQ(r.events[1].depth, 1u);
  EXPECT_EQ(r.events[2].kind, ROCTX_UTILS_EVENT_MARK);
  EXPECT_EQ(r.events[3].kind, ROCTX_UTILS_EVENT_PROCESS_RANGE);
  EXPECT_NE(r.events[3].end_tid, r.events[3].tid) << "ended on another thread";
  EXPECT_EQ(r.stats.unmatched_pops, 0u);
}

// XLA: nvtxDomainCreateA("TSL"), registered titles through DomainRangePushEx (payload EXT),
// ASCII titles for compile ranges; TSL labels keep their own text, other domains are named.
TEST_F(NvtxInjection, XlaDomainRangesWithRegisteredAndAsciiTitlesAndNamedDomains) {
  Client& c = Xla();
  auto create = c.get<void* (*)(const char*)>(c.core2, kDomainCreateA);
  auto reg = c.get<void* (*)(void*, const char*)>(c.core2, kDomainRegisterStringA);
  auto push = c.get<int (*)(void*, const EventAttributes*)>(c.core2, kDomainRangePushEx);
  auto pop = c.get<int (*)(void*)>(c.core2, kDomainRangePop);
  void* tsl = create("TSL");
  void* mine = create("my_lib");
  ASSERT_NE(tsl, nullptr) << "a null domain would turn XLA's NVTX path off for good";
  ASSERT_NE(mine, nullptr);
  EXPECT_NE(tsl, mine);
  void* module = reg(tsl, "XlaModule:#hlo_module=jit_f,program_id=1#");
  void* thunk = reg(tsl, "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#");
  EXPECT_EQ(reg(tsl, "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#"), thunk) << "same text, same handle";
  Start();
  EventAttributes m = Attr(3, module);
  m.payload_type = static_cast<int32_t>(0xDFBD0009);  // NVTX_PAYLOAD_TYPE_EXT: ignored safely
  m.reserved0 = 1;
  m.payload = 0x10;  // a bogus payload address: never read
  EXPECT_EQ(push(tsl, &m), 0);
  EventAttributes t = Attr(3, thunk);
  EXPECT_EQ(push(tsl, &t), 1);
  EventAttributes lib = Attr(1, "load");
  EXPECT_EQ(push(mine, &lib), 0) << "levels are per domain";
  EXPECT_EQ(pop(mine), 0);
  EXPECT_EQ(pop(tsl), 1);
  EventAttributes compile = Attr(1, "XlaCompile:#module=jit_f#");
  c.get<void (*)(void*, const EventAttributes*)>(c.core2, kDomainMarkEx)(tsl, &compile);
  EXPECT_EQ(pop(tsl), 0);
  const Captured r = Stop();
  EXPECT_EQ(r.Labels(), (std::vector<std::string>{"XlaModule:#hlo_module=jit_f,program_id=1#",
                                                  "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#",
                                                  "my_lib: load", "XlaCompile:#module=jit_f#"}));
}

TEST_F(NvtxInjection, WideAndExMessagesAndBadAttributesNeverCrashOrDriftTheDepth) {
  Client& c = Xla();
  Start();
  const wchar_t* wide = L"Grüße";
  EXPECT_EQ(c.get<int (*)(const wchar_t*)>(c.core, kRangePushW)(wide), 0);
  EventAttributes ex = Attr(1, "ex");
  EXPECT_EQ(c.get<int (*)(const EventAttributes*)>(c.core, kRangePushEx)(&ex), 1);
  EventAttributes short_attr = Attr(1, "never read");
  short_attr.size = 40;  // does not cover `message`: no label, the range still counts
  EXPECT_EQ(c.get<int (*)(const EventAttributes*)>(c.core, kRangePushEx)(&short_attr), 2);
  EventAttributes unknown = Attr(99, "x");
  c.get<void (*)(const EventAttributes*)>(c.core, kMarkEx)(&unknown);
  c.get<void (*)(const EventAttributes*)>(c.core, kMarkEx)(nullptr);
  c.get<void (*)(const char*)>(c.core, kMarkA)(nullptr);
  auto pop = c.get<int (*)()>(c.core, kRangePop);
  EXPECT_EQ(pop(), 2);
  EXPECT_EQ(pop(), 1);
  EXPECT_EQ(pop(), 0);
  std::string huge(100000, 'x');
  EXPECT_EQ(c.get<int (*)(const char*)>(c.core, kRangePushA)(huge.c_str()), 0);
  EXPECT_EQ(pop(), 0);
  const Captured r = Stop();
  EXPECT_EQ(r.Labels(), (std::vector<std::string>{"Grüße", "ex", std::string(4096, 'x')}));
  EXPECT_EQ(r.stats.dropped_empty_label, 4u) << "the short attributes' range and three empty marks";
  EXPECT_EQ(r.stats.unmatched_pops, 0u) << "the empty range's pop closes it: the stack stays balanced";
}

TEST_F(NvtxInjection, ThreadNamesReachTheSnapshotAndDeviceAndStreamNamesAreAccepted) {
  Client& c = Xla();
  Start();
  const uint64_t tid = Tid();
  c.get<void (*)(uint32_t, const char*)>(c.core, kNameOsThreadA)(static_cast<uint32_t>(tid), "XlaLauncher:#global=0#");
  c.get<void (*)(int, const char*)>(c.cudart, 1)(0, "Xla:#global=0,local=0#");
  int stream = 0;
  c.get<void (*)(void*, const char*)>(c.cuda, 5)(&stream, "Compute");
  c.get<void (*)(void*, const char*)>(c.cuda, 5)(nullptr, nullptr);
  c.get<int (*)(const char*)>(c.core, kRangePushA)("named");
  c.get<int (*)()>(c.core, kRangePop)();
  const Captured r = Stop(tid);
  EXPECT_EQ(r.thread_name, "XlaLauncher:#global=0#");
}

// Several instrumented libraries (PyTorch has two): each calls init with its own tables; all
// are filled, and they share one pipeline.
TEST_F(NvtxInjection, EveryClientLibraryIsInitializedAndTheyShareOneSession) {
  Client second;
  ASSERT_EQ(Init(second), 1);
  Client& first = Xla();
  Start();
  first.get<int (*)(const char*)>(first.core, kRangePushA)("from libtorch_python");
  second.get<int (*)(const char*)>(second.core, kRangePushA)("from libtorch_cuda");
  EXPECT_EQ(second.get<int (*)()>(second.core, kRangePop)(), 1) << "one thread, one stack";
  EXPECT_EQ(first.get<int (*)()>(first.core, kRangePop)(), 0);
  const Captured r = Stop();
  EXPECT_EQ(r.Labels(), (std::vector<std::string>{"from libtorch_python", "from libtorch_cuda"}));
}

TEST_F(NvtxInjection, AnOlderClientsShorterTablesAreNeverWrittenPastTheirEnd) {
  Client old;
  old.core_size = 12;  // up to RangePop only
  old.core2_size = 6;
  for (unsigned i = old.core_size; i <= kCoreSize; ++i) old.core_t[i] = nullptr;
  for (unsigned i = old.core2_size; i <= kCore2Size; ++i) old.core2_t[i] = nullptr;
  ASSERT_EQ(Init(old), 1);
  EXPECT_NE(old.core[kRangePop], nullptr);
  for (unsigned i = old.core_size; i <= kCoreSize; ++i) EXPECT_EQ(old.core[i], nullptr) << i;
  for (unsigned i = old.core2_size; i <= kCore2Size; ++i) EXPECT_EQ(old.core2[i], nullptr) << i;
}

TEST_F(NvtxInjection, AClientWithoutACallbackTableIsRefusedAndNothingIsWritten) {
  Client none;
  none.give_callbacks = false;
  EXPECT_EQ(Init(none), 0);
  Client tiny;
  tiny.callbacks_size = 8;  // does not cover GetModuleFunctionTable
  EXPECT_EQ(Init(tiny), 0);
  for (Fn f : tiny.core) EXPECT_EQ(f, nullptr);
  auto init = reinterpret_cast<InitFn>(dlsym(Library(), "InitializeInjectionNvtx2"));
  EXPECT_EQ(init(nullptr), 0);
}

uint64_t BoottimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Stops the session and returns its Chrome JSON (written to the test's temp dir as `name`);
// empty if the stop or the write failed.
std::string StopAsChrome(const char* name) {
  const Api& a = Api::Get();
  roctx_utils_snapshot* s = nullptr;
  if (a.stop(&s) != ROCTX_UTILS_OK) return "";
  auto write_chrome = reinterpret_cast<int (*)(const roctx_utils_snapshot*, const char*)>(
      dlsym(Library(), "roctx_utils_snapshot_write_chrome"));
  const std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
  const int written = write_chrome(s, path.c_str());
  a.free(s);
  if (written != ROCTX_UTILS_OK) return "";
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// NVIDIA kernels through CUPTI (the fake, CUDA 13.0 layouts): the injection started CUPTI at
// its first call (activity API only, the four kinds), keeps one CUSTOM2 entry per thread, and
// each kernel lands on /device:GPU:0 under the innermost NVTX range open at its launch.
TEST_F(NvtxInjection, CuptiKernelsBecomeGpuRowsUnderTheNvtxRangeThatLaunchedThem) {
  Client& c = Xla();
  void* cupti = dlopen(std::getenv("ROCTX_UTILS_CUPTI_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cupti, nullptr) << "the injection did not load CUPTI";
  auto enabled = reinterpret_cast<int (*)(int)>(dlsym(cupti, "fake_cupti_enabled"));
  auto depth = reinterpret_cast<int (*)(int)>(dlsym(cupti, "fake_cupti_depth"));
  auto launch = reinterpret_cast<uint32_t (*)(const char*, uint64_t, uint64_t, uint32_t, uint32_t, int32_t, int32_t)>(
      dlsym(cupti, "fake_cupti_launch"));
  ASSERT_TRUE(enabled && depth && launch);
  for (int kind : {10, 5, 4}) EXPECT_EQ(enabled(kind), 1) << "activity kind " << kind;
  EXPECT_EQ(enabled(39), 0) << "no external correlation: kernels are joined to their API records";
  auto create = c.get<void* (*)(const char*)>(c.core2, kDomainCreateA);
  auto reg = c.get<void* (*)(void*, const char*)>(c.core2, kDomainRegisterStringA);
  auto push = c.get<int (*)(void*, const EventAttributes*)>(c.core2, kDomainRangePushEx);
  auto pop = c.get<int (*)(void*)>(c.core2, kDomainRangePop);
  void* tsl = create("TSL");
  EventAttributes module = Attr(3, reg(tsl, "XlaModule:#hlo_module=jit_step,program_id=3#"));
  EventAttributes thunk = Attr(3, reg(tsl, "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#"));
  Start();
  const uint64_t t0 = BoottimeNs();
  push(tsl, &module);
  push(tsl, &thunk);
  launch("loop_fusion_3", t0 + 1000, t0 + 51000, 0, 7, 256, 128);
  EXPECT_EQ(depth(5), 0) << "no CUPTI call on the range path";
  pop(tsl);
  launch("_Z9after_allPf", t0 + 60000, t0 + 70000, 0, 9, 1, 32);
  pop(tsl);
  launch("outside", t0 + 80000, t0 + 90000, 0, 7, 1, 32);
  usleep(500);
  const std::string json = StopAsChrome("cupti.json");
  ASSERT_FALSE(json.empty());
  EXPECT_NE(json.find("/device:GPU:0"), std::string::npos) << json;
  EXPECT_EQ(Count(json, "\"name\":\"loop_fusion_3\""), 1u) << json;
  EXPECT_EQ(Count(json, "\"name\":\"after_all(float*)\""), 1u) << "names are demangled\n" << json;
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#\""), 2u)
      << "the thunk's own event and its kernel\n" << json;
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"XlaModule:#hlo_module=jit_step,program_id=3#\""), 2u) << json;
  EXPECT_NE(json.find("grid:256,1,1 block:128,1,1"), std::string::npos) << json;
  EXPECT_EQ(Count(json, "\"ph\":\"s\""), 2u) << "an arrow per kernel launched inside a range\n" << json;
}

// Issue 29: a JAX-like run (NVTX ranges, kernels through CUPTI) ended by SIGTERM or SIGINT writes
// its XSpace, kernels included, marked as cut short, and ends by the signal. Its own target
// (nvtx_injection_signals_test): the child must be the first in its process to load the
// library, with ROCTX_UTILS_XSPACE_OUT set.
void EndBySignal(int sig) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/nvtx_signals" + std::to_string(sig);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(60);
    setenv("ROCTX_UTILS_XSPACE_OUT", dir.c_str(), 1);
    Client c;
    if (Init(c) != 1) _exit(10);
    auto create = c.get<void* (*)(const char*)>(c.core2, kDomainCreateA);
    auto reg = c.get<void* (*)(void*, const char*)>(c.core2, kDomainRegisterStringA);
    auto push = c.get<int (*)(void*, const EventAttributes*)>(c.core2, kDomainRangePushEx);
    auto pop = c.get<int (*)(void*)>(c.core2, kDomainRangePop);
    void* tsl = create("TSL");
    EventAttributes thunk = Attr(3, reg(tsl, "Thunk:#hlo_op=fusion.9#"));
    push(tsl, &thunk);  // the first range starts the library (and CUPTI, and the session)
    pop(tsl);
    void* cupti = dlopen(std::getenv("ROCTX_UTILS_CUPTI_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    auto launch = cupti ? reinterpret_cast<uint32_t (*)(const char*, uint64_t, uint64_t, uint32_t, uint32_t, int32_t, int32_t)>(
                              dlsym(cupti, "fake_cupti_launch"))
                        : nullptr;
    if (launch == nullptr) _exit(11);
    for (int i = 0;; ++i) {
      push(tsl, &thunk);
      const uint64_t t = BoottimeNs();
      launch("signal_fusion_9", t + 1000, t + 2000, 0, 7, 64, 128);
      pop(tsl);
      if (i == 20 && write(ready[1], "x", 1) != 1) _exit(12);
      usleep(500);
    }
  }
  close(ready[1]);
  char byte = 0;
  int status = 0;
  if (read(ready[0], &byte, 1) != 1) {
    waitpid(pid, &status, 0);
    FAIL() << "the child ended before its run: status " << status;
  }
  kill(pid, sig);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status;
  FILE* p = popen(("find " + dir + " -type f").c_str(), "r");
  std::string found;
  char line[1024];
  while (p && fgets(line, sizeof(line), p)) found += line;
  if (p) pclose(p);
  ASSERT_EQ(Count(found, "\n"), 1u) << "one file, no temporary:\n" << found;
  ASSERT_NE(found.find(".xplane.pb\n"), std::string::npos) << found;
  std::ifstream in(found.substr(0, found.size() - 1), std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string xspace = bytes.str();
  EXPECT_NE(xspace.find("Thunk:#hlo_op=fusion.9#"), std::string::npos);
  EXPECT_NE(xspace.find("signal_fusion_9"), std::string::npos) << "the kernels, flushed from CUPTI at the signal";
  EXPECT_NE(xspace.find(std::string("cut short by ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT")), std::string::npos);
}

TEST(NvtxSignals, ARunEndedBySigtermOrSigintStillWritesItsRangesAndKernels) {
  for (int sig : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(sig == SIGTERM ? "SIGTERM" : "SIGINT");
    EndBySignal(sig);
  }
}

// The entry point, the C API and llama.cpp's hooks (ggml-cuda links this library on CUDA:
// integrations/llama.cpp); nothing of the Rust runtime or the bundled C++.
TEST_F(NvtxInjection, OnlyTheEntryPointTheCApiAndTheGgmlHooksAreExported) {
  EXPECT_NE(dlsym(Library(), "InitializeInjectionNvtx2"), nullptr);
  EXPECT_NE(dlsym(Library(), "roctx_utils_session_start"), nullptr);
  for (const char* hook : {"ggml_cuda_roofline_init", "ggml_cuda_roofline_set_device", "ggml_cuda_roofline_reset",
                           "ggml_cuda_roofline_begin_op", "ggml_cuda_roofline_fuse_ops"}) {
    EXPECT_NE(dlsym(Library(), hook), nullptr) << hook;
  }
  EXPECT_EQ(dlsym(Library(), "_ZN3tsl8profiler15AnnotationStack10PushAnnotationESt17basic_string_viewIcSt11char_traitsIcEE"), nullptr);
  EXPECT_EQ(dlsym(Library(), "rust_eh_personality"), nullptr);
}


// The join's edges through the injection and the fake CUPTI: a kernel launched by a thread that
// exits before the flush keeps its range; a kernel that runs long after its range closed is
// still the range's (by launch, not by execution); a start/end range spanning the launch is on
// no thread's stack and takes nothing.
TEST_F(NvtxInjection, CuptiKernelsAreJoinedByLaunchOnThreadsThatAreGone) {
  Client& c = Xla();
  void* cupti = dlopen(std::getenv("ROCTX_UTILS_CUPTI_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cupti, nullptr);
  auto launch = reinterpret_cast<uint32_t (*)(const char*, uint64_t, uint64_t, uint32_t, uint32_t, int32_t, int32_t)>(
      dlsym(cupti, "fake_cupti_launch"));
  ASSERT_NE(launch, nullptr);
  auto push = c.get<int (*)(const char*)>(c.core, kRangePushA);
  auto pop = c.get<int (*)()>(c.core, kRangePop);
  auto start_range = c.get<uint64_t (*)(const char*)>(c.core, kRangeStartA);
  auto end_range = c.get<void (*)(uint64_t)>(c.core, kRangeEnd);
  Start();
  const uint64_t t0 = BoottimeNs();
  std::vector<std::thread> workers;
  for (int i = 0; i < 4; ++i) {
    workers.emplace_back([&, i] {
      const std::string label = "worker_" + std::to_string(i);
      const uint64_t process = start_range("process_range");
      push(label.c_str());
      // Kernel names live as long as their module, as CUPTI's do (the fake keys them by address).
      static const char* const kLate[] = {"late_kernel_0", "late_kernel_1", "late_kernel_2", "late_kernel_3"};
      static const char* const kAfter[] = {"after_pop_0", "after_pop_1", "after_pop_2", "after_pop_3"};
      // Runs 1 ms after its range closes, as queued GPU work does.
      launch(kLate[i], t0 + 1000000, t0 + 1001000, 0, 7, 1, 32);
      pop();
      launch(kAfter[i], t0 + 1002000, t0 + 1003000, 0, 7, 1, 32);
      end_range(process);
    });
  }
  for (auto& w : workers) w.join();  // every launching thread is gone before the flush
  usleep(2000);
  const std::string json = StopAsChrome("gone.json");
  ASSERT_FALSE(json.empty());
  for (int i = 0; i < 4; ++i) {
    const std::string label = "worker_" + std::to_string(i);
    EXPECT_EQ(Count(json, "\"nvtx_range\":\"" + label + "\""), 2u) << "the range and its one kernel\n" << json;
    const size_t late = json.find("\"name\":\"late_kernel_" + std::to_string(i) + "\"");
    ASSERT_NE(late, std::string::npos) << json;
    const size_t late_end = json.find('}', json.find("\"args\"", late));
    EXPECT_NE(json.substr(late, late_end - late).find(label), std::string::npos) << "by launch\n" << json;
  }
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"process_range\""), Count(json, "\"name\":\"process_range\""))
      << "a start/end range is on no stack: only its own events name it\n" << json;
  EXPECT_EQ(Count(json, "\"ph\":\"s\""), 4u) << "one arrow per kernel launched inside a range\n" << json;
}

// The fake CUPTI's graph node (cc_tests/fake_cupti.cc).
struct FakeGraphNode {
  int kind;  // 10 kernel, 1 memcpy, 2 memset
  const char* name;
  uint64_t start, end;
  uint64_t bytes;
  int copy_kind;
};

// Copies and sets beside the kernels (CUPTI MEMCPY/MEMSET, CUDA 13.0's Memcpy6/Memset4), each
// on its real stream's row named as XLA names its own, under the range open at its launch; a
// graph launch (an XLA command buffer) puts every node it ran under the range open at the
// cudaGraphLaunch, with the graph and node ids XProf shows.
TEST_F(NvtxInjection, CuptiCopiesSetsAndGraphNodesAreGpuEventsUnderTheRangeOpenAtTheirLaunch) {
  Client& c = Xla();
  void* cupti = dlopen(std::getenv("ROCTX_UTILS_CUPTI_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cupti, nullptr);
  auto enabled = reinterpret_cast<int (*)(int)>(dlsym(cupti, "fake_cupti_enabled"));
  auto copy = reinterpret_cast<uint32_t (*)(int, int, int, uint64_t, uint64_t, uint64_t, uint32_t, uint32_t)>(
      dlsym(cupti, "fake_cupti_copy"));
  auto memset = reinterpret_cast<uint32_t (*)(uint32_t, uint64_t, uint64_t, uint64_t, uint32_t, uint32_t)>(
      dlsym(cupti, "fake_cupti_memset"));
  auto graph = reinterpret_cast<uint32_t (*)(uint32_t, const FakeGraphNode*, int, uint32_t, uint32_t)>(
      dlsym(cupti, "fake_cupti_graph_launch"));
  ASSERT_TRUE(enabled && copy && memset && graph);
  for (int kind : {1, 2, 22}) EXPECT_EQ(enabled(kind), 1) << "MEMCPY, MEMSET and MEMCPY2 are traced";
  auto push = c.get<int (*)(const char*)>(c.core, kRangePushA);
  auto pop = c.get<int (*)()>(c.core, kRangePop);
  Start();
  const uint64_t t0 = BoottimeNs();
  push("Thunk:#hlo_op=copy-start.1#");
  copy(1, 2, 3, 4096, t0 + 1000, t0 + 2000, 0, 15);  // pinned host -> device on stream 15
  memset(0, 1 << 20, t0 + 3000, t0 + 4000, 0, 15);
  pop();
  push("Thunk:#hlo_op=command_buffer_1#");
  const FakeGraphNode nodes[] = {
      {10, "graph_kernel", t0 + 10000, t0 + 20000, 0, 0},
      {1, nullptr, t0 + 21000, t0 + 22000, 4 << 20, 8},  // device to device
      {2, nullptr, t0 + 23000, t0 + 24000, 4 << 20, 0},
  };
  graph(2, nodes, 3, 0, 14);
  pop();
  usleep(500);
  const std::string json = StopAsChrome("copies.json");
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(Count(json, "\"name\":\"Stream #15(MemcpyH2D,Memset)\""), 1u) << json;
  EXPECT_EQ(Count(json, "\"name\":\"Stream #14(Compute,MemcpyD2D,Memset)\""), 1u) << json;
  EXPECT_EQ(Count(json, "\"memcpy_details\":\"kind_src:pinned kind_dst:device size:4096 dest:0 async:1\""), 1u) << json;
  EXPECT_EQ(Count(json, "\"Memset_details\":\"kind:device num_bytes:1048576 async:1\""), 1u) << json;
  EXPECT_EQ(Count(json, "\"name\":\"MemcpyD2D\""), 1u) << json;
  EXPECT_EQ(Count(json, "\"name\":\"Memset 3\""), 2u) << json;
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"Thunk:#hlo_op=copy-start.1#\""), 3u) << "the range, its copy and its set\n" << json;
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"Thunk:#hlo_op=command_buffer_1#\""), 4u)
      << "the thunk and the three nodes of the graph it launched\n" << json;
  EXPECT_EQ(Count(json, "\"cuda_graph_id\":2"), 3u) << json;
  EXPECT_EQ(Count(json, "\"cuda_graph_node_id\":8589934593"), 1u) << "node 1 of graph exec 2\n" << json;
}

// Another profiler takes CUPTI over exactly as XLA's tracer does under jax.profiler.trace
// (subscribe, its own buffer callbacks, enable, work, disable, forced flush, unsubscribe,
// finalize): what we had before it came is ours; what it saw is counted, not lost silently;
// after its finalize we trace again by ourselves, and we never subscribed (which would have
// made its cuptiSubscribe fail).
// CUPTI as another profiler in the process calls it (the fake's own entry points), the fake's
// test hooks, and our C calls around a hand-over: bound once for the tests below.
struct Cupti {
  using Requested = void (*)(uint8_t**, size_t*, size_t*);
  using Completed = void (*)(void*, uint32_t, uint8_t*, size_t, size_t);
  uint32_t (*launch)(const char*, uint64_t, uint64_t, uint32_t, uint32_t, int32_t, int32_t) = nullptr;
  int (*subscribe)(void**, void*, void*) = nullptr;
  int (*enable_domain)(uint32_t, void*, int) = nullptr;
  int (*unsubscribe)(void*) = nullptr;
  int (*register_callbacks)(Requested, Completed) = nullptr;
  int (*register_clock)(uint64_t (*)()) = nullptr;
  int (*enable)(int) = nullptr;
  int (*disable)(int) = nullptr;
  int (*flush_all)(uint32_t) = nullptr;
  int (*finalize)() = nullptr;
  int (*enabled)(int) = nullptr;
  int (*subscribes)() = nullptr;
  void (*restart)() = nullptr;
  int (*stats_get)(roctx_utils_kernel_stats*) = nullptr;
  int (*handover)() = nullptr;
  int (*reclaim)() = nullptr;
  int (*records_on)(uint32_t, uint32_t) = nullptr;  // (domain, cbid): API records on?
  uint32_t (*call_without_gpu_work)() = nullptr;
  bool ok = false;
};

Cupti BindCupti() {
  Cupti c;
  void* cupti = dlopen(std::getenv("ROCTX_UTILS_CUPTI_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  if (cupti == nullptr) return c;
  auto bind = [](void* lib, const char* name, auto* out) {
    *out = reinterpret_cast<std::remove_pointer_t<decltype(out)>>(dlsym(lib, name));
    return *out != nullptr;
  };
  c.ok = bind(cupti, "fake_cupti_launch", &c.launch) && bind(cupti, "cuptiSubscribe", &c.subscribe) &&
         bind(cupti, "cuptiEnableDomain", &c.enable_domain) && bind(cupti, "cuptiUnsubscribe", &c.unsubscribe) &&
         bind(cupti, "cuptiActivityRegisterCallbacks", &c.register_callbacks) &&
         bind(cupti, "cuptiActivityRegisterTimestampCallback", &c.register_clock) &&
         bind(cupti, "cuptiActivityEnable", &c.enable) && bind(cupti, "cuptiActivityDisable", &c.disable) &&
         bind(cupti, "cuptiActivityFlushAll", &c.flush_all) && bind(cupti, "cuptiFinalize", &c.finalize) &&
         bind(cupti, "fake_cupti_enabled", &c.enabled) && bind(cupti, "fake_cupti_subscribe_count", &c.subscribes) &&
         bind(cupti, "fake_cupti_restart_correlation_ids", &c.restart) &&
         bind(Library(), "roctx_utils_kernel_stats_get", &c.stats_get) &&
         bind(Library(), "roctx_utils_kernels_handover", &c.handover) &&
         bind(Library(), "roctx_utils_kernels_reclaim", &c.reclaim) &&
         bind(cupti, "fake_cupti_api_records_on", &c.records_on) &&
         bind(cupti, "fake_cupti_call_without_gpu_work", &c.call_without_gpu_work);
  return c;
}

// The tests of sharing CUPTI with another profiler: XLA's client, the fake CUPTI as the other
// profiler sees it, a session started.
// ROCTX_UTILS_CUPTI_API=all: every call's API record is kept.
bool AllApiRecords() {
  const char* v = std::getenv("ROCTX_UTILS_CUPTI_API");
  return v != nullptr && std::string(v) == "all";
}

class CuptiSharing : public NvtxInjection {
 protected:
  void SetUp() override {
    NvtxInjection::SetUp();
    Client& c = Xla();
    push = c.get<int (*)(const char*)>(c.core, kRangePushA);
    pop = c.get<int (*)()>(c.core, kRangePop);
    push("start-up");  // the first call starts CUPTI (when these tests run alone)
    pop();
    cu = BindCupti();
    ASSERT_TRUE(cu.ok);
    Start();
    t0 = BoottimeNs();
  }
  Cupti cu;
  int (*push)(const char*) = nullptr;
  int (*pop)() = nullptr;
  uint64_t t0 = 0;  // fake device times count from here
};

namespace xla_like {
// Atomic: CUPTI (the fake as the real one) runs this callback on whichever thread flushes, the
// test's or our watch thread's (TSan saw the two race on a plain counter).
std::atomic<uint64_t> g_records{0};
void Requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}
void Completed(void*, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (valid > 0) ++g_records;
  free(buffer);  // XLA frees whatever buffer it is handed, ours included
}
}  // namespace xla_like

TEST_F(CuptiSharing, AProfilerTakingCuptiOverLeavesOursAloneCountsWhatItSawAndWeResumeAfterItsFinalize) {
  const int subscribes_before = cu.subscribes();
  roctx_utils_kernel_stats before{sizeof(before)};
  ASSERT_EQ(cu.stats_get(&before), ROCTX_UTILS_OK);
  push("before_the_trace");
  cu.launch("kernel_before", t0 + 1000, t0 + 2000, 0, 7, 1, 32);
  pop();
  usleep(300 * 1000);  // a few watch periods: delivered to us without any flush of ours
  push("at_the_takeover");
  cu.launch("kernel_at_takeover", t0 + 3000, t0 + 4000, 0, 7, 1, 32);  // still in CUPTI's buffer
  pop();
  // XLA's CuptiTracer::Enable ... Disable.
  void* subscriber = nullptr;
  ASSERT_EQ(cu.subscribe(&subscriber, nullptr, nullptr), 0) << "we never subscribed: XLA's subscribe succeeds";
  EXPECT_EQ(cu.enable_domain(1, subscriber, 2), 0);
  ASSERT_EQ(cu.register_callbacks(xla_like::Requested, xla_like::Completed), 0);
  for (int kind : {10, 1, 22, 2}) cu.enable(kind);
  for (int i = 0; i < 3; ++i) cu.launch("kernel_in_xla_trace", t0 + 5000 + i * 1000, t0 + 5500 + i * 1000, 0, 7, 1, 32);
  for (int kind : {10, 1, 22, 2}) cu.disable(kind);
  EXPECT_EQ(cu.flush_all(1), 0);
  EXPECT_EQ(cu.unsubscribe(subscriber), 0);
  EXPECT_EQ(cu.finalize(), 0);
  EXPECT_GE(xla_like::g_records.load(), 1u) << "XLA got its trace";
  // Ours sets CUPTI up again by itself within a watch period or two.
  for (int i = 0; i < 100 && !cu.enabled(10); ++i) usleep(10 * 1000);
  EXPECT_EQ(cu.enabled(10), 1) << "tracing resumed after the other profiler's finalize";
  push("after_the_trace");
  cu.launch("kernel_after", t0 + 20000, t0 + 21000, 0, 7, 1, 32);
  pop();
  usleep(500);
  roctx_utils_kernel_stats after{sizeof(after)};
  ASSERT_EQ(cu.stats_get(&after), ROCTX_UTILS_OK);
  const std::string json = StopAsChrome("takeover.json");
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(Count(json, "\"name\":\"kernel_before\""), 1u) << "delivered before the takeover: ours\n" << json;
  EXPECT_EQ(Count(json, "\"name\":\"kernel_after\""), 1u) << "traced again after it\n" << json;
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"after_the_trace\""), 2u) << "and joined to its range\n" << json;
  EXPECT_EQ(Count(json, "kernel_in_xla_trace"), 0u) << json;
  // The call at the takeover and XLA's three went to XLA: counted by their correlation ids.
  EXPECT_EQ(after.not_seen - before.not_seen, 4u);
  EXPECT_EQ(cu.subscribes(), subscribes_before + 1) << "only XLA subscribed";
}

// The same takeover, but the host hands CUPTI over first and says when it is done, as the
// Python package does around jax.profiler.start_trace / stop_trace: nothing of ours is left in
// CUPTI for XLA to take, only XLA's own three calls are missed, and we wait for its finalize.
TEST_F(CuptiSharing, FlushedBeforeATakeoverNothingOfOursGoesToTheOtherProfiler) {
  push("right_before_the_trace");
  cu.launch("kernel_right_before", t0 + 1000, t0 + 2000, 0, 7, 1, 32);  // in CUPTI's buffer
  pop();
  roctx_utils_kernel_stats before{sizeof(before)};
  ASSERT_EQ(cu.stats_get(&before), ROCTX_UTILS_OK);
  ASSERT_EQ(cu.handover(), ROCTX_UTILS_OK);  // start_trace's hook
  EXPECT_EQ(cu.enabled(10), 0) << "our kinds are off while XLA traces";
  EXPECT_EQ(cu.records_on(2, 17), 1) << "the other profiler gets a record of every call, cudaGetDevice too";
  EXPECT_EQ(cu.records_on(1, 12), 1);
  ASSERT_EQ(cu.register_callbacks(xla_like::Requested, xla_like::Completed), 0);
  for (int kind : {10, 1, 22, 2}) cu.enable(kind);
  for (int i = 0; i < 3; ++i) cu.launch("kernel_in_xla_trace", t0 + 5000 + i * 1000, t0 + 5500 + i * 1000, 0, 7, 1, 32);
  for (int kind : {10, 1, 22, 2}) cu.disable(kind);
  EXPECT_EQ(cu.flush_all(1), 0);
  // stop_trace's hook, before XLA's finalize: nobody traces, so CUPTI is ours at once; XLA's
  // finalize then takes it again, and the watch takes it back after that.
  EXPECT_EQ(cu.reclaim(), ROCTX_UTILS_OK);
  EXPECT_EQ(cu.enabled(10), 1);
  EXPECT_EQ(cu.finalize(), 0);
  for (int i = 0; i < 100 && !cu.enabled(10); ++i) usleep(10 * 1000);
  ASSERT_EQ(cu.enabled(10), 1);
  if (!AllApiRecords()) EXPECT_EQ(cu.records_on(2, 17), 0) << "ours again: launches only";
  push("after_the_trace");
  cu.launch("kernel_after", t0 + 20000, t0 + 21000, 0, 7, 1, 32);
  pop();
  roctx_utils_kernel_stats after{sizeof(after)};
  ASSERT_EQ(cu.stats_get(&after), ROCTX_UTILS_OK);
  const std::string json = StopAsChrome("flushed_takeover.json");
  EXPECT_EQ(Count(json, "\"name\":\"kernel_right_before\""), 1u) << "flushed to us before the takeover\n" << json;
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"right_before_the_trace\""), 2u) << json;
  EXPECT_EQ(Count(json, "\"name\":\"kernel_after\""), 1u) << json;
  EXPECT_EQ(Count(json, "kernel_in_xla_trace"), 0u) << json;
  EXPECT_EQ(after.not_seen - before.not_seen, 3u) << "only XLA's own three calls";
}

// Kineto (torch.profiler) takes CUPTI and stops without cuptiFinalize. The host handed CUPTI over
// before it (roctx_utils_kernels_handover: our kinds off, the watch waiting) and says when it is
// done (roctx_utils_kernels_reclaim, after torch.profiler); we trace again. The correlation ids
// went on, so the calls Kineto saw are counted.
TEST_F(CuptiSharing, AProfilerThatStopsWithoutFinalizeIsReclaimedWhenTheHostSaysSo) {
  roctx_utils_kernel_stats before{sizeof(before)};
  ASSERT_EQ(cu.stats_get(&before), ROCTX_UTILS_OK);
  ASSERT_EQ(cu.handover(), ROCTX_UTILS_OK);  // torch.profiler's prepare hook
  // Kineto's prepare/start ... stop: its callbacks, its kinds, then disabled; no finalize.
  ASSERT_EQ(cu.register_callbacks(xla_like::Requested, xla_like::Completed), 0);
  for (int kind : {10, 1, 2}) cu.enable(kind);
  cu.launch("kernel_in_kineto", t0 + 1000, t0 + 2000, 0, 7, 1, 32);
  cu.launch("kernel_in_kineto", t0 + 3000, t0 + 4000, 0, 7, 1, 32);
  for (int kind : {10, 1, 2}) cu.disable(kind);
  EXPECT_EQ(cu.flush_all(1), 0);
  usleep(50 * 1000);  // ten watch periods: handed over, so the watch waits
  EXPECT_EQ(cu.enabled(10), 0) << "the watch does not take CUPTI back before the host says so";
  EXPECT_EQ(cu.reclaim(), ROCTX_UTILS_OK);
  EXPECT_EQ(cu.enabled(10), 1) << "traced again once the host said so";
  push("after_torch_profiler");
  cu.launch("kernel_after", t0 + 20000, t0 + 21000, 0, 7, 1, 32);
  pop();
  roctx_utils_kernel_stats after{sizeof(after)};
  ASSERT_EQ(cu.stats_get(&after), ROCTX_UTILS_OK);
  const std::string json = StopAsChrome("reclaimed.json");
  EXPECT_EQ(Count(json, "\"name\":\"kernel_after\""), 1u) << json;
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"after_torch_profiler\""), 2u) << json;
  EXPECT_EQ(Count(json, "kernel_in_kineto"), 0u) << json;
  EXPECT_EQ(after.not_seen - before.not_seen, 2u) << "Kineto's two calls, counted by their ids";
}

// A profiler that traces with a clock of its own, without any finalize (what Kineto's stamps
// look like to us): every kind off, its clock, its callbacks, its kinds; later every kind off
// again. While it traces, CUPTI refuses our clock, so the watch leaves it alone (taking CUPTI
// back then would empty its trace); once every kind is off, CUPTI takes our clock again and the
// watch resumes by itself.
namespace kineto_like {
uint64_t Clock() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}
}  // namespace kineto_like

TEST_F(CuptiSharing, AProfilerWithItsOwnClockIsNeverRobbedAndWeResumeWhenItsKindsAreOff) {
  roctx_utils_kernel_stats before{sizeof(before)};
  ASSERT_EQ(cu.stats_get(&before), ROCTX_UTILS_OK);  // the host's flush before it starts
  const int all_kinds[] = {10, 5, 4, 1, 22, 2};
  for (int kind : all_kinds) cu.disable(kind);
  ASSERT_EQ(cu.register_clock(kineto_like::Clock), 0);
  ASSERT_EQ(cu.register_callbacks(xla_like::Requested, xla_like::Completed), 0);
  for (int kind : {10, 5, 1, 2}) cu.enable(kind);
  const uint64_t records = xla_like::g_records.load();
  cu.launch("kernel_in_kineto", t0 + 1000, t0 + 2000, 0, 7, 1, 32);
  usleep(60 * 1000);  // a dozen watch periods while it traces
  EXPECT_EQ(cu.enabled(10), 1);
  cu.launch("kernel_in_kineto", t0 + 3000, t0 + 4000, 0, 7, 1, 32);
  EXPECT_EQ(cu.flush_all(1), 0);
  EXPECT_GT(xla_like::g_records.load(), records) << "its records went to it, not to us";
  for (int kind : all_kinds) cu.disable(kind);
  for (int i = 0; i < 100 && !cu.enabled(10); ++i) usleep(10 * 1000);
  ASSERT_EQ(cu.enabled(10), 1) << "every kind off: CUPTI took our clock, and we traced again";
  push("after_kineto");
  cu.launch("kernel_after", t0 + 20000, t0 + 21000, 0, 7, 1, 32);
  pop();
  roctx_utils_kernel_stats after{sizeof(after)};
  ASSERT_EQ(cu.stats_get(&after), ROCTX_UTILS_OK);
  const std::string json = StopAsChrome("own_clock.json");
  EXPECT_EQ(Count(json, "kernel_in_kineto"), 0u) << json;
  EXPECT_EQ(Count(json, "\"name\":\"kernel_after\""), 1u) << json;
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"after_kineto\""), 2u) << "on our clock again\n" << json;
  EXPECT_EQ(after.not_seen - before.not_seen, 2u) << "its two calls, counted by their ids";
}

// CUDA 13.0's finalize starts correlation ids over at 1 (measured): after the resume, a new
// launch reuses an id an old one had, and must still join its own launch, not the old one; the
// number of calls missed is then unknown (not guessed: not_seen stays as it was).
TEST_F(CuptiSharing, AfterAFinalizeThatRestartsCorrelationIdsNewKernelsJoinTheirOwnLaunches) {
  roctx_utils_kernel_stats before{sizeof(before)};
  ASSERT_EQ(cu.stats_get(&before), ROCTX_UTILS_OK);
  push("old_range");
  const uint32_t old_id = cu.launch("old_kernel", t0 + 1000, t0 + 2000, 0, 7, 1, 32);
  pop();
  usleep(300 * 1000);  // delivered to us
  // Another client finalizes (its own session elided), and the ids start over.
  EXPECT_EQ(cu.finalize(), 0);
  cu.restart();
  for (int i = 0; i < 100 && !cu.enabled(10); ++i) usleep(10 * 1000);
  ASSERT_EQ(cu.enabled(10), 1) << "resumed";
  push("new_range");
  uint32_t new_id = 0;
  // Launch until an id the old launch had comes round again (ids start at 1).
  static const char* const kNew = "new_kernel";
  for (int i = 0; i < 100000 && new_id != old_id; ++i) {
    new_id = cu.launch(kNew, t0 + 10000 + i, t0 + 10001 + i, 0, 7, 1, 32);
  }
  pop();
  ASSERT_EQ(new_id, old_id) << "the fake's ids started over";
  roctx_utils_kernel_stats after{sizeof(after)};
  ASSERT_EQ(cu.stats_get(&after), ROCTX_UTILS_OK);
  const std::string json = StopAsChrome("restart.json");
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"old_range\""), 2u) << "the range and its one kernel";
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"new_range\""), Count(json, "\"name\":\"new_kernel\"") + 1)
      << "every new kernel under the new range, none under the old one";
  EXPECT_EQ(after.not_seen, before.not_seen) << "a restart says nothing of how many were missed";
}

// ROCTX_UTILS_COPIES=0 (nvtx_injection_copies_off_test): kernels traced, copies and sets not.
// ggml-cuda makes a dozen runtime and driver calls per op and one launch: only the calls that
// put work on the GPU make API records (cuptiActivityEnableRuntimeApi/DriverApi, by the names
// cuptiGetCallbackName gives), and every kernel, copy and set still joins its launch.
TEST_F(CuptiSharing, OnlyTheCallsThatEnqueueGpuWorkMakeApiRecordsAndEverythingStillJoins) {
  const bool all = AllApiRecords();
  for (auto [domain, cbid] : {std::pair<uint32_t, uint32_t>{2, 211}, {2, 41}, {2, 51}, {2, 311}, {1, 307}, {1, 306}, {1, 216}, {1, 514}}) {
    EXPECT_EQ(cu.records_on(domain, cbid), 1) << "domain " << domain << " cbid " << cbid;
  }
  EXPECT_EQ(cu.records_on(2, 17), all ? 1 : 0) << "cudaGetDevice";
  EXPECT_EQ(cu.records_on(1, 12), all ? 1 : 0) << "cuDeviceGet";
  EXPECT_EQ(cu.records_on(2, 300), all ? 1 : 0) << "any other runtime function";
  roctx_utils_kernel_stats before{sizeof(before)};
  ASSERT_EQ(cu.stats_get(&before), ROCTX_UTILS_OK);
  for (int op = 0; op < 20; ++op) {
    push(op % 2 ? "odd_op" : "even_op");
    for (int i = 0; i < 5; ++i) cu.call_without_gpu_work();
    cu.launch(op % 2 ? "odd_kernel" : "even_kernel", t0 + 1000 + op * 2000, t0 + 2000 + op * 2000, 0, 7, 1, 32);
    pop();
  }
  usleep(500);
  const std::string json = StopAsChrome("launch_records_only.json");  // flushed and joined
  roctx_utils_kernel_stats after{sizeof(after)};
  ASSERT_EQ(cu.stats_get(&after), ROCTX_UTILS_OK);
  EXPECT_EQ(Count(json, "\"name\":\"odd_kernel\""), 10u) << json;
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"odd_op\""), 20u) << "10 ranges and their 10 kernels\n" << json;
  EXPECT_EQ(Count(json, "\"nvtx_range\":\"even_op\""), 20u) << json;
  EXPECT_EQ(after.unjoined, before.unjoined) << "every kernel found its launch record";
  EXPECT_EQ(after.not_seen, before.not_seen) << "a call without a record is not a call another profiler took";
}

TEST_F(NvtxInjection, CopiesOffTracesKernelsOnly) {
  const char* copies = std::getenv("ROCTX_UTILS_COPIES");
  if (copies == nullptr || std::string(copies) != "0") GTEST_SKIP() << "only with ROCTX_UTILS_COPIES=0";
  Client& c = Xla();
  c.get<int (*)(const char*)>(c.core, kRangePushA)("start-up");  // the first call starts CUPTI
  c.get<int (*)()>(c.core, kRangePop)();
  void* cupti = dlopen(std::getenv("ROCTX_UTILS_CUPTI_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cupti, nullptr);
  auto enabled = reinterpret_cast<int (*)(int)>(dlsym(cupti, "fake_cupti_enabled"));
  ASSERT_NE(enabled, nullptr);
  Start();
  EXPECT_EQ(enabled(10), 1);
  for (int kind : {1, 2, 22}) EXPECT_EQ(enabled(kind), 0) << "kind " << kind;
  StopAsChrome("copies_off.json");
}

}  // namespace
