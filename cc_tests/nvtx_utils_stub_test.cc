// //:nvtx_utils_stub behaves exactly like upstream's stub, in every configuration.
#include <string>

#include "gtest/gtest.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/range_annotations.h"  // the twin header is include-compatible

namespace tsl::profiler {
namespace {

struct Payload {
  uint64_t NvtxSchemaId() const { return 9; }
};

TEST(NvtxUtilsStub, EverythingIsNeutral) {
  EXPECT_EQ(DefaultProfilerDomain(), nullptr);
  EXPECT_EQ(RegisterString(nullptr, "anything"), nullptr);
  int schema = 0;
  EXPECT_EQ(RegisterSchema(nullptr, &schema), 0u);
  RangePush(nullptr, "a");
  RangePush(nullptr, std::string("b"));
  RangePush(nullptr, nullptr, Payload{});
  RangePush(nullptr, nullptr, "title_text", Payload{});
  RangePop(nullptr);
  RangePop(nullptr);
  RangePop(nullptr);
  RangePop(nullptr);
  NameCurrentThread("t");
  NameDevice(0, "d");
  NameStream(nullptr, "s");
  MarkMemoryInitialized(&schema, sizeof(schema), nullptr);
}

}  // namespace
}  // namespace tsl::profiler
