//===- DynamicLibrary.h - a library opened at run time --------------------===//
//
// NCCL and cuDNN are opened when first needed (dlopen), so a CUDA
// executable starts where they are missing and says so when a step needs
// one. Private to runtime/src/cuda.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_CUDA_DYNAMICLIBRARY_H
#define ANVIL_RUNTIME_CUDA_DYNAMICLIBRARY_H

#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <type_traits>

namespace anvil::rt::cuda {

/// The first of several paths dlopen finds, and its entry points.
class DynamicLibrary {
public:
  /// Opens the first of `paths` (RTLD_NOW | RTLD_LOCAL); without one,
  /// isOpen() is false and tried() holds what dlopen said for each.
  explicit DynamicLibrary(std::initializer_list<const char *> paths) {
    for (const char *path : paths) {
      if ((handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        return;
      errors += std::string(errors.empty() ? "" : "; ") + dlerror();
    }
  }
  bool isOpen() const { return handle != nullptr; }
  /// dlopen's handle (never closed).
  void *native() const { return handle; }
  const std::string &tried() const { return errors; }

  /// Sets `fn` to the entry point `name`; a missing one is listed by
  /// missing().
  template <typename Fn> void get(Fn &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<Fn>>(dlsym(handle, name));
    if (!fn)
      absent += (absent.empty() ? "" : ", ") + std::string(name);
  }
  /// The entry points get() did not find, comma-separated ("" when none).
  const std::string &missing() const { return absent; }

private:
  void *handle = nullptr;
  std::string errors, absent;
};

} // namespace anvil::rt::cuda

#endif // ANVIL_RUNTIME_CUDA_DYNAMICLIBRARY_H
