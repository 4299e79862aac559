# Warnings and sanitizers, applied to every target of this project through
# tf_apply_defaults(); third-party headers come in as SYSTEM includes.
set(TF_WARNING_FLAGS -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
if(TF_WERROR)
  list(APPEND TF_WARNING_FLAGS -Werror)
endif()

set(TF_SANITIZE_FLAGS "")
if(TF_SANITIZE)
  set(TF_SANITIZE_FLAGS -fsanitize=${TF_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${TF_SANITIZE})
endif()

function(tf_apply_defaults target)
  get_target_property(kind ${target} TYPE)
  if(kind STREQUAL "INTERFACE_LIBRARY")
    return()
  endif()
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${TF_WARNING_FLAGS} ${TF_SANITIZE_FLAGS}>)
endfunction()

# tf_library(NAME SOURCES... [DEPS ...]): one static library per folder.
# A folder whose sources have not landed yet is an INTERFACE library so that
# the dependency graph of DESIGN.md section 2 exists from the start.
function(tf_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  if(ARG_SOURCES)
    add_library(${name} STATIC ${ARG_SOURCES})
    target_include_directories(${name} PUBLIC ${CMAKE_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
    tf_apply_defaults(${name})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${CMAKE_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()
