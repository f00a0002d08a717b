// A llama.cpp MoE decode step without a model file (issue 28): LAYERS MoE FFN layers built as
// llama.cpp builds them (RMS_NORM, router MUL_MAT, SOFT_MAX, argsort top-k, GET_ROWS of the
// weights, gate and up MUL_MAT_IDs, SwiGLU, down MUL_MAT_ID, the weighted sum of the experts,
// the residual ADD), q4_K experts of Qwen3-30B-A3B's shape (2048 x 768, 128 experts, 8 used),
// computed as one graph per step on CUDA0 and timed. test-backend-ops gives each MUL_MAT_ID its
// own leaf ids; here the three of a layer read one router's output, as in a model, so the
// hook's MoE read-back makes one copy per layer. Run it with and without GGML_ROOFLINE_OUT
// (scripts/nvidia/moe_layer.sh does, next to CUPTI's own tracing).
//
//   g++ -O2 -std=c++17 -I<ggml>/include scripts/nvidia/moe_layer.cpp -o moe_layer
//       .devbin/ggml/libggml.so.0 .devbin/ggml/libggml-base.so.0 -Wl,--allow-shlib-undefined
//   (the CUDA runtime and cuBLAS that ggml-cuda needs are the device's, found at run time)
//   ./moe_layer [LAYERS=8] [TOKENS=1] [STEPS=2000] [shared|separate|dense]
//
// `dense` instead of shared|separate (issue 42) builds LAYERS dense decoder layers as llama.cpp
// builds a Llama-3.2-1B-shaped one instead: RMS_NORM and its weight, the Q, K and V MUL_MATs,
// ROPE of Q and K, K and V written into an f16 cache (CPY), the attention over 1,024 cached
// positions (the K view times Q, SOFT_MAX, V times the scores, 32 heads over 8 KV heads), the O
// projection, the residual ADD, then the FFN (RMS_NORM, gate and up MUL_MATs, SwiGLU, down) and
// its ADD; q4_K weights, hidden 2048, FFN 8192.
//
// Prints "moe_layer: LAYERS layers, TOKENS tokens, ids shared, N graph nodes: X us/step, Y
// us/layer" (median of 5 blocks of STEPS/5 steps, after 20 steps of warm-up), then the fastest
// and slowest block; "ids dense" for the dense layers.
// MOE_LAYER_BACKEND=CPU runs it without a GPU (a check of the program, not a measurement). The
// expert weights are random q4_K blocks with small scales: the routing and the kernels' work
// are a model's, the numbers are not.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

namespace {

constexpr int kEmbd = 2048, kFf = 768, kExperts = 128, kUsed = 8;
// The dense layer: 32 heads of 64 over 8 KV heads, FFN 8192, a 1,024-position cache of which
// the step's tokens are written from position 256.
constexpr int kHeadDim = 64, kHeads = 32, kKvHeads = 8, kDenseFf = 8192, kCtx = 1024, kPos0 = 256;

struct Layer {
  ggml_tensor *router, *up, *gate, *down;
  // Dense only.
  ggml_tensor *wq, *wk, *wv, *wo, *attn_norm, *ffn_norm, *k_cache, *v_cache;
};

// What llama.cpp computes for one dense decoder layer (llm_build_llama): attention with the KV
// cache written in the graph, then the SwiGLU FFN, each with its residual.
ggml_tensor* DenseBlock(ggml_context* ctx, ggml_cgraph* gf, const Layer& l, ggml_tensor* x, ggml_tensor* pos, int tokens) {
  const int kv = kHeadDim * kKvHeads;
  ggml_tensor* h = ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-5f), l.attn_norm);
  ggml_tensor* q = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, l.wq, h), kHeadDim, kHeads, tokens);
  ggml_tensor* k = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, l.wk, h), kHeadDim, kKvHeads, tokens);
  ggml_tensor* v = ggml_mul_mat(ctx, l.wv, h);  // [kv, tokens]
  q = ggml_rope_ext(ctx, q, pos, nullptr, kHeadDim, 0, 8192, 500000.f, 1.f, 0.f, 1.f, 32.f, 1.f);
  k = ggml_rope_ext(ctx, k, pos, nullptr, kHeadDim, 0, 8192, 500000.f, 1.f, 0.f, 1.f, 32.f, 1.f);
  // The cache writes: K rows at [kPos0, kPos0 + tokens), V transposed (llama.cpp's v_trans).
  ggml_tensor* k_dst = ggml_view_1d(ctx, l.k_cache, static_cast<int64_t>(kv) * tokens, ggml_row_size(l.k_cache->type, kv) * kPos0);
  ggml_tensor* v_dst = ggml_view_2d(ctx, l.v_cache, tokens, kv, l.v_cache->nb[1], ggml_element_size(l.v_cache) * kPos0);
  // In the graph before the attention that reads the cache (llama.cpp expands them first too).
  ggml_build_forward_expand(gf, ggml_cpy(ctx, k, k_dst));
  ggml_build_forward_expand(gf, ggml_cpy(ctx, ggml_transpose(ctx, v), v_dst));
  ggml_tensor* keys = ggml_view_3d(ctx, l.k_cache, kHeadDim, kCtx, kKvHeads, l.k_cache->nb[1], ggml_row_size(l.k_cache->type, kHeadDim), 0);
  ggml_tensor* values = ggml_view_3d(ctx, l.v_cache, kCtx, kHeadDim, kKvHeads, l.v_cache->nb[1], l.v_cache->nb[1] * kHeadDim, 0);
  ggml_tensor* kq = ggml_mul_mat(ctx, keys, ggml_permute(ctx, q, 0, 2, 1, 3));  // [ctx, tokens, heads]
  kq = ggml_soft_max_ext(ctx, kq, nullptr, 1.f / 8.f, 0.f);
  ggml_tensor* kqv = ggml_mul_mat(ctx, values, kq);  // [head_dim, tokens, heads]
  ggml_tensor* o = ggml_cont_2d(ctx, ggml_permute(ctx, kqv, 0, 2, 1, 3), kEmbd, tokens);
  x = ggml_add(ctx, x, ggml_mul_mat(ctx, l.wo, o));
  h = ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-5f), l.ffn_norm);
  ggml_tensor* act = ggml_swiglu_split(ctx, ggml_mul_mat(ctx, l.gate, h), ggml_mul_mat(ctx, l.up, h));
  return ggml_add(ctx, x, ggml_mul_mat(ctx, l.down, act));
}

// What llama.cpp computes for one MoE FFN layer: the norm, build_moe_ffn (softmax gating,
// SwiGLU, weights after the down projection), the residual.
// separate: each MUL_MAT_ID reads its own copy of the ids (a CONT of the router's top-k), so
// the hook copies them three times per layer, as test-backend-ops' cases make it do.
ggml_tensor* MoeBlock(ggml_context* ctx, const Layer& l, ggml_tensor* x, int tokens, bool separate) {
  ggml_tensor* h = ggml_rms_norm(ctx, x, 1e-6f);  // the FFN norm: every layer's input at unit scale
  ggml_tensor* logits = ggml_mul_mat(ctx, l.router, h);                          // [experts, tokens]
  ggml_tensor* probs = ggml_soft_max(ctx, logits);                               // [experts, tokens]
  ggml_tensor* selected = ggml_argsort_top_k(ctx, probs, kUsed);                 // [used, tokens] i32
  ggml_tensor* weights = ggml_get_rows(ctx, ggml_reshape_3d(ctx, probs, 1, kExperts, tokens), selected);
  ggml_tensor* cur = ggml_reshape_3d(ctx, h, kEmbd, 1, tokens);
  auto ids = [&] { return separate ? ggml_cont(ctx, selected) : selected; };
  ggml_tensor* up = ggml_mul_mat_id(ctx, l.up, cur, ids());                      // [ff, used, tokens]
  ggml_tensor* gate = ggml_mul_mat_id(ctx, l.gate, cur, ids());
  ggml_tensor* act = ggml_swiglu_split(ctx, gate, up);
  ggml_tensor* experts = ggml_mul_mat_id(ctx, l.down, act, ids());               // [embd, used, tokens]
  experts = ggml_mul(ctx, experts, weights);
  ggml_tensor* out = nullptr;
  for (int i = 0; i < kUsed; ++i) {
    ggml_tensor* e = ggml_view_2d(ctx, experts, kEmbd, tokens, experts->nb[2], i * experts->nb[1]);
    out = out ? ggml_add(ctx, out, e) : e;
  }
  return ggml_add(ctx, x, out);
}

// Random q4_K blocks (d, dmin, 12 scale bytes, 128 quant bytes) of zero-mean weights: each
// sub-block's 6-bit min equals its scale and dmin = 7.5 d, so a weight is d * scale * (q - 7.5)
// for its random 4-bit q, and d = 2^-12 keeps 8 layers' activations within a few hundred (CPU,
// f32: MoE 11, dense 392). Until 2026-12-08 every weight had one sign (d = dmin = 2^-10, random
// mins): the sums grew coherently to 7e7 in 8 layers, overflowed the f16 of the prefill's
// cuBLAS GEMMs, and at 512 tokens every output was inf or NaN and the routing read NaN logits.
// The scale bytes as ggml's get_scale_min_k4 reads them: bytes 0-3 hold sub-blocks 0-3's scales
// (low 6 bits) and 4-7 their mins, so 4-7 copy 0-3 (which also equalises the top 2 bits, the
// high bits of sub-blocks 4-7); bytes 8-11 hold sub-blocks 4-7's scale (low nibble) and min
// (high nibble), so each holds one nibble twice.
std::vector<uint8_t> RandomQ4K(size_t bytes, std::mt19937& rng) {
  std::vector<uint8_t> v(bytes);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  for (size_t block = 0; block + 144 <= bytes; block += 144) {
    uint8_t* b = &v[block];
    b[0] = 0x00, b[1] = 0x0c;  // d: f16 2^-12, little-endian
    b[2] = 0x80, b[3] = 0x17;  // dmin: f16 7.5 * 2^-12
    uint8_t* scales = b + 4;
    for (int j = 0; j < 4; ++j) scales[j + 4] = scales[j];
    for (int j = 8; j < 12; ++j) scales[j] = static_cast<uint8_t>((scales[j] & 0x0f) * 0x11);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const int layers = argc > 1 ? atoi(argv[1]) : 8;
  const int tokens = argc > 2 ? atoi(argv[2]) : 1;
  const int steps = argc > 3 ? atoi(argv[3]) : 2000;
  const bool separate = argc > 4 && strcmp(argv[4], "separate") == 0;
  const bool dense = argc > 4 && strcmp(argv[4], "dense") == 0;
  if (layers < 1 || tokens < 1 || steps < 5 || (dense && kPos0 + tokens > kCtx) ||
      (argc > 4 && !separate && !dense && strcmp(argv[4], "shared") != 0)) {
    fprintf(stderr, "usage: %s [LAYERS>=1] [TOKENS>=1, dense: <=%d] [STEPS>=5] [shared|separate|dense]\n", argv[0], kCtx - kPos0);
    return 2;
  }
  const char* name = getenv("MOE_LAYER_BACKEND") ? getenv("MOE_LAYER_BACKEND") : "CUDA0";  // CPU: a check without a GPU
  ggml_backend_t backend = ggml_backend_init_by_name(name, nullptr);
  if (backend == nullptr) {
    fprintf(stderr, "moe_layer: no %s backend\n", name);
    return 1;
  }

  ggml_init_params wp = {ggml_tensor_overhead() * (12 * layers + 2), nullptr, true};
  ggml_context* wctx = ggml_init(wp);
  std::vector<Layer> ls(layers);
  for (auto& l : ls) {
    if (dense) {
      const int kv = kHeadDim * kKvHeads;
      l.wq = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, kEmbd, kEmbd);
      l.wk = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, kEmbd, kv);
      l.wv = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, kEmbd, kv);
      l.wo = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, kEmbd, kEmbd);
      l.gate = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, kEmbd, kDenseFf);
      l.up = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, kEmbd, kDenseFf);
      l.down = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, kDenseFf, kEmbd);
      l.attn_norm = ggml_new_tensor_1d(wctx, GGML_TYPE_F32, kEmbd);
      l.ffn_norm = ggml_new_tensor_1d(wctx, GGML_TYPE_F32, kEmbd);
      l.k_cache = ggml_new_tensor_2d(wctx, GGML_TYPE_F16, kv, kCtx);
      l.v_cache = ggml_new_tensor_2d(wctx, GGML_TYPE_F16, kCtx, kv);
      continue;
    }
    l.router = ggml_new_tensor_2d(wctx, GGML_TYPE_F32, kEmbd, kExperts);
    l.up = ggml_new_tensor_3d(wctx, GGML_TYPE_Q4_K, kEmbd, kFf, kExperts);
    l.gate = ggml_new_tensor_3d(wctx, GGML_TYPE_Q4_K, kEmbd, kFf, kExperts);
    l.down = ggml_new_tensor_3d(wctx, GGML_TYPE_Q4_K, kFf, kEmbd, kExperts);
  }
  ggml_tensor* x = ggml_new_tensor_2d(wctx, GGML_TYPE_F32, kEmbd, tokens);
  ggml_tensor* pos = ggml_new_tensor_1d(wctx, GGML_TYPE_I32, tokens);
  ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors(wctx, backend);
  if (wbuf == nullptr) {
    fprintf(stderr, "moe_layer: cannot allocate the weights\n");
    return 1;
  }
  std::mt19937 rng(28);
  std::uniform_real_distribution<float> small(-0.05f, 0.05f), unit(-1.f, 1.f);
  const std::vector<uint8_t> q = RandomQ4K(ggml_nbytes(ls[0].up), rng);
  std::vector<float> router(kEmbd * kExperts), input(static_cast<size_t>(kEmbd) * tokens);
  std::vector<int32_t> positions(tokens);
  for (int i = 0; i < tokens; ++i) positions[i] = kPos0 + i;
  ggml_backend_tensor_set(pos, positions.data(), 0, ggml_nbytes(pos));
  for (auto& l : ls) {
    if (dense) {
      // q is the size of up, gate and down, the largest.
      for (ggml_tensor* w : {l.wq, l.wk, l.wv, l.wo, l.gate, l.up, l.down}) ggml_backend_tensor_set(w, q.data(), 0, ggml_nbytes(w));
      const std::vector<float> ones(kEmbd, 1.f);
      ggml_backend_tensor_set(l.attn_norm, ones.data(), 0, ggml_nbytes(l.attn_norm));
      ggml_backend_tensor_set(l.ffn_norm, ones.data(), 0, ggml_nbytes(l.ffn_norm));
      std::vector<ggml_fp16_t> cache(ggml_nelements(l.k_cache));
      for (auto& c : cache) c = ggml_fp32_to_fp16(small(rng));
      ggml_backend_tensor_set(l.k_cache, cache.data(), 0, ggml_nbytes(l.k_cache));
      ggml_backend_tensor_set(l.v_cache, cache.data(), 0, ggml_nbytes(l.v_cache));
      continue;
    }
    for (auto& f : router) f = small(rng);  // each layer routes differently
    ggml_backend_tensor_set(l.router, router.data(), 0, ggml_nbytes(l.router));
    ggml_backend_tensor_set(l.up, q.data(), 0, ggml_nbytes(l.up));
    ggml_backend_tensor_set(l.gate, q.data(), 0, ggml_nbytes(l.gate));
    ggml_backend_tensor_set(l.down, q.data(), 0, ggml_nbytes(l.down));
  }
  for (auto& f : input) f = unit(rng);
  ggml_backend_tensor_set(x, input.data(), 0, ggml_nbytes(x));

  const size_t nodes = 64 * static_cast<size_t>(layers) + 16;
  ggml_init_params gp = {ggml_tensor_overhead() * nodes + ggml_graph_overhead_custom(nodes, false), nullptr, true};
  ggml_context* gctx = ggml_init(gp);
  ggml_cgraph* gf = ggml_new_graph_custom(gctx, nodes, false);
  ggml_tensor* cur = x;
  for (const auto& l : ls) cur = dense ? DenseBlock(gctx, gf, l, cur, pos, tokens) : MoeBlock(gctx, l, cur, tokens, separate);
  ggml_set_output(cur);
  ggml_build_forward_expand(gf, cur);
  ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
  if (!ggml_gallocr_alloc_graph(galloc, gf)) {
    fprintf(stderr, "moe_layer: cannot allocate the graph\n");
    return 1;
  }

  for (int i = 0; i < 20; ++i) ggml_backend_graph_compute(backend, gf);
  std::vector<double> per_step;
  const int block = steps / 5;
  for (int b = 0; b < 5; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < block; ++i) {
      if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "moe_layer: compute failed\n");
        return 1;
      }
    }
    per_step.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / block);
  }
  std::sort(per_step.begin(), per_step.end());
  const double us = per_step[2];
  std::vector<float> out(static_cast<size_t>(kEmbd) * tokens);
  ggml_backend_tensor_get(cur, out.data(), 0, ggml_nbytes(cur));
  size_t finite = std::count_if(out.begin(), out.end(), [](float f) { return std::isfinite(f); });
  float peak = 0.f;
  for (float f : out) peak = std::isfinite(f) ? std::max(peak, std::fabs(f)) : peak;
  // The blocks' spread says whether a slow run was slow throughout (the process's or the host's
  // state while it ran) or in a burst (one block).
  printf("moe_layer: %d layers, %d tokens, ids %s, %d graph nodes: %.2f us/step, %.2f us/layer (%zu of %zu outputs finite, max |x| %.3g; blocks %.2f-%.2f us/layer)\n",
         layers, tokens, dense ? "dense" : separate ? "separate" : "shared", ggml_graph_n_nodes(gf), us, us / layers, finite, out.size(), peak,
         per_step.front() / layers, per_step.back() / layers);
  ggml_gallocr_free(galloc);
  ggml_free(gctx);
  ggml_backend_buffer_free(wbuf);
  ggml_free(wctx);
  ggml_backend_free(backend);
  return 0;
}
