# lit configuration for Anvil's FileCheck and -verify-diagnostics tests.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Anvil"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.anvil_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "Inputs", "gpt_numpy.py", "ops_numpy.py", "llama_numpy.py"]

llvm_config.use_default_substitutions()
# `REQUIRES: cuda` marks tests that need the CUDA toolkit (not a GPU).
if config.anvil_enable_cuda:
    config.available_features.add("cuda")
    # `REQUIRES: ptxas-sm_100`: the toolkit's ptxas assembles for that
    # architecture (its --help lists the --gpu-name values it takes).
    import re
    import subprocess
    try:
        ptxas_help = subprocess.run(
            [os.path.join(config.anvil_cuda_bin_dir, "ptxas"), "--help"],
            capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        ptxas_help = ""
    for arch in sorted(set(re.findall(r"'(sm_[0-9]+)'", ptxas_help))):
        config.available_features.add("ptxas-" + arch)
# FileCheck variables bound in one CHECK-LABEL block do not leak into the next.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"

# FileCheck, not, count, mlir-opt and mlir-runner come from LLVM 22
# (Debian's /usr/bin may hold another version's), anvil-opt from this build.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["FileCheck", "not", "count", "mlir-opt", "mlir-runner"],
    [config.llvm_tools_dir])
llvm_config.add_tool_substitutions(
    ["anvil-opt", "anvil-compile", "anvil-interp", "anvil-plan", "anvil-make-shard", "anvil-inspect",
     "anvil-run"],
    [config.anvil_tools_dir, config.llvm_tools_dir])
config.substitutions.append(("%anvil_src_root", config.anvil_src_root))
config.substitutions.append(("%anvil_tools_dir", config.anvil_tools_dir))
# The example plugin (examples/pass-plugin), built with the tools.
config.substitutions.append(("%example_plugin", config.anvil_example_plugin))
# The Python that scripts/setup.sh installed NumPy into: the first python3 on
# PATH (lit itself may run under another one).
import shutil
config.substitutions.append(("%numpy_python", shutil.which("python3") or "python3"))

# Tests of --mesh executables need MPI (the runtime builds without it).
if config.anvil_have_mpi:
    config.available_features.add("mpi")
