//===- Modules.h - composable layers in the style of torch.nn ---*- C++ -*-===//
//
// A Module owns the parameters it creates in its constructor, named
// `<path>.<name>` where the path is the chain of module names from the
// top (`h.0.attn.c_attn.weight`), and builds its ops when called. Modules
// compose by holding other modules; errors name the module path.
//
//   Linear fc(graph, "c_fc", 768, 3072);      // params c_fc.weight, c_fc.bias
//   Tensor y = fc(x);                          // (B, T, 768) -> (B, T, 3072)
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODULES_H
#define ANVIL_FRONTEND_MODULES_H

#include "anvil/Frontend/Ops.h"

#include <memory>
#include <vector>

namespace anvil::frontend {

class Module;

/// Where a module is created: below the graph's current scope (a top-level
/// module) or below a parent module (`Linear fc(*this, "c_fc", ...)` inside
/// a module's constructor).
struct Within {
  Within(Graph &graph) : graph(graph), path(graph.path()) {}
  Within(const Module &parent);
  Graph &graph;
  std::string path;
};

class Module {
public:
  /// A module named `name` at `at`: its path is `<at.path>.<name>`.
  Module(Within at, llvm::StringRef name);
  virtual ~Module() = default;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// The full path, e.g. "h.0.attn".
  const std::string &path() const { return path_; }
  Graph &graph() const { return graph_; }

protected:
  /// A parameter `<path>.<name>`.
  Tensor param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
               mlir::anvil::InitializerAttr init,
               std::optional<bool> trainable = std::nullopt);
  /// A buffer `<path>.<name>` (see Graph::buffer).
  Tensor buffer(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                mlir::anvil::InitializerAttr init, mlir::Type elementType = {});
  /// Enters this module's scope: ops get its path as location, child modules
  /// constructed meanwhile are named below it.
  Graph::Scope enter() const {
    return Graph::Scope(graph_, Graph::Scope::Absolute{}, path_);
  }
  /// Fails with this module's path.
  [[noreturn]] void fail(const llvm::Twine &message) const;

private:
  Graph &graph_;
  std::string path_;
};

/// Low-rank adapters (LoRA, Hu et al. 2021): `y += (alpha / rank) x A^T B^T`
/// with trainable `lora_A.weight (rank, in)` (Kaiming uniform) and
/// `lora_B.weight (out, rank)` (zeros, so training starts from the base
/// model), named as in Hugging Face PEFT.
struct LoRA {
  int64_t rank = 0; ///< 0: no adapter.
  double alpha = 0; ///< 0 means alpha = rank (scale 1).
};

/// `y = x @ weight + bias` with weight `(in, out)` (the layout of GPT-2's
/// checkpoints), or `(out, in)` with `transposedWeight` (torch.nn.Linear),
/// plus an optional LoRA adapter.
class Linear : public Module {
public:
  struct Options {
    bool bias = true;
    bool transposedWeight = false;
    /// Standard deviation of the normal initializer of the weight.
    double initStd = 0.02;
    LoRA lora;
  };
  Linear(Within at, llvm::StringRef name, int64_t in, int64_t out,
         Options options);
  Linear(Within at, llvm::StringRef name, int64_t in, int64_t out)
      : Linear(at, name, in, out, Options()) {}
  Tensor operator()(Tensor x) const;

  Tensor weight, bias;
  Tensor loraA, loraB; ///< Set when options.lora.rank > 0.
  int64_t in, out;
  Options options;
};

/// A `(count, dim)` table looked up by integer indices.
class Embedding : public Module {
public:
  Embedding(Within at, llvm::StringRef name, int64_t count, int64_t dim,
            double initStd = 0.02);
  Tensor operator()(Tensor indices) const;

  Tensor weight;
};

/// Layer normalization over the last dimension, with weight and bias.
class LayerNorm : public Module {
public:
  LayerNorm(Within at, llvm::StringRef name, int64_t dim, double epsilon = 1e-5,
            bool bias = true);
  Tensor operator()(Tensor x) const;

  Tensor weight, bias;
  double epsilon;
};

/// RMS normalization over the last dimension, with a weight.
class RMSNorm : public Module {
public:
  RMSNorm(Within at, llvm::StringRef name, int64_t dim, double epsilon = 1e-5);
  Tensor operator()(Tensor x) const;

  Tensor weight;
  double epsilon;
};

/// Dropout with a fresh mask per call site: call k uses the seed
/// `seed * 2^16 + k` (at most 2^16 sites), so masks differ across sites and
/// across steps that advance the seed input. Rate 0 is the identity.
class Dropout {
public:
  Dropout() = default;
  Dropout(Tensor seed, double rate) : seed_(seed), rate_(rate) {}
  Tensor operator()(Tensor x);
  double rate() const { return rate_; }

private:
  static constexpr int64_t kMaxSites = int64_t(1) << 16;
  Tensor seed_;
  double rate_ = 0.0;
  int64_t calls_ = 0;
};

/// GPT-2's MLP: c_fc (C -> hidden), GELU (tanh), c_proj (hidden -> C).
class MLP : public Module {
public:
  MLP(Within at, llvm::StringRef name, int64_t dim, int64_t hidden,
      double projInitStd);
  Tensor operator()(Tensor x) const;

  Linear fc, proj;
};

/// Multi-head causal self-attention on (B, T, C) with a fused qkv
/// projection (c_attn) and an output projection (c_proj). With fewer
/// key/value heads than query heads it is grouped-query attention.
class CausalSelfAttention : public Module {
public:
  CausalSelfAttention(Within at, llvm::StringRef name, int64_t dim,
                      int64_t heads, int64_t kvHeads, double projInitStd,
                      LoRA qkvLora = {}, LoRA projLora = {});
  Tensor operator()(Tensor x) const;

  int64_t dim, heads, kvHeads, headDim;
  Linear qkv, proj;
};

/// A pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x)),
/// with residual dropout.
class TransformerBlock : public Module {
public:
  struct Config {
    int64_t dim, heads, kvHeads, mlpHidden;
    double projInitStd;
    double layerNormEpsilon = 1e-5;
    /// Adapters on the attention's c_attn and c_proj.
    LoRA qkvLora = {}, projLora = {};
  };
  TransformerBlock(Within at, llvm::StringRef name, const Config &config);
  Tensor operator()(Tensor x, Dropout &dropout) const;

  LayerNorm ln1;
  CausalSelfAttention attn;
  LayerNorm ln2;
  MLP mlp;
};

/// An N-d convolution with symmetric padding, Kaiming-uniform weight
/// `(out, in/groups, kernel...)` and a zero bias.
class Conv : public Module {
public:
  struct Options {
    std::vector<int64_t> stride, padding, dilation; // empty: 1, 0, 1
    int64_t groups = 1;
    bool bias = true;
  };
  Conv(Within at, llvm::StringRef name, int64_t in, int64_t out,
       llvm::ArrayRef<int64_t> kernel, Options options);
  Tensor operator()(Tensor x) const;

  Tensor weight, bias;
  Options options;
};

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_MODULES_H
