# The MPI communicator's build switch (collective/mpi_communicator.hpp).
#
#   TAINTPOOL_MPI=AUTO  build taintpool::mpi when CMake finds MPI for C (Open MPI
#                       from Debian: libopenmpi-dev), else skip it with a
#                       message — everything else builds without it;
#   TAINTPOOL_MPI=ON    the same, but a missing MPI is a configure error;
#   TAINTPOOL_MPI=OFF   never look.
#
# Sets TAINTPOOL_MPI_ENABLED and, for the tests, TAINTPOOL_MPIEXEC (the
# launcher, usually mpirun). Only the C API is used (no MPI C++ bindings).

set(TAINTPOOL_MPI AUTO CACHE STRING "Build the MPI communicator taintpool::mpi: AUTO (if MPI is found), ON (required) or OFF")
set_property(CACHE TAINTPOOL_MPI PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${TAINTPOOL_MPI}" _taintpool_mpi_mode)
set(TAINTPOOL_MPI_ENABLED OFF)

if(NOT _taintpool_mpi_mode STREQUAL "OFF")
  enable_language(C) # FindMPI's C component compiles a C test program.
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    set(TAINTPOOL_MPI_ENABLED ON)
    set(TAINTPOOL_MPIEXEC "${MPIEXEC_EXECUTABLE}")
    message(STATUS "taintpool: MPI communicator enabled (MPI ${MPI_C_VERSION}, ${MPIEXEC_EXECUTABLE})")
  elseif(_taintpool_mpi_mode STREQUAL "ON")
    message(FATAL_ERROR "TAINTPOOL_MPI=ON but no MPI was found: install an MPI (Debian: libopenmpi-dev openmpi-bin)")
  else()
    message(STATUS "taintpool: no MPI found; the MPI communicator is not built (TAINTPOOL_MPI=AUTO)")
  endif()
endif()
