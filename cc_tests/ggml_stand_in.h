// ggml as libggml-base exports it, for the programs that play llama.cpp against the
// ggml_cuda_roofline_* drop-in (ggml_roofline_test.cc, op_scopes_host.cc's ggml build): ggml.h's
// tensor and graph layouts, the five ggml functions the library looks up in the process
// (ggml_op_desc, ggml_type_name, ggml_nbytes, ggml_graph_node, ggml_graph_n_nodes), the hooks'
// declarations, and a tensor maker. The functions are defined here with default visibility, so
// a binary includes this header in one file only and links with -rdynamic.
//
// The op and type enum values are deliberately not ggml's: names must come from these
// functions, never from enum values compiled into the library.
#ifndef ROCTX_UTILS_CC_TESTS_GGML_STAND_IN_H_
#define ROCTX_UTILS_CC_TESTS_GGML_STAND_IN_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <utility>
#include <vector>

// ggml.h's struct ggml_tensor (LP64), as upstream declares it.
struct ggml_tensor {
  int type;
  void* buffer;
  int64_t ne[4];
  size_t nb[4];
  int op;
  int32_t op_params[16];
  int32_t flags;
  ggml_tensor* src[10];
  ggml_tensor* view_src;
  size_t view_offs;
  void* data;
  char name[64];
  void* extra;
  char padding[8];
};
static_assert(sizeof(ggml_tensor) == 336, "ggml_tensor");

struct ggml_cgraph {
  int n_nodes;
  ggml_tensor** nodes;
};

// Our own numbering, unlike ggml's (MUL_MAT is 29 there, f32 is 0, q4_K is 12).
enum { kOpNone = 0, kOpMulMat = 1001, kOpAdd = 1002, kOpRmsNorm = 1003, kOpMulMatId = 1004, kOpArgsort = 1005, kOpView = 1006 };
enum { kF32 = 500, kQ4K = 501, kI32 = 502, kF16 = 503 };

extern "C" {
__attribute__((visibility("default"))) const char* ggml_op_desc(const ggml_tensor* t) {
  switch (t->op) {
    case kOpMulMat: return "MUL_MAT";
    case kOpAdd: return "ADD";
    case kOpRmsNorm: return "RMS_NORM";
    case kOpMulMatId: return "MUL_MAT_ID";
    case kOpArgsort: return "ARGSORT";
    case kOpView: return "VIEW";
    case kOpNone: return "NONE";  // a leaf: ggml's GGML_OP_NONE is 0 too
  }
  return "?";
}
__attribute__((visibility("default"))) const char* ggml_type_name(int type) {
  return type == kF32 ? "f32" : type == kQ4K ? "q4_K" : type == kI32 ? "i32" : type == kF16 ? "f16" : "?";
}
// roofline.md 8: ne[0]*nb[0]/blck + sum_{i>=1} (ne[i]-1)*nb[i] for block types.
__attribute__((visibility("default"))) size_t ggml_nbytes(const ggml_tensor* t) {
  const size_t blck = t->type == kQ4K ? 256 : 1;
  size_t n = t->ne[0] * t->nb[0] / blck;
  for (int i = 1; i < 4; ++i) n += (t->ne[i] - 1) * t->nb[i];
  return n;
}
__attribute__((visibility("default"))) ggml_tensor* ggml_graph_node(ggml_cgraph* g, int i) {
  return g->nodes[i < 0 ? g->n_nodes + i : i];
}
__attribute__((visibility("default"))) int ggml_graph_n_nodes(ggml_cgraph* g) { return g->n_nodes; }

// The drop-in's hooks (roctx_utils_impl).
void ggml_cuda_roofline_init(void);
void ggml_cuda_roofline_set_device(const char* arch);
void ggml_cuda_roofline_reset(void);
void ggml_cuda_roofline_begin_op(const ggml_tensor* node, void* stream);
void ggml_cuda_roofline_fuse_ops(const ggml_cgraph* graph, int node_idx, int node_count);
}

namespace ggml_stand_in {

// A contiguous tensor of `type` with shape `ne` (missing dimensions are 1).
inline ggml_tensor Tensor(int type, std::vector<int64_t> ne, const char* name = "") {
  ggml_tensor t{};
  t.type = type;
  for (int i = 0; i < 4; ++i) t.ne[i] = i < static_cast<int>(ne.size()) ? ne[i] : 1;
  const size_t blck = type == kQ4K ? 256 : 1, block_bytes = type == kQ4K ? 144 : type == kF16 ? 2 : 4;
  t.nb[0] = block_bytes;
  t.nb[1] = t.nb[0] * (t.ne[0] / blck);
  for (int i = 2; i < 4; ++i) t.nb[i] = t.nb[i - 1] * t.ne[i - 1];
  snprintf(t.name, sizeof(t.name), "%s", name);
  return t;
}

// Node `op` of `type` and shape `ne` over `srcs` (src[0], src[1], ...), named `name`.
inline ggml_tensor Node(int op, int type, std::vector<int64_t> ne, std::initializer_list<ggml_tensor*> srcs, const char* name = "") {
  ggml_tensor t = Tensor(type, std::move(ne), name);
  t.op = op;
  int i = 0;
  for (ggml_tensor* s : srcs) t.src[i++] = s;
  return t;
}

}  // namespace ggml_stand_in

#endif  // ROCTX_UTILS_CC_TESTS_GGML_STAND_IN_H_
