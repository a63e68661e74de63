//===- Graph.cpp - building anvil-dialect forward graphs from C++ ---------===//
//
// The function under construction grows one block argument per parameter
// or input: parameters first, then inputs (the forward-graph contract), each
// in creation order. Names are unique across both. Op creation lives in the
// header (Graph::create); this file holds the bookkeeping around it.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

int64_t Tensor::dim(int64_t i) const {
  int64_t r = rank();
  int64_t index = i < 0 ? i + r : i;
  if (index < 0 || index >= r)
    graph_->fail("dimension " + llvm::Twine(i) +
                 " is out of range for a rank-" + llvm::Twine(r) + " tensor");
  return shape()[index];
}

detail::DiagnosticCapture::DiagnosticCapture(MLIRContext &context)
    : handler_(&context, [this](Diagnostic &diag) {
        if (!text_.empty())
          text_ += "\n";
        text_ += diag.str();
        for (const Diagnostic &note : diag.getNotes())
          text_ += "\n  note: " + note.str();
        return success();
      }) {}

Graph::Graph(MLIRContext &context, StringRef name)
    : context_(context), builder_(&context) {
  context_.loadDialect<ad::AnvilDialect, func::FuncDialect>();
  module_ = ModuleOp::create(builder_.getUnknownLoc());
  builder_.setInsertionPointToEnd(module_->getBody());
  func_ = func::FuncOp::create(builder_, builder_.getUnknownLoc(), name,
                               builder_.getFunctionType({}, {}));
  builder_.setInsertionPointToEnd(func_.addEntryBlock());
}

Graph::Scope::Scope(Graph &graph, StringRef name) : graph_(graph) {
  graph_.path_.push_back(graph_.qualify(name));
}

Graph::Scope::Scope(Graph &graph, Absolute, StringRef path) : graph_(graph) {
  graph_.path_.push_back(path.str());
}

Graph::Scope::~Scope() { graph_.path_.pop_back(); }

std::string Graph::qualify(StringRef name) const {
  if (path().empty())
    return name.str();
  if (name.empty())
    return path();
  return path() + "." + name.str();
}

Location Graph::loc() {
  if (path().empty())
    return builder_.getUnknownLoc();
  return NameLoc::get(builder_.getStringAttr(path()));
}

void Graph::fail(const llvm::Twine &message) const {
  std::string where = path().empty() ? std::string("<top>") : path();
  throw BuildError(where + ": " + message.str());
}

void Graph::check(LogicalResult result, StringRef what,
                  const std::string &diagnostics) const {
  if (succeeded(result))
    return;
  fail(diagnostics.empty() ? ("'" + what + "' could not be built").str()
                           : diagnostics);
}

Value Graph::addArgument(Type type, NamedAttribute attr) {
  Block &entry = func_.getBody().front();
  bool isParam = attr.getName() == ad::AnvilDialect::kParamAttrName;
  // Parameters and buffers go before the inputs, in creation order; inputs
  // at the end.
  unsigned index = isParam ? paramArgs_++ : entry.getNumArguments();
  Value arg = entry.insertArgument(index, type, loc());
  argAttrs_.insert(argAttrs_.begin() + index,
                   DictionaryAttr::get(&context_, {attr}));
  return arg;
}

Tensor Graph::input(StringRef name, ArrayRef<int64_t> shape, Type elementType,
                    std::optional<int64_t> range) {
  for (int64_t d : shape)
    if (d < 0)
      fail("input '" + name + "' has a negative dimension");
  if (!names_.insert(name).second)
    fail("input name '" + name + "' is already used");
  if (range && *range < 1)
    fail("input '" + name + "' has range " + std::to_string(*range) +
         "; a range holds at least one value");
  auto type = RankedTensorType::get(shape, elementType);
  Value arg =
      addArgument(type, attr(ad::AnvilDialect::kInputAttrName,
                             ad::InputAttr::get(&context_, name, range)));
  return Tensor(this, arg);
}

Tensor Graph::parameter(StringRef name, ArrayRef<int64_t> shape,
                        ad::InitializerAttr init,
                        std::optional<bool> trainableOr) {
  return addParameter(name, shape, init,
                      trainableOr.value_or(defaultTrainable_),
                      /*buffer=*/false, Type());
}

Tensor Graph::buffer(StringRef name, ArrayRef<int64_t> shape,
                     ad::InitializerAttr init, Type elementType) {
  return addParameter(name, shape, init, /*trainable=*/false,
                      /*buffer=*/true, elementType);
}

void Graph::update(Tensor buffer, Tensor value) {
  auto arg = dyn_cast_or_null<BlockArgument>(buffer.value());
  auto p =
      arg ? dyn_cast_or_null<ad::ParamAttr>(argAttrs_[arg.getArgNumber()].get(
                ad::AnvilDialect::kParamAttrName))
          : ad::ParamAttr();
  if (!p || !p.getBuffer())
    fail("update: the first operand is not a buffer of this graph");
  if (value.value().getType() != arg.getType()) {
    std::string types;
    llvm::raw_string_ostream os(types);
    os << value.value().getType() << " differs from the buffer's "
       << arg.getType();
    fail("update of buffer '" + p.getName() + "': the new value's type " +
         types);
  }
  for (auto &[b, v] : updates_)
    if (b == arg)
      fail("buffer '" + p.getName() + "' is updated twice");
  updates_.push_back({arg, value.value()});
}

Tensor Graph::addParameter(StringRef name, ArrayRef<int64_t> shape,
                           ad::InitializerAttr init, bool trainable,
                           bool buffer, Type elementType) {
  std::string full = qualify(name);
  if (!names_.insert(full).second)
    fail("parameter name '" + full + "' is already used");
  for (int64_t d : shape)
    if (d < 1)
      fail("parameter '" + full + "' has an empty or negative dimension");
  auto type =
      RankedTensorType::get(shape, elementType ? elementType : floatType());
  Value arg = addArgument(
      type, attr(ad::AnvilDialect::kParamAttrName,
                 ad::ParamAttr::get(&context_, full, init, trainable, buffer)));
  if (!buffer) {
    ++numParams_;
    paramElements_ += type.getNumElements();
  }
  return Tensor(this, arg);
}

ad::InitializerAttr Graph::init(ad::InitKind kind,
                                ArrayRef<std::pair<StringRef, double>> args) {
  NamedAttrList list;
  for (auto [key, value] : args)
    list.append(key, builder_.getF64FloatAttr(value));
  detail::DiagnosticCapture capture(context_);
  auto attr = ad::InitializerAttr::getChecked([&] { return emitError(loc()); },
                                              &context_, kind,
                                              list.getDictionary(&context_));
  if (!attr)
    fail(capture.text());
  return attr;
}

OwningOpRef<ModuleOp> Graph::finish(ArrayRef<Tensor> results) {
  SmallVector<Value> values;
  SmallVector<Type> types;
  for (const Tensor &t : results) {
    values.push_back(t.value());
    types.push_back(t.value().getType());
  }
  // Buffer updates follow the results, each tied to its buffer.
  SmallVector<DictionaryAttr> resultAttrs(values.size(),
                                          builder_.getDictionaryAttr({}));
  for (auto [buffer, value] : updates_) {
    values.push_back(value);
    types.push_back(value.getType());
    resultAttrs.push_back(builder_.getDictionaryAttr(
        attr(ad::AnvilDialect::kTiedAttrName,
             builder_.getI64IntegerAttr(
                 cast<BlockArgument>(buffer).getArgNumber()))));
  }
  func::ReturnOp::create(builder_, builder_.getUnknownLoc(), values);
  Block &entry = func_.getBody().front();
  func_.setFunctionType(
      builder_.getFunctionType(entry.getArgumentTypes(), types));
  func_.setAllArgAttrs(argAttrs_);
  func_.setAllResultAttrs(resultAttrs);
  detail::DiagnosticCapture capture(context_);
  if (failed(verify(*module_)))
    fail("the finished graph does not verify:\n" + capture.text());
  return std::move(module_);
}

} // namespace anvil::frontend
