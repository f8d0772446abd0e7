# Sanitizer and fuzzing builds (tools/quickstart.sh fuzz). Included by the top-level
# CMakeLists.txt; does nothing unless MSCCL_SANITIZE or MSCCL_FUZZ is ON.
#   MSCCL_SANITIZE=ON: every C/C++ target is built with AddressSanitizer (leaks included) and
#     UndefinedBehaviorSanitizer, and any UB report aborts (-fno-sanitize-recover), so a test that
#     hits UB fails. The CUDA executor is not built (nvcc takes no host sanitizer flags).
#   MSCCL_FUZZ=ON: implies MSCCL_SANITIZE; needs clang (libFuzzer, Debian's libclang-rt-14-dev).
#     Every target is also instrumented for coverage (-fsanitize=fuzzer-no-link) and fuzz/
#     builds the libFuzzer targets.
# vptr checking is left out: the prebuilt ANTLR runtime and LLVM Support are not instrumented
# (and LLVM has no RTTI), which gives false reports.
if(NOT MSCCL_SANITIZE AND NOT MSCCL_FUZZ)
  return()
endif()
if(MSCCL_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "MSCCL_FUZZ needs clang (libFuzzer): configure with "
                      "-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14")
endif()
if(MSCCL_ENABLE_CUDA)
  message(STATUS "msccl: sanitizer build, CUDA executor disabled")
  set(MSCCL_ENABLE_CUDA OFF CACHE BOOL "Build the CUDA executor when a CUDA toolkit is found" FORCE)
endif()
set(msccl_sanitize_flags -fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=all
    -fno-omit-frame-pointer)
if(MSCCL_FUZZ)
  list(APPEND msccl_sanitize_flags -fsanitize=fuzzer-no-link)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${msccl_sanitize_flags}>")
add_link_options(-fsanitize=address,undefined)
