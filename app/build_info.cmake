# Writes build_info.cpp (see build_info.h) from build_info.cpp.in; run at every build by the target
# ls_build_info (app/CMakeLists.txt), and by tests/app/build_info_test.cpp on scratch folders:
#   cmake -DSOURCE_DIR=<checkout> -DOUTPUT=<file> -DVERSION=0.1.0 -DBUILD_TYPE=Release -P build_info.cmake
# The commit is `git rev-parse --short HEAD` of SOURCE_DIR, with "-dirty" when a tracked file differs from it
# (untracked files do not count, as with `git describe --dirty`); "unknown" without git, or when SOURCE_DIR is
# not the top of a git checkout (a source tarball unpacked inside some other repository must not borrow its
# commit). configure_file leaves OUTPUT untouched when its text is unchanged, so nothing recompiles then.
foreach(var SOURCE_DIR OUTPUT VERSION BUILD_TYPE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build_info.cmake: -D${var}=... is missing")
  endif()
endforeach()

set(LS_VERSION ${VERSION})
set(LS_BUILD_TYPE ${BUILD_TYPE})
set(LS_COMMIT unknown)
find_package(Git QUIET)
if(GIT_FOUND)
  # safe.directory: a checkout owned by another user (CI as root) is still read, never written.
  set(git ${GIT_EXECUTABLE} -c safe.directory=* -C ${SOURCE_DIR})
  execute_process(COMMAND ${git} rev-parse --show-toplevel RESULT_VARIABLE rc OUTPUT_VARIABLE top
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0)
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${SOURCE_DIR}" source)
  endif()
  if(rc EQUAL 0 AND top STREQUAL source)
    execute_process(COMMAND ${git} rev-parse --short HEAD RESULT_VARIABLE rc OUTPUT_VARIABLE hash
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND ${git} status --porcelain --untracked-files=no RESULT_VARIABLE status_rc
                    OUTPUT_VARIABLE changes ERROR_QUIET)
    if(rc EQUAL 0 AND status_rc EQUAL 0 AND hash MATCHES "^[0-9a-f]+$")
      set(LS_COMMIT ${hash})
      if(NOT changes STREQUAL "")
        string(APPEND LS_COMMIT -dirty)
      endif()
    endif()
  endif()
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/build_info.cpp.in ${OUTPUT} @ONLY)
