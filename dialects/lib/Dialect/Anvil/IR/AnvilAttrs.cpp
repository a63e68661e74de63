//===- AnvilAttrs.cpp - parameter, input and initializer attributes -------===//
//
// `#anvil.init` has a hand-written syntax, `kind(key = value, ...)`, so that
// initializers read like the calls they stand for; its verifier knows which
// arguments each kind takes, which it needs, and their valid ranges.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::anvil;

#define GET_ATTRDEF_CLASSES
#include "anvil/Dialect/Anvil/IR/AnvilAttrs.cpp.inc"

void AnvilDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "anvil/Dialect/Anvil/IR/AnvilAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// InitializerAttr
//===----------------------------------------------------------------------===//

std::string mlir::anvil::formatDouble(double value) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".ein") == std::string::npos)
    s += ".0";
  else if (s.find('.') == std::string::npos && s.find('e') != std::string::npos)
    s.insert(s.find('e'), ".0");
  return s;
}

namespace {
/// The arguments an initializer kind takes, and which of them it needs.
struct InitSignature {
  ArrayRef<StringLiteral> allowed;
  ArrayRef<StringLiteral> required;
};

InitSignature getSignature(InitKind kind) {
  static constexpr StringLiteral kValue[] = {"value"};
  static constexpr StringLiteral kNormal[] = {"mean", "std"};
  static constexpr StringLiteral kStd[] = {"std"};
  static constexpr StringLiteral kTrunc[] = {"lower", "mean", "std", "upper"};
  static constexpr StringLiteral kUniform[] = {"high", "low"};
  static constexpr StringLiteral kGain[] = {"gain"};
  static constexpr StringLiteral kKaiming[] = {"gain", "mode"};
  switch (kind) {
  case InitKind::zeros:
  case InitKind::ones:
    return {};
  case InitKind::constant:
    return {kValue, kValue};
  case InitKind::normal:
    return {kNormal, kStd};
  case InitKind::truncated_normal:
    return {kTrunc, kStd};
  case InitKind::uniform:
    return {kUniform, kUniform};
  case InitKind::xavier_uniform:
  case InitKind::xavier_normal:
    return {kGain, {}};
  case InitKind::kaiming_uniform:
  case InitKind::kaiming_normal:
    return {kKaiming, {}};
  }
  llvm_unreachable("unknown initializer kind");
}

} // namespace

Attribute InitializerAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc, "unknown initializer '")
        << keyword
        << "'; expected zeros, ones, constant, normal, truncated_normal, "
           "uniform, xavier_uniform, xavier_normal, kaiming_uniform or "
           "kaiming_normal";
    return {};
  }
  NamedAttrList args;
  if (succeeded(parser.parseOptionalLParen())) {
    auto parseArg = [&]() -> ParseResult {
      SMLoc keyLoc = parser.getCurrentLocation();
      StringRef key;
      if (parser.parseKeyword(&key) || parser.parseEqual())
        return failure();
      if (args.get(key))
        return parser.emitError(keyLoc, "initializer argument '")
               << key << "' is given twice";
      if (key == "mode") {
        StringRef mode;
        if (parser.parseKeyword(&mode))
          return failure();
        args.append(key, StringAttr::get(ctx, mode));
        return success();
      }
      double value;
      if (parser.parseFloat(value))
        return failure();
      args.append(key, FloatAttr::get(Float64Type::get(ctx), value));
      return success();
    };
    if (parser.parseCommaSeparatedList(parseArg) || parser.parseRParen())
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<InitializerAttr>(loc, ctx, *kind,
                                            args.getDictionary(ctx));
}

void InitializerAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind());
  if (!getArgs().empty()) {
    printer << "(";
    llvm::interleaveComma(getArgs(), printer, [&](NamedAttribute arg) {
      printer << arg.getName().getValue() << " = ";
      if (auto f = dyn_cast<FloatAttr>(arg.getValue()))
        printer << formatDouble(f.getValueAsDouble());
      else
        printer << cast<StringAttr>(arg.getValue()).getValue();
    });
    printer << ")";
  }
  printer << ">";
}

LogicalResult
InitializerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        InitKind kind, DictionaryAttr args) {
  InitSignature sig = getSignature(kind);
  StringRef kindName = stringifyInitKind(kind);
  for (NamedAttribute arg : args) {
    StringRef key = arg.getName().getValue();
    if (!llvm::is_contained(sig.allowed, key)) {
      auto diag = emitError() << "initializer '" << kindName
                              << "' takes no argument '" << key << "'";
      if (sig.allowed.empty())
        diag << " (it takes none)";
      else
        diag << "; it takes " << llvm::join(sig.allowed, ", ");
      return diag;
    }
    bool isMode = key == "mode";
    if (isMode) {
      auto mode = dyn_cast<StringAttr>(arg.getValue());
      if (!mode ||
          (mode.getValue() != "fan_in" && mode.getValue() != "fan_out"))
        return emitError() << "initializer '" << kindName
                           << "': mode must be fan_in or fan_out";
    } else if (auto f = dyn_cast<FloatAttr>(arg.getValue())) {
      if (!std::isfinite(f.getValueAsDouble()))
        return emitError() << "initializer '" << kindName << "': argument '"
                           << key << "' must be finite";
    } else {
      return emitError() << "initializer '" << kindName << "': argument '"
                         << key << "' must be a number";
    }
  }
  for (StringLiteral key : sig.required)
    if (!args.get(key))
      return emitError() << "initializer '" << kindName
                         << "' needs the argument '" << key << "'";

  auto get = [&](StringRef key, double dflt) {
    auto f = args.getAs<FloatAttr>(key);
    return f ? f.getValueAsDouble() : dflt;
  };
  if (args.get("std") && !(get("std", 0) > 0))
    return emitError() << "initializer '" << kindName
                       << "': std must be positive, got "
                       << formatDouble(get("std", 0));
  if (args.get("gain") && !(get("gain", 0) > 0))
    return emitError() << "initializer '" << kindName
                       << "': gain must be positive, got "
                       << formatDouble(get("gain", 0));
  if (kind == InitKind::uniform && !(get("low", 0) < get("high", 0)))
    return emitError() << "initializer 'uniform': low ("
                       << formatDouble(get("low", 0))
                       << ") must be below high ("
                       << formatDouble(get("high", 0)) << ")";
  if (kind == InitKind::truncated_normal &&
      !(get("lower", -2) < get("upper", 2)))
    return emitError() << "initializer 'truncated_normal': lower ("
                       << formatDouble(get("lower", -2))
                       << ") must be below upper ("
                       << formatDouble(get("upper", 2)) << ")";
  return success();
}

double InitializerAttr::getArg(StringRef name, double defaultValue) const {
  auto f = getArgs().getAs<FloatAttr>(name);
  return f ? f.getValueAsDouble() : defaultValue;
}

bool InitializerAttr::usesFanOut() const {
  auto mode = getArgs().getAs<StringAttr>("mode");
  return mode && mode.getValue() == "fan_out";
}

//===----------------------------------------------------------------------===//
// ParamAttr, InputAttr
//===----------------------------------------------------------------------===//

LogicalResult ParamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringRef name, InitializerAttr init,
                                bool trainable, bool buffer) {
  if (name.empty())
    return emitError() << "parameter name must not be empty";
  if (!init)
    return emitError() << "parameter '" << name << "' needs an initializer";
  if (buffer && trainable)
    return emitError() << "buffer '" << name
                       << "' must not be trainable (trainable = false)";
  return success();
}

LogicalResult InputAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringRef name, std::optional<int64_t> range) {
  if (name.empty())
    return emitError() << "input name must not be empty";
  if (range && *range < 1)
    return emitError() << "input '" << name << "' has range " << *range
                       << "; a range holds at least one value";
  return success();
}
