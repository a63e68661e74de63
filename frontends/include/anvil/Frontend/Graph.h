//===- Graph.h - building anvil-dialect forward graphs from C++ -*- C++ -*-===//
//
// The core of the graph-building API: a `Graph` owns the forward function
// under construction, `Tensor` is a typed handle on one of its values, and
// the free functions in Ops.h add ops. Parameters and inputs become function
// arguments with `anvil.param` / `anvil.input` attributes, in creation order.
//
// Every op is created through the dialect's own result-type inference and
// verifier, so a shape error is reported once, by the dialect, and thrown as
// a BuildError naming the module path that was being built:
//
//   h.0.attn.c_attn: 'anvil.matmul' op contraction sizes differ: ...
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_GRAPH_H
#define ANVIL_FRONTEND_GRAPH_H

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/StringSet.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace anvil::frontend {

/// A model could not be built: a shape or configuration error. The message
/// starts with the module path that caused it.
class BuildError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Graph;

/// A typed handle on a value of the graph under construction.
class Tensor {
public:
  Tensor() = default;
  Tensor(Graph *graph, mlir::Value value) : graph_(graph), value_(value) {}

  explicit operator bool() const { return static_cast<bool>(value_); }
  mlir::Value value() const { return value_; }
  /// The graph this tensor belongs to; throws BuildError for an empty Tensor.
  Graph &graph() const {
    if (!graph_)
      throw BuildError("use of an empty Tensor (one that was never assigned)");
    return *graph_;
  }
  mlir::RankedTensorType type() const {
    return mlir::cast<mlir::RankedTensorType>(value_.getType());
  }
  llvm::ArrayRef<int64_t> shape() const { return type().getShape(); }
  int64_t rank() const { return type().getRank(); }
  /// Size of dimension `i`; negative `i` counts from the end.
  int64_t dim(int64_t i) const;
  mlir::Type elementType() const { return type().getElementType(); }

private:
  Graph *graph_ = nullptr;
  mlir::Value value_;
};

/// Builds one forward function, `func.func @<name>(params..., inputs...)`.
class Graph {
public:
  /// The context must have the anvil and func dialects loaded (or loadable).
  explicit Graph(mlir::MLIRContext &context, llvm::StringRef name = "forward");

  mlir::MLIRContext &context() { return context_; }
  mlir::OpBuilder &builder() { return builder_; }

  /// The default element type of parameters and activations (f32).
  mlir::Type floatType() { return builder_.getF32Type(); }

  /// A batch input named `name`. `range`, when given, says it holds whole
  /// numbers in [0, range) (see #anvil.input).
  Tensor input(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
               mlir::Type elementType,
               std::optional<int64_t> range = std::nullopt);

  /// A parameter named `<current scope>.<name>` (or `name` at top level).
  /// `trainable` defaults to the graph's default (see setDefaultTrainable).
  Tensor parameter(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                   mlir::anvil::InitializerAttr init,
                   std::optional<bool> trainable = std::nullopt);

  /// A buffer named `<current scope>.<name>`: checkpointed like a parameter,
  /// never trained, not counted as one (PyTorch's register_buffer). Its
  /// element type defaults to floatType().
  Tensor buffer(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                mlir::anvil::InitializerAttr init, mlir::Type elementType = {});
  /// Gives `buffer` the value `value` after the step (batch norm's running
  /// statistics): finish() returns it after the results, tied to the
  /// buffer's argument (`anvil.tied_to`). At most one update per buffer.
  void update(Tensor buffer, Tensor value);

  /// Whether parameters are trainable unless said otherwise; false freezes
  /// a base model whose adapters are created with trainable = true.
  void setDefaultTrainable(bool trainable) { defaultTrainable_ = trainable; }

  /// Shorthands for initializers: `init(InitKind::normal, {{"std", 0.02}})`.
  mlir::anvil::InitializerAttr
  init(mlir::anvil::InitKind kind,
       llvm::ArrayRef<std::pair<llvm::StringRef, double>> args = {});

  /// Enters a naming scope for the lifetime of the returned guard: names of
  /// parameters and the locations of ops get the prefix `path.`.
  class Scope {
  public:
    /// Enters `name` below the current scope.
    Scope(Graph &graph, llvm::StringRef name);
    /// Enters the absolute path `path` (a module's own scope).
    struct Absolute {};
    Scope(Graph &graph, Absolute, llvm::StringRef path);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    Graph &graph_;
  };
  /// The current scope path, "" at top level ("h.0.attn").
  const std::string &path() const { return path_.back(); }
  /// `path.name`, or `name` at top level.
  std::string qualify(llvm::StringRef name) const;
  /// The location of ops built now: the scope path as a name location.
  mlir::Location loc();

  /// Creates an op through its own inference and verifier. `resultTypes`
  /// is needed only by ops that do not infer them (reshape, broadcast,
  /// cast, constant). Throws BuildError with the scope path on failure.
  template <typename OpTy>
  mlir::Operation *create(mlir::ValueRange operands,
                          llvm::ArrayRef<mlir::NamedAttribute> attributes = {},
                          mlir::TypeRange resultTypes = {});

  /// Convenience: create a single-result op and wrap its result.
  template <typename OpTy>
  Tensor op(mlir::ValueRange operands,
            llvm::ArrayRef<mlir::NamedAttribute> attributes = {},
            mlir::TypeRange resultTypes = {}) {
    return Tensor(
        this, create<OpTy>(operands, attributes, resultTypes)->getResult(0));
  }

  /// A named attribute for `create`: `attr("dim",
  /// builder.getI64IntegerAttr(1))`.
  mlir::NamedAttribute attr(llvm::StringRef name, mlir::Attribute value) {
    return builder_.getNamedAttr(name, value);
  }

  /// Throws a BuildError "<path>: <message>".
  [[noreturn]] void fail(const llvm::Twine &message) const;

  /// Ends the function with `results` and returns the module holding it,
  /// verified. The Graph cannot be used afterwards.
  mlir::OwningOpRef<mlir::ModuleOp> finish(llvm::ArrayRef<Tensor> results);

  /// Number of parameters created so far (buffers not counted), and their
  /// total elements.
  size_t numParameterTensors() const { return numParams_; }
  int64_t numParameterElements() const { return paramElements_; }

private:
  Tensor addParameter(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                      mlir::anvil::InitializerAttr init, bool trainable,
                      bool buffer, mlir::Type elementType);
  /// Adds a function argument with one attribute; returns it.
  mlir::Value addArgument(mlir::Type type, mlir::NamedAttribute attr);
  /// Fails with the captured diagnostics if `result` failed.
  void check(mlir::LogicalResult result, llvm::StringRef what,
             const std::string &diagnostics) const;

  mlir::MLIRContext &context_;
  mlir::OpBuilder builder_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  mlir::func::FuncOp func_;
  std::vector<std::string> path_{""};
  std::vector<mlir::DictionaryAttr> argAttrs_;
  std::vector<std::pair<mlir::Value, mlir::Value>> updates_; ///< buffer, new
  llvm::StringSet<> names_;
  size_t numParams_ = 0;   ///< Parameters, buffers not counted.
  unsigned paramArgs_ = 0; ///< Parameter and buffer arguments.
  bool defaultTrainable_ = true;
  int64_t paramElements_ = 0;
};

//===----------------------------------------------------------------------===//
// Implementation of Graph::create
//===----------------------------------------------------------------------===//

namespace detail {
/// Collects the messages of diagnostics emitted while it lives.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(mlir::MLIRContext &context);
  const std::string &text() const { return text_; }

private:
  std::string text_;
  mlir::ScopedDiagnosticHandler handler_;
};
} // namespace detail

template <typename OpTy>
mlir::Operation *Graph::create(mlir::ValueRange operands,
                               llvm::ArrayRef<mlir::NamedAttribute> attributes,
                               mlir::TypeRange resultTypes) {
  mlir::Location location = loc();
  for (mlir::Value v : operands)
    if (!v || v.getParentBlock() != &func_.getBody().front())
      fail(llvm::Twine("an operand of '") + OpTy::getOperationName() + "' is " +
           (v ? "a value of another graph" : "empty"));
  detail::DiagnosticCapture capture(context_);
  mlir::OperationState state(location, OpTy::getOperationName());
  state.addOperands(operands);
  state.addAttributes(attributes);
  mlir::DictionaryAttr dict = state.attributes.getDictionary(&context_);
  auto &properties = state.getOrAddProperties<typename OpTy::Properties>();
  // Attributes left out take their declared defaults, as the parser gives
  // them: type inference reads them.
  OpTy::populateDefaultProperties(state.name, properties);
  check(OpTy::setPropertiesFromAttr(properties, dict,
                                    [&] { return mlir::emitError(location); }),
        OpTy::getOperationName(), capture.text());
  llvm::SmallVector<mlir::Type> types(resultTypes.begin(), resultTypes.end());
  if constexpr (OpTy::template hasTrait<mlir::InferTypeOpInterface::Trait>()) {
    if (types.empty())
      check(OpTy::inferReturnTypes(&context_, location, state.operands, dict,
                                   state.getRawProperties(), state.regions,
                                   types),
            OpTy::getOperationName(), capture.text());
  }
  state.addTypes(types);
  mlir::Operation *op = builder_.create(state);
  if (mlir::failed(mlir::verify(op))) {
    std::string text = capture.text();
    op->erase();
    check(mlir::failure(), OpTy::getOperationName(), text);
  }
  return op;
}

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_GRAPH_H
