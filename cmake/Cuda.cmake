# CUDA is optional at configure time: with nvcc the gpu/ backend is compiled,
# without it the CPU backend alone is built (DESIGN.md section 8).
set(TF_HAVE_CUDA OFF)
if(NOT TF_CUDA STREQUAL "off")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # H200 (sm_90); override on the command line
    endif()
    # CMake 3.25 knows no C++20 dialect flag for nvcc; gpu/ code is C++17.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(TF_HAVE_CUDA ON)
  elseif(TF_CUDA STREQUAL "on")
    message(FATAL_ERROR "TF_CUDA=on but no CUDA compiler (nvcc) was found")
  endif()
endif()
message(STATUS "tensorfold: CUDA backend ${TF_HAVE_CUDA}")
