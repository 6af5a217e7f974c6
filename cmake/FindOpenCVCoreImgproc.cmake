# FindOpenCVCoreImgproc: OpenCV core + imgproc from Debian's
# libopencv-core-dev / libopencv-imgproc-dev. Those packages carry headers and
# libraries but no CMake config and no .pc file (libopencv-dev has both, but
# pulls ~100 more packages: Qt, VTK, MPI), so they are found here by hand.
# Defines the imported target OpenCV::core_imgproc.
find_path(OpenCVCoreImgproc_INCLUDE_DIR opencv2/core.hpp PATH_SUFFIXES opencv4)
find_library(OpenCVCoreImgproc_CORE_LIBRARY opencv_core)
find_library(OpenCVCoreImgproc_IMGPROC_LIBRARY opencv_imgproc)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenCVCoreImgproc REQUIRED_VARS
  OpenCVCoreImgproc_INCLUDE_DIR OpenCVCoreImgproc_CORE_LIBRARY OpenCVCoreImgproc_IMGPROC_LIBRARY)
if(OpenCVCoreImgproc_FOUND AND NOT TARGET OpenCV::core_imgproc)
  add_library(OpenCV::core_imgproc INTERFACE IMPORTED)
  set_target_properties(OpenCV::core_imgproc PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${OpenCVCoreImgproc_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${OpenCVCoreImgproc_IMGPROC_LIBRARY};${OpenCVCoreImgproc_CORE_LIBRARY}")
endif()
