//===- Single.cpp - the transport of single-process executables -----------===//
//
// Linked into executables compiled without a mesh instead of libanvil_mpi,
// so that they do not depend on MPI.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Dist.h"

namespace anvil::rt {

Expected<std::unique_ptr<Communicator>>
makeWorldCommunicator(const WorldInfo &world) {
  if (world.size == 1)
    return makeSelfCommunicator();
  return Status::error(
      ErrorCode::InvalidArgument,
      "this executable runs as one process (it was compiled without "
      "anvil-compile --mesh), but " +
          world.launcher + " started " + std::to_string(world.size) + " ranks");
}

} // namespace anvil::rt
