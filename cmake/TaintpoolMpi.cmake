# The MPI communicator's build switch (collective/mpi_communicator.hpp).
#
#   TAINTPOOL_MPI=AUTO  build taintpool::mpi when CMake finds MPI for C++ (Open
#                       MPI from Debian: libopenmpi-dev), else skip it with a
#                       message — everything else builds without it;
#   TAINTPOOL_MPI=ON    the same, but a missing MPI is a configure error;
#   TAINTPOOL_MPI=OFF   never look.
#
# Sets TAINTPOOL_MPI_ENABLED and, for the tests, TAINTPOOL_MPIEXEC (the
# launcher, usually mpirun). Only MPI's C API is called (the C++ bindings are
# kept out by taintpool::mpi's compile definitions); the CXX component is what
# FindMPI offers a C++-only project, here and in consumers' find_package.

set(TAINTPOOL_MPI AUTO CACHE STRING "Build the MPI communicator taintpool::mpi: AUTO (if MPI is found), ON (required) or OFF")
set_property(CACHE TAINTPOOL_MPI PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${TAINTPOOL_MPI}" _taintpool_mpi_mode)
set(TAINTPOOL_MPI_ENABLED OFF)

if(NOT _taintpool_mpi_mode STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(TAINTPOOL_MPI_ENABLED ON)
    set(TAINTPOOL_MPIEXEC "${MPIEXEC_EXECUTABLE}")
    message(STATUS "taintpool: MPI communicator enabled (MPI ${MPI_CXX_VERSION}, ${MPIEXEC_EXECUTABLE})")
  elseif(_taintpool_mpi_mode STREQUAL "ON")
    message(FATAL_ERROR "TAINTPOOL_MPI=ON but no MPI was found: install an MPI (Debian: libopenmpi-dev openmpi-bin)")
  else()
    message(STATUS "taintpool: no MPI found; the MPI communicator is not built (TAINTPOOL_MPI=AUTO)")
  endif()
endif()
