# `cmake --install BUILD [--prefix P]` puts into P:
#   bin/                   mscclc, msccl-run, plan-diff, plan-convert (and the other tools)
#   include/msccl/         the public headers of the runtime and of the compiler
#   lib/                   the libraries (static; libmsccl.so shared)
#   lib/cmake/msccl/       the CMake package: find_package(msccl) -> msccl:: targets
#   share/msccl/stdlib/    the standard library (an installed mscclc finds it relative to itself)
#   share/msccl/topologies/ the performance model's topologies (msccl-run --backend sim --topology)
#   share/doc/msccl/       README and docs/
include(CMakePackageConfigHelpers)

set(MSCCL_INSTALL_STDLIB "${CMAKE_INSTALL_DATADIR}/msccl/stdlib")
set(MSCCL_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/msccl")

# Exported libraries and their msccl:: names.
set(_msccl_exported
  msccl_plan:plan msccl_runtime:runtime msccl_verify:verify msccl_cpu:cpu msccl_sim:sim msccl_cuda_lower:cuda_lower
  msccl_diag:diag msccl_frontend:frontend msccl_ir:ir msccl_passes:passes msccl_backend:backend msccl_legacy:legacy
  msccl_elab:elab msccl_driver:compiler msccl_lsp:lsp
  # libmsccl.so: the C++ and C APIs (msccl/msccl.hpp, msccl/msccl.h)
  msccl_api:msccl
  # interface targets the libraries link (LLVM Support; warning flags, link-only)
  msccl_llvm:llvm msccl_warnings:warnings msccl_version:version)
if(TARGET msccl_cuda)
  list(APPEND _msccl_exported msccl_cuda:cuda)
endif()
if(TARGET msccl_nccl) # libmsccl_nccl.so: NCCL's API over plans (LD_PRELOAD, or linked as -lnccl)
  list(APPEND _msccl_exported msccl_nccl:nccl)
endif()
set(_msccl_targets)
foreach(pair IN LISTS _msccl_exported)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 target)
  list(GET pair 1 name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  add_library(msccl::${name} ALIAS ${target})
  list(APPEND _msccl_targets ${target})
endforeach()

install(TARGETS ${_msccl_targets} EXPORT mscclTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT mscclTargets NAMESPACE msccl:: DESTINATION ${MSCCL_INSTALL_CMAKEDIR})

set(_msccl_tools mscclc msccl-run msccl-synth msccl-tune plan-diff plan-convert msccl-lsp msccl-verify msccl-bench-cpu msccl-bench-cuda)
foreach(tool IN LISTS _msccl_tools)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

install(DIRECTORY runtime/include/ compiler/include/ api/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/msccl/Version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/msccl)
install(DIRECTORY stdlib/ DESTINATION ${MSCCL_INSTALL_STDLIB})
install(DIRECTORY share/topologies/ DESTINATION ${CMAKE_INSTALL_DATADIR}/msccl/topologies)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})

configure_package_config_file(cmake/mscclConfig.cmake.in "${PROJECT_BINARY_DIR}/mscclConfig.cmake"
  INSTALL_DESTINATION ${MSCCL_INSTALL_CMAKEDIR}
  PATH_VARS MSCCL_INSTALL_STDLIB CMAKE_INSTALL_BINDIR)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/mscclConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/mscclConfig.cmake" "${PROJECT_BINARY_DIR}/mscclConfigVersion.cmake"
  DESTINATION ${MSCCL_INSTALL_CMAKEDIR})
