# Cross toolchain for 64-bit Arm Linux (glibc): Debian's g++-aarch64-linux-gnu, with the
# target's libraries from Debian arm64 multiarch packages (/usr/lib/aarch64-linux-gnu,
# headers shared in /usr/include). Used by scripts/build-llama.sh and the edgeprobe build:
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake ...
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The compiler's own runtime (libstdc++, libgomp, the loader) lives here.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
# Programs run on the build machine; libraries and packages come from the target's
# multiarch directories, which CMake searches through CMAKE_LIBRARY_ARCHITECTURE.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config (hwloc) must read the arm64 .pc files, never the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Tests built for the target run through qemu-user when it is there.
find_program(EDGEPROBE_QEMU_AARCH64 qemu-aarch64)
if(EDGEPROBE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${EDGEPROBE_QEMU_AARCH64};-L;/usr/aarch64-linux-gnu")
endif()
