# Every dependency comes from a Debian 12 package (DESIGN.md section 8);
# scripts/install-deps installs them.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(Boost 1.74 REQUIRED)

find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
add_library(tf_cli11 INTERFACE)
target_include_directories(tf_cli11 SYSTEM INTERFACE ${CLI11_INCLUDE_DIR})

# CAF 0.17 ships no CMake config on Debian.
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
add_library(tf_caf INTERFACE)
target_include_directories(tf_caf SYSTEM INTERFACE ${CAF_INCLUDE_DIR})
target_link_libraries(tf_caf INTERFACE ${CAF_CORE_LIBRARY} ${CAF_IO_LIBRARY} Threads::Threads)

find_library(PCRE2_LIBRARY pcre2-8 REQUIRED)
find_path(PCRE2_INCLUDE_DIR pcre2.h REQUIRED)
add_library(tf_pcre2 INTERFACE)
target_include_directories(tf_pcre2 SYSTEM INTERFACE ${PCRE2_INCLUDE_DIR})
target_link_libraries(tf_pcre2 INTERFACE ${PCRE2_LIBRARY})
target_compile_definitions(tf_pcre2 INTERFACE PCRE2_CODE_UNIT_WIDTH=8)

find_library(UTF8PROC_LIBRARY utf8proc REQUIRED)
find_path(UTF8PROC_INCLUDE_DIR utf8proc.h REQUIRED)
add_library(tf_utf8proc INTERFACE)
target_include_directories(tf_utf8proc SYSTEM INTERFACE ${UTF8PROC_INCLUDE_DIR})
target_link_libraries(tf_utf8proc INTERFACE ${UTF8PROC_LIBRARY})

find_library(XXHASH_LIBRARY xxhash REQUIRED)
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
add_library(tf_xxhash INTERFACE)
target_include_directories(tf_xxhash SYSTEM INTERFACE ${XXHASH_INCLUDE_DIR})
target_link_libraries(tf_xxhash INTERFACE ${XXHASH_LIBRARY})

if(TF_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(TF_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
