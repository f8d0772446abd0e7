# lit configuration of the mscclc output tests. Substitutions:
#   %mscclc   the compiler (%msccl-run, %msccl-verify: the tools)      %shared  ../shared (reference material; tests needing it are
#   %stdlib   the source stdlib            marked `REQUIRES: shared`)
import os
import lit.formats

config.name = "mscclc"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".msccl", ".test"]
config.excludes = ["Inputs"]

config.environment["PATH"] = os.pathsep.join(
    [os.path.dirname(config.mscclc), config.llvm_tools_dir, os.path.dirname(config.filecheck),
     config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment.pop("MSCCL_STDLIB_PATH", None)

config.substitutions.append(("%mscclc", config.mscclc))
config.substitutions.append(("%msccl-run", config.msccl_run))
config.substitutions.append(("%msccl-verify", config.msccl_verify))
config.substitutions.append(("%shared", config.shared_dir))
config.substitutions.append(("%stdlib", os.path.join(config.source_root, "stdlib")))
config.substitutions.append(("%{srcroot}", config.source_root))

if os.path.isdir(config.shared_dir):
    config.available_features.add("shared")
# The ASan+UBSan build: tests that limit the address space (ulimit -v) cannot run under ASan.
if getattr(config, "sanitizers", "").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("sanitizers")
